package resultfiles

import (
	"testing"

	"github.com/plload/plload/metrics"
)

// TestNoneEndedWarning: a stage whose requests started in the window but whose answers all outlast
// it says so and says to lengthen it; a stage with an answer in the window, one with no request, or
// one an interrupt cut short says nothing.
func TestNoneEndedWarning(t *testing.T) {
	mk := func(started, ended int, partial bool) *metrics.StageSummary {
		s := &metrics.StageSummary{Partial: partial}
		s.Requests.InWindow, s.Throughput.Requests, s.Window.Seconds = started, ended, 5
		s.E2E = metrics.Dist{N: started, P50: 12400}
		return s
	}
	want := "no request ended in the window: 4 started in its 5 s, and every answer outlasted it (throughput reads 0); requests took 12.4 s (E2E p50): lengthen the stage (load.stages[].duration, or --duration) to several answers' length"
	if got := NoneEndedWarning(mk(4, 0, false)); got != want {
		t.Errorf("answers outlast the window:\n got %q\nwant %q", got, want)
	}
	for name, s := range map[string]*metrics.StageSummary{"one ended": mk(4, 1, false), "none started": mk(0, 0, false), "interrupted": mk(4, 0, true), "no summary": nil} {
		if got := NoneEndedWarning(s); got != "" {
			t.Errorf("%s: %q", name, got)
		}
	}
}
