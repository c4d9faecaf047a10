package resultfiles

import (
	"fmt"
	"math"
	"strconv"
)

// Plain-text formats shared by the lines the model writes (report.json's headline) and the renderer's
// tables.

// Num prints v with digits decimals, or N/A when it is unknown (NaN).
func Num(v float64, digits int) string {
	if math.IsNaN(v) {
		return "N/A"
	}
	return fmt.Sprintf("%.*f", digits, v)
}

// Money prints a cost in dollars with digits decimals, or N/A when there is none.
func Money(v *float64, digits int) string {
	if v == nil {
		return "N/A"
	}
	return fmt.Sprintf("$%.*f", digits, *v)
}

// Seconds prints seconds as briefly as they are exact: 24, 7.5, 0.25.
func Seconds(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// SecondsBrief prints a measured span of seconds to the precision a reader uses: one decimal from a
// second up (1.4, 12, 120.5), two significant digits below (0.25, 0.051); a window measured to the
// nanosecond is not worth nine decimals in a sentence.
func SecondsBrief(v float64) string {
	if math.Abs(v) >= 1 {
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 2, 64), 64)
	return strconv.FormatFloat(r+0, 'f', -1, 64) // +0 turns a -0 into 0
}

// LoadText is the load column: what the stage held the target at, in the words of its mode — "c=16",
// "2.0 sess/s ≤ 32", "20 req/s poisson ≤ 1000", "10→50 req/s over 2m poisson ≤ 1000", "replay ×0.5 ≤
// 1000" (workload.StageLoad, each mode's own) — after the stage's name when it has one; "n/a" when
// the stage does not say (records read without a scenario).
func (r *StageReport) LoadText() string {
	load := r.stageLoad().String()
	if r.Name != "" {
		return r.Name + ": " + load
	}
	return load
}
