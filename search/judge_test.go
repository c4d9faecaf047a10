package search

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
)

func TestWilson(t *testing.T) {
	// Reference values: the Wilson score interval at z = 1.96 (e.g. R's prop.test without continuity correction).
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 70, 0, 0.0520},
		{5, 100, 0.0215, 0.1118},
		{50, 100, 0.4038, 0.5962},
		{100, 100, 0.9630, 1},
	} {
		lo, hi := Wilson(tc.k, tc.n)
		if math.Abs(lo-tc.lo) > 5e-4 || math.Abs(hi-tc.hi) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = %.4f–%.4f, want %.4f–%.4f", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

// spread is n values evenly from lo to hi.
func spread(n int, lo, hi float64) [][]float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = lo + (hi-lo)*float64(i)/float64(n-1)
	}
	return metrics.Singletons(xs)
}

func TestJudge(t *testing.T) {
	ttft := func(stat string, limit float64) SLO {
		return SLO{Latency: []metrics.LatencyLimit{{Metric: "ttft", Stat: stat, LimitMs: limit}}}
	}
	errSLO := func(limit float64) SLO { return SLO{ErrorRateMax: limit, ErrorRateSet: true} }
	lat := func(groups [][]float64) Measurement {
		return Measurement{Latency: map[string][][]float64{"ttft": groups}, Requests: len(groups)}
	}
	for _, tc := range []struct {
		name    string
		slo     SLO
		m       Measurement
		verdict Verdict
		reason  string
	}{
		{"p95 surely under", ttft("p95", 30), lat(spread(200, 10, 20)), Pass, "ttft p95 19.5 ms (95% CI"},
		{"p95 surely over", ttft("p95", 15), lat(spread(200, 10, 20)), Fail, "> 15.0 ms"},
		{"p95 on the limit", ttft("p95", 19.5), lat(spread(200, 10, 20)), Undecided, "the interval holds the limit 19.5 ms"},
		{"too few requests", ttft("p95", 19), lat(spread(20, 10, 20)), Undecided, "from 20 requests, fewer than the 30 a decision needs"},
		{"too few requests, but all over the limit", ttft("p95", 2), lat(spread(20, 10, 20)), Fail, "ttft p95: 20 of 20 requests over 2.00 ms (95% CI of the share 83.9%–100% > the 5% a p95 allows)"},
		{"too few requests, none over a p50", ttft("p50", 30), lat(spread(20, 10, 20)), Pass, "0 of 20 requests over 30.0 ms (95% CI of the share 0%–16.1% < the 50% a p50 allows)"},
		{"no request succeeded", ttft("p95", 30), Measurement{Requests: 10, Errors: 10}, Fail, "ttft p95 unknown: no request succeeded"},
		{"mean under", ttft("mean", 16), lat(spread(200, 10, 20)), Pass, "ttft mean 15.0 ms"},
		{"mean on the limit", ttft("mean", 15), lat(spread(200, 10, 20)), Undecided, "holds the limit"},
		{"max over: one request is enough", ttft("max", 19.9), lat(spread(5, 10, 20)), Fail, "ttft max 20.0 ms > 19.9 ms"},
		{"max under", ttft("max", 20), lat(spread(5, 10, 20)), Pass, "ttft max 20.0 ms ≤ 20.0 ms"},
		{"one-token answers meet an ITL limit", SLO{Latency: []metrics.LatencyLimit{{Metric: "itl", Stat: "p95", LimitMs: 5}}}, Measurement{Requests: 50}, Pass, "no answer had two tokens"},
		{"error rate surely under", errSLO(0.05), Measurement{Requests: 2000, Errors: 20}, Pass, "error rate 1% (20 of 2000; 95% CI"},
		{"error rate surely over", errSLO(0.01), Measurement{Requests: 200, Errors: 20}, Fail, "> 1%"},
		{"0 errors in 70 meet 1 %: no evidence against it", errSLO(0.01), Measurement{Requests: 70}, Pass, "error rate 0% (0 of 70; 95% CI 0%–5.2%) ≤ 1%"},
		{"0 errors in 97 meet 1 % (the short probe of a customer's default SLO)", errSLO(0.01), Measurement{Requests: 97}, Pass, "(0 of 97; 95% CI 0%–3.81%) ≤ 1%"},
		{"a rate under the limit is met", errSLO(0.05), Measurement{Requests: 50, Errors: 2}, Pass, "error rate 4% (2 of 50"},
		{"a rate over the limit that the interval still holds is undecided", errSLO(0.01), Measurement{Requests: 100, Errors: 2}, Undecided, "over the limit 1%, but the interval still holds it (more requests would decide it)"},
		{"a rate whose interval lies over the limit fails", errSLO(0.01), Measurement{Requests: 100, Errors: 6}, Fail, "error rate 6% (6 of 100; 95% CI 2.78%–12.5%) > 1%"},
		{"no error allowed, none seen", errSLO(0), Measurement{Requests: 70}, Pass, "error rate 0 (of 70) ≤ 0"},
		{"no error allowed, one seen", errSLO(0), Measurement{Requests: 70, Errors: 1}, Fail, "error rate 1.43% (1 of 70) > 0"},
		{"any broken limit fails, whatever the others", SLO{Latency: []metrics.LatencyLimit{{Metric: "ttft", Stat: "p95", LimitMs: 19.5}}, ErrorRateMax: 0.01, ErrorRateSet: true},
			Measurement{Latency: map[string][][]float64{"ttft": spread(200, 10, 20)}, Requests: 200, Errors: 100}, Fail, "error rate 50%"},
		{"nothing to judge by", SLO{}, Measurement{Requests: 5}, Undecided, "the SLO sets no limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.slo.Judge(tc.m, 1)
			v, reason := j.Verdict, j.Reason
			if v != tc.verdict || !strings.Contains(reason, tc.reason) {
				t.Errorf("%s: %q, want %s containing %q", v, reason, tc.verdict, tc.reason)
			}
		})
	}
}

