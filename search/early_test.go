package search

import (
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/metrics"
)

// TestEarlyStopStopsOnlyOnCertainty: a probe stops when its failure cannot be undone by the
// requests still to come — a max broken once, a p95 or error rate far over with enough requests
// and a quarter of the window gone — and never on a start-up burst, a mean, too few requests, or a
// share that the rest of the window could still bring under the allowance.
func TestEarlyStopStopsOnlyOnCertainty(t *testing.T) {
	ttftP95 := metrics.LatencyLimit{Metric: metrics.SLOMetricTTFT, Stat: "p95", LimitMs: 100}
	ttftMax := metrics.LatencyLimit{Metric: metrics.SLOMetricTTFT, Stat: metrics.SLOStatMax, LimitMs: 100}
	ttftMean := metrics.LatencyLimit{Metric: metrics.SLOMetricTTFT, Stat: metrics.SLOStatMean, LimitMs: 100}
	ok := func(ttft float64) *metrics.Record {
		return &metrics.Record{BenchmarkPhase: metrics.PhaseProfiling, TTFT: metrics.Some(ttft), RequestLatency: metrics.Some(ttft + 50)}
	}
	failed := &metrics.Record{BenchmarkPhase: metrics.PhaseProfiling, Error: &metrics.RecordError{Type: "x"}}
	warmupSlow := &metrics.Record{BenchmarkPhase: metrics.PhaseWarmup, TTFT: metrics.Some(900.0), RequestLatency: metrics.Some(950.0)}
	type step struct {
		at  time.Duration // since the first request
		rec *metrics.Record
		n   int
	}
	cases := []struct {
		name  string
		slo   SLO
		steps []step
		want  string // "" never stops; else a part of the reason, and it must stop at the last step
	}{
		{"p95 far over after a quarter", SLO{Latency: []metrics.LatencyLimit{ttftP95}},
			[]step{{0, ok(300), 40}, {3 * time.Second, ok(300), 20}}, "ttft p95 cannot be met"},
		{"p95 far over but within the first quarter", SLO{Latency: []metrics.LatencyLimit{ttftP95}},
			[]step{{0, ok(300), 40}, {2 * time.Second, ok(300), 20}}, ""},
		{"p95 over, but the rest of the window could bring it under", SLO{Latency: []metrics.LatencyLimit{ttftP95}},
			[]step{{0, ok(50), 80}, {2500 * time.Millisecond, ok(300), 20}}, ""},
		{"too few requests", SLO{Latency: []metrics.LatencyLimit{ttftP95}},
			[]step{{0, ok(300), 5}, {5 * time.Second, ok(300), 20}}, ""},
		{"a max broken once", SLO{Latency: []metrics.LatencyLimit{ttftMax}},
			[]step{{0, ok(50), 10}, {time.Second, ok(101), 1}}, "ttft max cannot be met"},
		{"a mean never stops", SLO{Latency: []metrics.LatencyLimit{ttftMean}},
			[]step{{0, ok(900), 50}, {8 * time.Second, ok(900), 50}}, ""},
		{"warmup requests do not count", SLO{Latency: []metrics.LatencyLimit{ttftMax}},
			[]step{{0, warmupSlow, 50}, {5 * time.Second, ok(50), 40}}, ""},
		{"errors over the limit", SLO{ErrorRateSet: true, ErrorRateMax: 0.01},
			[]step{{0, failed, 30}, {4 * time.Second, ok(10), 10}}, "the error rate cannot be met"},
		{"an error rate within reach", SLO{ErrorRateSet: true, ErrorRateMax: 0.05},
			[]step{{0, ok(10), 100}, {4 * time.Second, failed, 8}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEarlyStop(tc.slo, 10*time.Second)
			t0 := time.Unix(1000, 0)
			var now time.Time
			e.now = func() time.Time { return now }
			for si, s := range tc.steps {
				for i := range s.n {
					now = t0.Add(s.at)
					why := e.Check(s.rec)
					last := si == len(tc.steps)-1 && i == s.n-1
					switch {
					case why != "" && (tc.want == "" || !last && si < len(tc.steps)-1):
						t.Fatalf("stopped at step %d request %d: %s", si, i, why)
					case last && tc.want != "" && !strings.Contains(why, tc.want):
						t.Fatalf("did not stop with %q at the end: %q", tc.want, why)
					case why != "":
						// The limit that stopped it, as search.json's decided list names it.
						if limit := strings.Split(tc.want, " cannot")[0]; e.Limit() != strings.TrimPrefix(limit, "the ") {
							t.Fatalf("stopped by the limit %q, want %q", e.Limit(), limit)
						}
						return
					}
				}
			}
		})
	}
}
