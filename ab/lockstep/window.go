package lockstep

import (
	"fmt"
	"time"

	"github.com/plload/plload/metrics"
)

// commonWindow is where each side's window ends for the comparison: its own E_eff, unless one side
// was cut short (stopped as unreachable, interrupted) — then both end as long after their W as the
// shorter one ran, so the two windows stay the same instants (both sides start together) and the
// paired slices of the throughputs pair the same moments; cut says so ("" when nothing was cut).
func commonWindow(a, b *metrics.StageSummary, nameA, nameB string) (endA, endB int64, cut string) {
	la, lb := a.Window.EEffNs-a.Window.WNs, b.Window.EEffNs-b.Window.WNs
	// Both cut by one interrupt end within moments of each other: a percent, or a tenth of a
	// second, is no other window.
	if !a.Partial && !b.Partial || la <= 0 || lb <= 0 || abs64(la-lb) <= max(max(la, lb)/100, int64(100*time.Millisecond)) {
		return a.Window.EEffNs, b.Window.EEffNs, ""
	}
	short, long, l, full := nameA, nameB, la, lb
	if lb < la {
		short, long, l, full = nameB, nameA, lb, la
	}
	cut = fmt.Sprintf("%s was cut short after %.1f s of the window; %s's %.1f s are compared over the same first %.1f s only (same window)",
		short, float64(l)/1e9, long, float64(full)/1e9, float64(l)/1e9)
	return a.Window.WNs + l, b.Window.WNs + l, cut
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
