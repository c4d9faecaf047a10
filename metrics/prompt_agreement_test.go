package metrics

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
	if a.Requests != 4 || !near(a.Slope.V, 1.2) || !near(a.Overhead.V, 9) || !near(a.MeanDifference, 0.2*425+9) || a.PerMessage.OK {
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

// chatTurns are the (client tokens, messages) of a multi-turn chat's requests: a system prompt,
// then user and assistant messages of uneven lengths, so that tokens and messages vary apart.
var chatTurns = [][2]int{{180, 2}, {260, 4}, {301, 6}, {420, 8}, {95, 2}, {170, 4}, {400, 6}, {455, 8}, {610, 10}}

// TestPromptAgreementTemplate fits the chat template out of the server's counts: the counts
// llama.cpp gives for Qwen3 (client + 3 + 5 per message) are slope 1, 5 per message and 3 per
// request, with no mismatch; a tokenizer whose counts are 1.2× the client's, under the same
// template, is a 20 % miss. Where the messages do not vary (single-turn), vary in step with the
// tokens, or were not recorded (older records), the template is one overhead per request, and
// where the client counts do not vary either, the template's allowance keeps the ratio honest.
// Older records show the defect the message count cures: the per-message tokens go into the slope
// (1.13, a false 13 % miss) and the constant goes negative.
func TestPromptAgreementTemplate(t *testing.T) {
	type pair struct{ client, messages, server int }
	template := func(slope float64, perRequest, perMessage int, turns [][2]int) []pair {
		var out []pair
		for _, c := range turns {
			out = append(out, pair{c[0], c[1], int(math.Round(slope*float64(c[0]))) + perRequest + perMessage*c[1]})
		}
		return out
	}
	opt := func(v float64) Opt[float64] { return Some(v) }
	for _, tc := range []struct {
		name  string
		pairs []pair
		// unrecorded: the records carry no message count.
		unrecorded bool
		slope      Opt[float64]
		perRequest Opt[float64]
		perMessage Opt[float64]
		miss       float64
	}{
		{name: "llama.cpp's Qwen3 template", pairs: template(1, 3, 5, chatTurns),
			slope: opt(1), perRequest: opt(3), perMessage: opt(5), miss: 0},
		{name: "another tokenizer", pairs: template(1.2, 3, 5, [][2]int{{100, 2}, {200, 4}, {150, 6}, {500, 8}, {320, 2}, {410, 10}}),
			slope: opt(1.2), perRequest: opt(3), perMessage: opt(5), miss: 0.2},
		{name: "single-turn: two messages each", pairs: template(1, 3, 5, [][2]int{{100, 2}, {200, 2}, {350, 2}}),
			slope: opt(1), perRequest: opt(13), miss: 0},
		{name: "messages in step with the tokens", pairs: template(1, 3, 5, [][2]int{{100, 1}, {200, 2}, {300, 3}}),
			slope: opt(1.05), perRequest: opt(3), miss: 0.05},
		{name: "older records without a message count", pairs: template(1, 3, 5, chatTurns[:4]), unrecorded: true,
			slope: opt(1.126745667579924), perRequest: opt(-8.787930015072902), miss: 0.126745667579924},
		{name: "one prompt length, the template within the allowance", pairs: template(1, 3, 5, [][2]int{{128, 2}, {128, 2}}),
			miss: 0},
		{name: "one prompt length, another tokenizer", pairs: template(1.2, 3, 5, [][2]int{{512, 2}, {512, 2}}),
			miss: (614 + 13 - 512 - 64) / 512.0},
		{name: "one prompt length, the server counts fewer", pairs: []pair{{200, 2, 180}},
			miss: 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p promptPairs
			for _, q := range tc.pairs {
				r := &Record{ClientPromptTokens: Some(q.client), UsagePromptTokens: Some(q.server)}
				if !tc.unrecorded {
					r.ClientPromptMessages = Some(q.messages)
				}
				p.add(r)
			}
			a := p.result()
			approx := cmpopts.EquateApprox(0, 1e-6)
			want := struct{ Slope, PerRequest, PerMessage Opt[float64] }{tc.slope, tc.perRequest, tc.perMessage}
			got := struct{ Slope, PerRequest, PerMessage Opt[float64] }{a.Slope, a.Overhead, a.PerMessage}
			if d := cmp.Diff(want, got, approx); d != "" {
				t.Errorf("fit (-want +got):\n%s", d)
			}
			miss, ok := a.Mismatch()
			if !ok || math.Abs(miss-tc.miss) > 1e-6 {
				t.Errorf("mismatch %v, %v; want %v", miss, ok, tc.miss)
			}
		})
	}
}
