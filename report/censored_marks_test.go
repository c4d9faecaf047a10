package report

import (
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// TestCensoredStageMarksItsLatencies: a stage the drain cut short (cancelled requests: its latency
// percentiles leave the slowest out, so they are lower bounds) carries † on err% and on every latency
// cell, with the footnote that says what † means; a stage with no cancellation carries none, and
// without a censored stage there is no footnote.
func TestCensoredStageMarksItsLatencies(t *testing.T) {
	d := metrics.Dist{N: 40, Mean: 110, P50: 100, P90: 150, P95: 170, P99: 190, Max: 200}
	stage := func(n int, censored bool) *resultfiles.StageReport {
		sum := &metrics.StageSummary{TTFT: d, TPOT: d, ITL: d, E2E: d, Censored: censored, ErrorRate: metrics.Some(0.235)}
		sum.Requests.InWindow, sum.Requests.Succeeded = 51, 39
		if censored {
			sum.Requests.Cancelled = 12
		}
		return &resultfiles.StageReport{Stage: n, Mode: "concurrency", Concurrency: 4, Summary: sum}
	}
	const cell = "110/100/150/170/190"
	row := func(out, stage string) string {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "| "+stage+" | c=4 | 51 (39) |") {
				return line
			}
		}
		t.Fatalf("no latency row for stage %s in:\n%s", stage, out)
		return ""
	}
	out := StageTable([]*resultfiles.StageReport{stage(1, false), stage(2, true)})
	if got, want := row(out, "02"), "| 02 | c=4 | 51 (39) | "+cell+" † | "+cell+" † | "+cell+" † | "+cell+" † |"; !strings.HasPrefix(got, want) {
		t.Errorf("censored stage's latency row:\n got %s\nwant %s…", got, want)
	}
	if got := row(out, "01"); strings.Contains(got, "†") {
		t.Errorf("uncensored stage's latency row is marked: %s", got)
	}
	if !strings.Contains(out, "23.5% †") {
		t.Errorf("censored stage's err%% lacks †:\n%s", out)
	}
	if !strings.Contains(out, "\n†: some of the stage's requests were cancelled before they finished") {
		t.Errorf("no † footnote:\n%s", out)
	}
	if out := StageTable([]*resultfiles.StageReport{stage(1, false)}); strings.Contains(out, "†") {
		t.Errorf("no stage censored, yet a † or its footnote:\n%s", out)
	}
}
