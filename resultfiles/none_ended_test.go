package resultfiles

import (
	"testing"

	"github.com/plload/plload/metrics"
)

// TestNoneEndedWarning: a stage whose requests were still running when its window ended — successes
// that ended after it, or requests the drain cancelled — and none of whose answers ended in it says
// so, with the window in readable seconds, and says to lengthen it; a stage whose requests all failed
// (a refused target), one with an answer in the window, one with no request, or one an interrupt cut
// short says nothing.
func TestNoneEndedWarning(t *testing.T) {
	type counts struct{ started, succeeded, errors, cancelled, interrupted, ended int }
	mk := func(c counts, partial bool) *metrics.StageSummary {
		s := &metrics.StageSummary{Partial: partial}
		q := &s.Requests
		q.InWindow, q.Succeeded, q.Errors, q.Cancelled, q.Interrupted = c.started, c.succeeded, c.errors, c.cancelled, c.interrupted
		s.Throughput.Requests, s.Window.Seconds = c.ended, 1.387627746
		if c.succeeded > 0 {
			s.E2E = metrics.Dist{N: c.succeeded, P50: 12400}
		}
		return s
	}
	const lengthen = ": lengthen the stage (load.stages[].duration, or --duration) to several answers' length"
	for _, tc := range []struct {
		name    string
		c       counts
		partial bool
		want    string
	}{
		{"successes ended after the window", counts{started: 4, succeeded: 4}, false,
			"no request ended in the window: 4 started in its 1.4 s, and every answer outlasted it (throughput reads 0); requests took 12.4 s (E2E p50)" + lengthen},
		{"drain cancelled every request", counts{started: 3, cancelled: 3}, false,
			"no request ended in the window: 3 started in its 1.4 s, and every answer outlasted it (throughput reads 0)" + lengthen},
		{"some running, some failed", counts{started: 10, succeeded: 2, errors: 7, cancelled: 1}, false,
			"no request ended in the window: 3 of the 10 started in its 1.4 s were still running at its end (throughput reads 0; 7 failed); requests took 12.4 s (E2E p50)" + lengthen},
		{"every request refused", counts{started: 10, errors: 10}, false, ""},
		{"failed, and the interrupt cancelled the rest", counts{started: 10, errors: 8, cancelled: 2, interrupted: 2}, false, ""},
		{"one ended", counts{started: 4, succeeded: 4, ended: 1}, false, ""},
		{"none started", counts{}, false, ""},
		{"interrupted", counts{started: 4, succeeded: 4}, true, ""},
	} {
		if got := NoneEndedWarning(mk(tc.c, tc.partial)); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	if got := NoneEndedWarning(nil); got != "" {
		t.Errorf("no summary: %q", got)
	}
}

// TestSecondsBrief: a measured span prints with one decimal from a second up and two significant
// digits below, never nine decimals nor a -0.
func TestSecondsBrief(t *testing.T) {
	for v, want := range map[float64]string{1.387627746: "1.4", 5: "5", 120.04: "120", 0.0512: "0.051", 0.25: "0.25", 0: "0"} {
		if got := SecondsBrief(v); got != want {
			t.Errorf("SecondsBrief(%v) = %q, want %q", v, got, want)
		}
	}
}
