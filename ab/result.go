package ab

import (
	"fmt"
	"math"
	"strings"

	"github.com/plload/plload/resultfiles"
)

// IntervalMethod is how ab's intervals are made, in words, for ab.json and ab.md.
const IntervalMethod = "latencies and the error rate: bootstrap over requests; throughputs: paired batch means over 10 slices of the window; " +
	"each widened for the number of rows of its stage (Bonferroni)"

// minDecidable is the fewest successful requests per side below which the intervals are rough (the
// bootstrap's percentiles of a few dozen values jump between neighbours).
const minDecidable = 30

// StageNotes says what a reader of one stage's comparison must know: 429s (refused work is not
// slowness), requests that failed, too few requests for the intervals to mean much.
func StageNotes(stage int, a, b resultfiles.ABTarget, ca, cb resultfiles.ABCounts) []string {
	var out []string
	for _, side := range []struct {
		t resultfiles.ABTarget
		c resultfiles.ABCounts
	}{{a, ca}, {b, cb}} {
		t, c := side.t, side.c
		if c.RateLimited > 0 {
			out = append(out, fmt.Sprintf("stage %02d: %s answered %d of %d requests with HTTP 429 (rate limited): they are errors, not latency; its throughput is what its rate limit let through, not its speed",
				stage, t.Name, c.RateLimited, c.InWindow))
		}
		if other := c.Errors - c.RateLimited + c.Cancelled; other > 0 {
			out = append(out, fmt.Sprintf("stage %02d: %s: %d of %d requests failed or were cancelled (see %s/stage_%02d/stage.json error_kinds); latencies are of the successful ones",
				stage, t.Name, other, c.InWindow, t.Dir, stage))
		}
	}
	if min(ca.Succeeded, cb.Succeeded) < minDecidable {
		out = append(out, fmt.Sprintf("stage %02d: fewer than %d successful requests on a side (%s %d, %s %d): the intervals are rough; run the stage longer",
			stage, minDecidable, a.Name, ca.Succeeded, b.Name, cb.Succeeded))
	}
	return out
}

// ValidityNotes says where a stage's comparison rests on numbers its tables cannot vouch for, in
// the words of the stage tables: a stage cut short (partial), a replay that fell behind its trace on
// a side (not valid: its latencies are not the trace's), a side whose client was strained (its
// latencies may read long).
func ValidityNotes(stage int, a, b resultfiles.ABTarget, sa, sb *resultfiles.StageReport) []string {
	var out []string
	if sa.Summary.Partial || sb.Summary.Partial {
		out = append(out, fmt.Sprintf("stage %02d is partial (cut short): its windows are what ran", stage))
	}
	for _, side := range []struct {
		t  resultfiles.ABTarget
		st *resultfiles.StageReport
	}{{a, sa}, {b, sb}} {
		if w := resultfiles.ReplayWarning(side.st.Summary); w != "" {
			out = append(out, fmt.Sprintf("stage %02d is not a valid replay on %s: %s; its latencies are not the trace's, so this stage's verdicts do not stand", stage, side.t.Name, w))
		}
		if w := side.st.Injector.Warnings(); len(w) > 0 {
			out = append(out, fmt.Sprintf("stage %02d: the client was strained while it measured %s (%s): its latencies may read longer than the server's, never shorter", stage, side.t.Name, strings.Join(w, "; ")))
		}
	}
	return out
}

// Markdown is the side-by-side table of ab.md, which plload ab also prints.
func Markdown(r resultfiles.AB) string {
	if len(r.Targets) != 2 {
		return "no comparison: it needs two targets\n"
	}
	a, b := r.Targets[0], r.Targets[1]
	var sb strings.Builder
	fmt.Fprintf(&sb, "# A/B: %s (A) vs %s (B)\n\n", a.Name, b.Name)
	fmt.Fprintf(&sb, "A = %s, model %s (results in %s/)  \nB = %s, model %s (results in %s/)\n\n", a.URL, a.Model, a.Dir, b.URL, b.Model, b.Dir)
	fmt.Fprintf(&sb, "Both got the same sessions in the same window. B − A per metric, with its interval: a stage's intervals hold together at %.0f %% "+
		"(%s). The verdict is B's: better, worse, or same (no significant difference: the interval holds 0).\n", 100*r.Confidence, r.IntervalMethod)
	if !r.SameDataset {
		sb.WriteString("\n**The two targets were not sent the same dataset** (dataset_sha256 differs): this is not a fair comparison.\n")
	}
	for _, stage := range stagesOf(r) {
		fmt.Fprintf(&sb, "\n## Stage %02d\n\n| metric | %s | %s | B − A | %.0f %% interval | verdict |\n| --- | ---: | ---: | ---: | --- | --- |\n",
			stage, a.Name, b.Name, 100*r.Confidence)
		for _, m := range r.Metrics {
			if m.Stage == stage {
				fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", m.Name, num(m.A.V, m.A.OK), num(m.B.V, m.B.OK),
					signed(m.Diff.V, m.Diff.OK), interval(m.CI), verdictText(m.Verdict, b.Name))
			}
		}
		fmt.Fprintf(&sb, "\n| requests in window | %s | %s |\n| --- | ---: | ---: |\n", a.Name, b.Name)
		ca, cb := countsOf(r, stage, a.Name), countsOf(r, stage, b.Name)
		for _, line := range []struct {
			name   string
			va, vb int
		}{{"started", ca.InWindow, cb.InWindow}, {"succeeded", ca.Succeeded, cb.Succeeded},
			{"errors (429 not included)", ca.Errors - ca.RateLimited, cb.Errors - cb.RateLimited},
			{"HTTP 429 (rate limited)", ca.RateLimited, cb.RateLimited}, {"cancelled", ca.Cancelled, cb.Cancelled}} {
			fmt.Fprintf(&sb, "| %s | %d | %d |\n", line.name, line.va, line.vb)
		}
	}
	if len(r.Notes) > 0 {
		sb.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			sb.WriteString("- " + n + "\n")
		}
	}
	return sb.String()
}

// stages lists the stage numbers of the metrics, in order.
func stagesOf(r resultfiles.AB) []int {
	var out []int
	for _, m := range r.Metrics {
		if len(out) == 0 || out[len(out)-1] != m.Stage {
			out = append(out, m.Stage)
		}
	}
	return out
}

func countsOf(r resultfiles.AB, stage int, target string) resultfiles.ABCounts {
	for _, c := range r.Requests {
		if c.Stage == stage && c.Target == target {
			return c.ABCounts
		}
	}
	return resultfiles.ABCounts{}
}

func verdictText(v, b string) string {
	switch v {
	case Better, Worse:
		return b + " " + v
	case Same:
		return "no significant difference"
	}
	return "n/a"
}

// num shows a value with the digits that matter at its size.
func num(v float64, ok bool) string {
	if !ok {
		return "n/a"
	}
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func signed(v float64, ok bool) string {
	s := num(v, ok)
	if ok && v >= 0 {
		s = "+" + s
	}
	return s
}

func interval(ci *[2]float64) string {
	if ci == nil {
		return "n/a"
	}
	return signed(ci[0], true) + " … " + signed(ci[1], true)
}
