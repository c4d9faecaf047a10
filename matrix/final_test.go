package matrix

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/workload"
)

// TestFinalLinesAgreeWithTheTables: the matrix's last lines (its headline and the failure that sets
// its exit code), its verdict and its results table say the same thing, in the stage tables' words,
// for a matrix whose stages are fine, strained, invalid (a replay's PASS that fell behind its trace),
// partial, or judged by no SLO.
func TestFinalLinesAgreeWithTheTables(t *testing.T) {
	const slo = "{slo}" // the scenario's SLO in words, filled in below
	for _, tc := range []struct {
		name     string
		edit     func(in *Input)
		headline string   // the terminal's "matrix NAME: ..." line holds it
		verdict  []string // report.md's verdict holds each
		table    string   // part B's results table holds it ("" = not checked)
		code     runner.Code
		errText  string
	}{
		{name: "fine", edit: func(*Input) {},
			headline: "meets the SLO (" + slo + ") up to mean: 8 req/s, in 2 of 2 repeats"},
		{name: "strained: the numbers stand, and the verdict says so",
			edit: func(in *Input) {
				for _, st := range in.Outcomes[1].Runs[0].Stages {
					st.Injector = metrics.InjectorHealth{CPUPercent: 190, Cores: 2}
				}
			},
			headline: "meets the SLO (" + slo + ") up to mean: 8 req/s, in 2 of 2 repeats",
			verdict:  []string{"**The client was strained** at that point (part B, stage 01: injector CPU busy: 190 % of 200 %"}},
		{name: "invalid: a replay's PASS that fell behind is not met",
			edit: func(in *Input) {
				for _, st := range in.Outcomes[0].Runs[0].Stages {
					st.Summary.SLO.Verdict = metrics.SLOFail
				}
				for _, st := range in.Outcomes[1].Runs[0].Stages {
					st.Summary.ReplayValid = metrics.Some(false)
				}
				in.Outcomes[3].Runs = nil
			},
			headline: "no open-loop rate met the SLO (" + slo + ") in every repeat: the lowest, mean: 8 req/s, met it in 0 of 2; stages 01, 02, 04 passed it only as a replay that fell behind its trace, which is not valid",
			table:    "| mean: 8 req/s | 2 | 0 of 2 (2 passed as a replay that fell behind: not valid) |",
			code:     runner.Failed, errText: "no valid stage passed the SLO (" + slo + ") in any part"},
		{name: "partial: an interrupted matrix",
			edit: func(in *Input) {
				in.Outcomes[1].Runs[0].Stages[5].Summary.Partial = true
				in.Outcomes[3].Runs = nil
				in.Interrupted = true
			},
			headline: "meets the SLO (" + slo + ") up to mean: 8 req/s",
			verdict:  []string{"**Interrupted**: the matrix was stopped"},
			table:    "| peak+30%: 19 req/s | 2 | 0 of 2 (partial) |",
			code:     runner.Interrupted, errText: "interrupted: the running part is partial"},
		{name: "partial stages only, nothing met",
			edit: func(in *Input) {
				for _, o := range in.Outcomes {
					for _, r := range o.Runs {
						for _, st := range r.Stages {
							st.Summary.Partial = true
						}
					}
				}
			},
			headline: "no open-loop rate met the SLO (" + slo + ") in every repeat: the lowest, mean: 8 req/s, met it in 0 of 2; stages 01, 02, 03, 04, 05, 06 partial (cut short), so not counted",
			code:     runner.Failed, errText: "no complete stage passed the SLO (" + slo + ") in any part"},
		{name: "one limit failing: the headline names it",
			edit: func(in *Input) {
				v, no, yes := 122.0, false, true
				ttft := 60.0
				for _, st := range in.Outcomes[1].Runs[0].Stages {
					st.Summary.SLO = metrics.SLOResult{Verdict: metrics.SLOFail, Checks: []metrics.SLOCheck{
						{Name: "ttft_p95_ms", Limit: 150, Value: &ttft, Pass: &yes}, {Name: "itl_p95_ms", Limit: 50, Value: &v, Pass: &no}}}
				}
			},
			headline: "no open-loop rate met the SLO (" + slo + ") in every repeat: the lowest, mean: 8 req/s, met it in 0 of 2 (ITL p95 122 ms > 50 ms)",
			table:    "| mean: 8 req/s | 2 | 0 of 2 |"}, // part A's stages met it: the matrix exits 0
		{name: "a higher rate met above one that did not: not the operating point",
			edit: func(in *Input) {
				st := in.Outcomes[1].Runs[0].Stages
				st[1].Summary.SLO.Verdict = metrics.SLOFail
				st[2].Summary.SLO.Verdict, st[5].Summary.SLO.Verdict = metrics.SLOPass, metrics.SLOPass
			},
			headline: "meets the SLO (" + slo + ") up to mean: 8 req/s, in 2 of 2 repeats",
			verdict:  []string{"; peak+30%: 19 req/s met it in every repeat, above peak: 16 req/s, which met it in 0 of 2: noise or a server warming up, not capacity"},
			table:    "| peak: 16 req/s | 2 | 0 of 2 |"},
		{name: "no SLO",
			edit: func(in *Input) {
				sc := *in.Scenario
				sc.SLO = workload.SLO{}
				in.Scenario = &sc
				for _, o := range in.Outcomes {
					for _, r := range o.Runs {
						for _, st := range r.Stages {
							st.Summary.SLO.Verdict = metrics.SLONA
						}
					}
				}
			},
			headline: "no SLO set: the matrix measured the curves but cannot say what load meets an objective"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := matrixInput(t)
			tc.edit(&in)
			fill := func(s string) string { return strings.ReplaceAll(s, slo, resultfiles.SLOText(in.Scenario.SLO)) }
			tc.headline, tc.errText = fill(tc.headline), fill(tc.errText)
			m := &Matrix{sc: in.Scenario, opt: Options{WriteReport: func(string, string, []Curve) error { return nil }}}
			var out bytes.Buffer
			err := m.finish(in, &out)
			if !strings.Contains(out.String(), "matrix "+in.Scenario.Name+": "+tc.headline) {
				t.Errorf("printed:\n%s\nwant the headline %q", out.String(), tc.headline)
			}
			md := Markdown(in)
			_, verdict, _ := strings.Cut(md, "## Verdict")
			verdict, _, _ = strings.Cut(verdict, "\n## ")
			if !strings.Contains(verdict, tc.headline) {
				t.Errorf("the verdict lacks the headline %q:\n%s", tc.headline, verdict)
			}
			for _, want := range tc.verdict {
				if !strings.Contains(verdict, want) {
					t.Errorf("the verdict lacks %q:\n%s", want, verdict)
				}
			}
			if tc.table != "" && !strings.Contains(in.Outcomes[1].Table(), tc.table) {
				t.Errorf("part B's table lacks %q:\n%s", tc.table, in.Outcomes[1].Table())
			}
			var re *runner.Error
			switch {
			case tc.code == 0 && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.code != 0 && (!errors.As(err, &re) || re.Code != tc.code || !strings.Contains(err.Error(), tc.errText)):
				t.Errorf("error %v, want exit %d with %q", err, tc.code, tc.errText)
			}
		})
	}
}
