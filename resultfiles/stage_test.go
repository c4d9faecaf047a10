package resultfiles

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/workload"
)

// TestReplayFields: a replay stage carries its time scale and cap (no rate, no arrival), and reads
// "replay ×0.5 ≤ 1000".
func TestReplayFields(t *testing.T) {
	r := &StageReport{Mode: workload.ModeReplay, Stage: 1}
	openLoopFields(r, workload.LoadPlan{Mode: workload.ModeReplay, MaxInFlight: 1000, TimeScale: 0.5, Arrival: "poisson"}, workload.Stage{})
	if diff := cmp.Diff(&StageReport{Mode: workload.ModeReplay, Stage: 1, MaxInFlight: 1000, TimeScale: 0.5}, r); diff != "" {
		t.Errorf("replay fields (-want +got):\n%s", diff)
	}
	if got := r.LoadText(); got != "replay ×0.5 ≤ 1000" {
		t.Errorf("load %q", got)
	}
	r.Name = "trace day 1"
	if got := r.LoadText(); got != "trace day 1: replay ×0.5 ≤ 1000" {
		t.Errorf("load %q", got)
	}
}