func TestGrowing(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		q     [4]float64
		floor float64
		want  bool
	}{
		{"a queue that grows every quarter", [4]float64{10, 40, 95, 160}, 30, true},
		{"steady high load", [4]float64{80, 82, 79, 81}, 30, false},
		{"rising but not doubled", [4]float64{100, 110, 120, 130}, 30, false},
		{"doubled but still under the floor", [4]float64{1, 2, 3, 4}, 30, false},
		{"one dip breaks the run", [4]float64{10, 40, 35, 160}, 30, false},
		{"an empty quarter", [4]float64{10, nan, 95, 160}, 30, false},
	} {
		if got := Growing(tc.q, tc.floor); got != tc.want {
			t.Errorf("%s: Growing(%v, %g) = %v", tc.name, tc.q, tc.floor, got)
		}
	}
	q := Quarters([]Point{{At: 0, V: 1}, {At: 24, V: 3}, {At: 25, V: 10}, {At: 99, V: 7}, {At: 100, V: 1000}, {At: -1, V: 1000}}, 0, 100)
	if q[0] != 2 || q[1] != 10 || !math.IsNaN(q[2]) || q[3] != 7 { // [0, 25) [25, 50) [50, 75) [75, 100)
		t.Errorf("Quarters: %v, want [2 10 NaN 7]", q)
	}
	if got := GrowthText([4]float64{10, 40, 95, 160}, " ms"); got != "10 → 40 → 95 → 160 ms" {
		t.Errorf("GrowthText: %q", got)
	}
}

// TestJudgeSaysWhichRuleDecided: every limit of the SLO gets a decision in the probe, naming the
// rule that decided it, so search.json shows why a probe passed or not.
func TestJudgeSaysWhichRuleDecided(t *testing.T) {
	slo := SLO{Latency: []metrics.LatencyLimit{{Metric: "ttft", Stat: "p95", LimitMs: 30}, {Metric: "e2e", Stat: "max", LimitMs: 5}},
		ErrorRateMax: 0.01, ErrorRateSet: true}
	m := Measurement{Latency: map[string][][]float64{"ttft": spread(200, 10, 20), "e2e": spread(200, 1, 4)}, Requests: 200}
	j := slo.Judge(m, 1)
	want := []Decision{
		{Limit: "ttft p95", Outcome: "met", Rule: RuleInterval},
		{Limit: "e2e max", Outcome: "met", Rule: RuleMax},
		{Limit: "error rate", Outcome: "met", Rule: RuleErrorEvidence},
	}
	if j.Verdict != Pass || !slices.Equal(j.Decided, want) {
		t.Errorf("%s %v, want pass %v", j.Verdict, j.Decided, want)
	}
	m.Errors = 30
	if j := slo.Judge(m, 1); j.Verdict != Fail || j.Decided[2] != (Decision{Limit: "error rate", Outcome: "broken", Rule: RuleErrorEvidence}) {
		t.Errorf("30 errors in 200: %s %v", j.Verdict, j.Decided)
	}
}
