package resultfiles

import (
	"fmt"
	"math"
	"strconv"

	"github.com/plload/plload/workload"
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

// LoadText is the load column: what the stage held the target at, in the words of its mode — "c=16",
// "2.0 sess/s ≤ 32", "20 req/s poisson ≤ 1000", "10→50 req/s over 2m poisson ≤ 1000", "replay ×0.5 ≤
// 1000" — after the stage's name when it has one; "n/a" when the stage does not say (records read
// without a scenario).
func (r *StageReport) LoadText() string {
	load := loadText(r)
	if r.Name != "" {
		return r.Name + ": " + load
	}
	return load
}

func loadText(r *StageReport) string {
	switch r.Mode {
	case "arrival_rate":
		if r.SessionsPerSec <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%s sess/s%s", oneDecimal(r.SessionsPerSec), capText(r.MaxConcurrency))
	case "request_rate":
		if r.Rate == nil {
			return "n/a"
		}
		rate := fmt.Sprintf("%g req/s", r.Rate.To)
		if r.Rate.IsRamp() {
			rate = fmt.Sprintf("%g→%g req/s over %s", r.Rate.From, r.Rate.To, r.Rate.Over)
		}
		arrival := r.Arrival
		if arrival == "gamma" {
			arrival += fmt.Sprintf(" cv %g", r.CV)
		}
		if arrival != "" {
			arrival = " " + arrival
		}
		return rate + arrival + capText(r.MaxInFlight)
	case "replay":
		return fmt.Sprintf("replay ×%g%s", r.TimeScale, capText(r.MaxInFlight))
	case workload.ModeBatch:
		return "batch" + capText(r.MaxInFlight)
	}
	if r.Concurrency == 0 {
		return "n/a"
	}
	return fmt.Sprintf("c=%d", r.Concurrency)
}

// capText is " ≤ N" for a cap on what is open at once, "" when there is none.
func capText(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" ≤ %d", n)
}

// oneDecimal prints a rate with at least one decimal (2.0, 0.25), so it does not read as a count.
func oneDecimal(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%g", v)
}
