package metrics

import "testing"

func f(v float64) *float64 { return &v }

// TestSummarizeServer checks the window, the means and maxima, the counter-delta cache hit rate and
// the histogram quantile against hand-computed values.
func TestSummarizeServer(t *testing.T) {
	b := func(c1, c2 float64) []ServerBucket {
		return []ServerBucket{{LE: 0.1, Count: c1}, {LE: 0.25, Count: c2}}
	}
	samples := []ServerSample{
		{TNs: 5, Engine: "vllm", Running: f(100), TTFTBuckets: b(0, 0)},                                                                                         // before the window
		{TNs: 10, Engine: "vllm", Running: f(2), Waiting: f(0), KVUsage: f(0.2), PrefixHits: f(100), PrefixQueries: f(200), TTFTBuckets: b(5, 5), TTFTCount: 5}, // first in window
		{TNs: 20, Engine: "vllm", Running: f(4), Waiting: f(2), KVUsage: f(0.4), PrefixHits: f(160), PrefixQueries: f(300), TTFTBuckets: b(15, 45), TTFTCount: 45},
		{TNs: 30, Engine: "vllm", Running: f(9)}, // after the window
	}
	s := SummarizeServer(samples, 10, 30)
	if s.Samples != 2 || s.RunningMean.V != 3 || s.RunningMax.V != 4 || s.WaitingMax.V != 2 || s.KVUsageMean.V != 0.30000000000000004 && s.KVUsageMean.V != 0.3 {
		t.Fatalf("%+v", s)
	}
	// Hits 60 of 100 queries in the window.
	if s.CacheHitRate.V != 0.6 {
		t.Fatalf("cache hit %v", s.CacheHitRate)
	}
	// Window increase: 10 observations ≤ 0.1 s, 30 more ≤ 0.25 s, 40 in all. p50 = rank 20: in the
	// (0.1, 0.25] bucket, 10 of its 30 → 0.1 + 10/30 × 0.15 = 0.15 s; p95 = rank 38 → 0.1 + 28/30 × 0.15.
	if d := s.TTFTP50Ms.V - 150; d > 1e-9 || d < -1e-9 {
		t.Fatalf("p50 %v", s.TTFTP50Ms)
	}
	if d := s.TTFTP95Ms.V - 1000*(0.1+28.0/30*0.15); d > 1e-9 || d < -1e-9 {
		t.Fatalf("p95 %v", s.TTFTP95Ms)
	}
	if none := SummarizeServer(samples, 100, 200); none.Samples != 0 || none.Note == "" {
		t.Fatalf("%+v", none)
	}
}
