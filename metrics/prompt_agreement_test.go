package metrics

import (
	"math"
	"testing"
)

// TestPromptAgreement: server counts that are 1.2 × the client's plus a 9-token template give a
// slope of 1.2 and an overhead of 9 (least squares, exact on a line), the per-request ratios and
// the mean difference; requests without usage or a client count are left out; none at all is nil.
func TestPromptAgreement(t *testing.T) {
	var p promptPairs
	for _, c := range []int{100, 200, 400, 1000} {
		p.add(&Record{ClientPromptTokens: Some(c), UsagePromptTokens: Some(int(1.2*float64(c)) + 9)})
	}
	p.add(&Record{ClientPromptTokens: Some(50)})                            // no usage
	p.add(&Record{UsagePromptTokens: Some(50)})                             // no client count (AIPerf's file)
	p.add(&Record{ClientPromptTokens: Some(0), UsagePromptTokens: Some(5)}) // nothing to divide by
	a := p.result()
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if a.Requests != 4 || !near(a.Slope.V, 1.2) || !near(a.Overhead.V, 9) || !near(a.MeanDifference, 0.2*425+9) {
		t.Fatalf("got %+v", a)
	}
	if !near(a.Ratio.Max, 1.29) || !near(a.Ratio.Min, 1.209) {
		t.Fatalf("ratios %+v", a.Ratio)
	}
	if miss, ok := a.Mismatch(); !ok || !near(miss, 0.2) {
		t.Fatalf("mismatch %v %v", miss, ok)
	}
	one := promptPairs{}
	one.add(&Record{ClientPromptTokens: Some(100), UsagePromptTokens: Some(95)})
	if a := one.result(); a.Slope.OK || !near(a.Ratio.Mean, 0.95) {
		t.Fatalf("one request: %+v (no line through one point; the ratio stands)", a)
	}
	if miss, _ := one.result().Mismatch(); !near(miss, 0.05) {
		t.Fatalf("one request's mismatch %v", miss)
	}
	if (&promptPairs{}).result() != nil {
		t.Fatal("no pairs: want nil")
	}
}
