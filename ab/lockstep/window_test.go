package lockstep

import (
	"testing"

	"github.com/plload/plload/metrics"
)

// TestCommonWindow: each side keeps its own window unless one was cut short; then both are compared
// over the first seconds the shorter ran, and the note says so.
func TestCommonWindow(t *testing.T) {
	const s = int64(1e9)
	summary := func(w, length int64, partial bool) *metrics.StageSummary {
		sum := &metrics.StageSummary{Partial: partial}
		sum.Window.WNs, sum.Window.EEffNs = w, w+length
		return sum
	}
	for _, tc := range []struct {
		name       string
		a, b       *metrics.StageSummary
		endA, endB int64
		cut        string
	}{
		{"both whole", summary(10*s, 20*s, false), summary(11*s, 19*s, false), 30 * s, 30 * s, ""},
		{"B cut short", summary(10*s, 20*s, false), summary(11*s, 5*s, true), 15 * s, 16 * s,
			"B was cut short after 5.0 s of the window; A's 20.0 s are compared over the same first 5.0 s only (same window)"},
		{"A cut short", summary(10*s, 2*s, true), summary(11*s, 20*s, false), 12 * s, 13 * s,
			"A was cut short after 2.0 s of the window; B's 20.0 s are compared over the same first 2.0 s only (same window)"},
		{"both cut by one interrupt", summary(10*s, 20*s, true), summary(11*s, 20*s+s/20, true), 30 * s, 31*s + s/20, ""},
		{"an empty window", summary(10*s, 0, true), summary(11*s, 20*s, false), 10 * s, 31 * s, ""},
	} {
		endA, endB, cut := commonWindow(tc.a, tc.b, "A", "B")
		if endA != tc.endA || endB != tc.endB || cut != tc.cut {
			t.Errorf("%s: ends %d, %d, cut %q; want %d, %d, %q", tc.name, endA, endB, cut, tc.endA, tc.endB, tc.cut)
		}
	}
}
