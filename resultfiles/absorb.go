package resultfiles

import (
	"fmt"
	"strings"
	"time"

	"github.com/plload/plload/workload"
)

// The time to absorb a rising load (docs/measurement.md) in the reports: which stages are asked for it, and the
// sentence that says when the first window broke a latency limit and from when every window met
// them again. metrics/absorb.go defines the windows.

// absorbWindow is the window the stage's latency limits are judged in for the time to absorb, or 0
// when its load does not rise.
func absorbWindow(sc *workload.Scenario, i int) time.Duration {
	if !sc.Load.LoadRises(i) {
		return 0
	}
	return sc.SLO.AbsorbWindow()
}

// AbsorbText is the stage's time to absorb in one sentence: "absorbed 24 s after the ramp began: …"
// or "not absorbed by the end of the stage: …"; "" when the stage has none.
func AbsorbText(st *StageReport) string {
	a := st.Summary.Absorb
	if a == nil {
		return ""
	}
	began := "the stage began"
	if st.Rate != nil && st.Rate.IsRamp() {
		began = "the ramp began"
	}
	over := map[string]bool{}
	var names []string
	for _, w := range a.Windows {
		for _, name := range w.Over {
			if !over[name] {
				over[name] = true
				names = append(names, name)
			}
		}
	}
	detail := fmt.Sprintf("%d of %d windows of %s s over", a.ViolatedWindows, len(a.Windows), Seconds(a.WindowS))
	if len(names) > 0 {
		detail += ": " + strings.Join(names, ", ")
	}
	if n := a.UnjudgedWindows; n > 0 {
		detail += fmt.Sprintf("; %d could not be judged: fewer than %d requests started in them, a limit's metric had no values (every request failed), or only cancelled requests' lower bounds were within the limits", n, a.MinRequests)
	}
	switch {
	case !a.FirstViolationS.OK && len(a.Windows) > 0 && a.UnjudgedWindows == len(a.Windows):
		return fmt.Sprintf("no window could be judged, so there is no time to absorb (%s)", detail)
	case !a.FirstViolationS.OK:
		return fmt.Sprintf("no window broke a latency limit, nothing to absorb (%s)", detail)
	case a.AbsorbedS.OK:
		return fmt.Sprintf("absorbed %s s after %s (first window over a limit at %s s; %s)", Seconds(a.AbsorbedS.V), began, Seconds(a.FirstViolationS.V), detail)
	}
	return fmt.Sprintf("not absorbed by the end of the stage (first window over a limit at %s s after %s, and no window after the last one over met every limit; %s)",
		Seconds(a.FirstViolationS.V), began, detail)
}
