package prober

import (
	"strings"
	"testing"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/search"
)

// TestClientStrain: a client at its CPU's capacity makes a probe invalid; threads waiting for a CPU
// or GC pauses make its timestamps late (strained); a scheduling delay too small against the
// limit counts for nothing; errors that explain the strain excuse it.
func TestClientStrain(t *testing.T) {
	slo := search.SLO{Latency: []metrics.LatencyLimit{{Metric: "ttft", Stat: "p95", LimitMs: 300}}}
	for _, tc := range []struct {
		name       string
		h          metrics.InjectorHealth
		errors     int
		full, late string
		lateMs     float64
	}{
		{"calm", metrics.InjectorHealth{CPUPercent: 40, Cores: 2, SchedLatencyP99Ms: 0.3}, 0, "", "", 0},
		{"CPU full", metrics.InjectorHealth{CPUPercent: 190, Cores: 2}, 0, "the client was the limit, not the server: injector CPU busy: 190 % of 200 %", "", 0},
		{"other processes on the cores", metrics.InjectorHealth{CPUPercent: 40, Cores: 2, RunQueueWaitPercent: metrics.Some(22.0)}, 0, "", "injector threads waited for a CPU: 0.22 threads at a time", 36},
		{"a small scheduling delay", metrics.InjectorHealth{CPUPercent: 40, Cores: 2, SchedLatencyP99Ms: 5}, 0, "", "", 0},
		{"a scheduling delay that matters", metrics.InjectorHealth{CPUPercent: 40, Cores: 2, SchedLatencyP99Ms: 12}, 0, "", "injector scheduler latency p99 12.00 ms", 36},
		{"a long scheduling delay beside waits for a CPU", metrics.InjectorHealth{CPUPercent: 40, Cores: 2, SchedLatencyP99Ms: 20, RunQueueWaitPercent: metrics.Some(22.0)}, 0, "", "injector scheduler latency p99 20.00 ms", 60},
		{"errors explain it", metrics.InjectorHealth{CPUPercent: 190, Cores: 2}, 1000, "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full, late, lateMs := clientStrain(engine.StageResult{Injector: tc.h, Errors: tc.errors, OK: 10}, slo)
			if !strings.HasPrefix(full, tc.full) || tc.full == "" && full != "" || !strings.HasPrefix(late, tc.late) || tc.late == "" && late != "" || lateMs != tc.lateMs {
				t.Errorf("full %q late %q (%g ms), want %q and %q (%g ms)", full, late, lateMs, tc.full, tc.late, tc.lateMs)
			}
		})
	}
}
