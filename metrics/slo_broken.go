package metrics

import (
	"fmt"
	"strconv"
	"strings"
)

// Broken says which limits of the SLO a stage broke, each with its value and limit in the words of
// the stage tables — "ITL p95 612 ms > 500 ms, error rate 3.2 % > 1 %" — so a line that says a
// stage failed its SLO also says why. "" when none was broken.
func (r SLOResult) Broken() string {
	var out []string
	for _, c := range r.Checks {
		if c.Pass == nil || *c.Pass || c.Value == nil {
			continue
		}
		out = append(out, CheckText(c.Name, *c.Value, c.Limit))
	}
	return strings.Join(out, ", ")
}

// CheckText is one SLO check in words: "TTFT p95 612 ms > 500 ms", "error rate 3.2 % > 1 %".
func CheckText(name string, value, limit float64) string {
	if name == "error_rate" {
		return fmt.Sprintf("error rate %s %% > %s %%", short(100*value), short(100*limit))
	}
	metric, stat, _ := strings.Cut(strings.TrimSuffix(name, "_ms"), "_")
	return fmt.Sprintf("%s %s %s ms > %s ms", strings.ToUpper(metric), stat, short(value), short(limit))
}

// short writes a number with the digits that matter at its size: 612, 4.48, 0.0123.
func short(v float64) string {
	if v >= 100 || v <= -100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
