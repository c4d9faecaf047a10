package ab

import (
	"math"
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// TestDecisionSaysWhatTheTablesShow: the A/B's last line names B's first worse row with its numbers
// when they stand, and says why a worse reading does not stand where the stage cannot vouch for it:
// B's client strained (but not for the error rate, which the strain cannot raise), a stage cut short,
// a replay that fell behind. Without an SLO there are only the base rows; without any worse row the
// line says B is no worse.
func TestDecisionSaysWhatTheTablesShow(t *testing.T) {
	row := func(name, verdict string, a, b float64) resultfiles.ABMetric {
		better := "lower"
		if strings.HasSuffix(name, "_per_sec") {
			better = "higher"
		}
		return resultfiles.ABMetric{Name: name, Stage: 1, Verdict: verdict, A: metrics.Some(a), B: metrics.Some(b), Diff: metrics.Some(b - a), CI: &[2]float64{b - a - 1, b - a + 1}, BetterWhen: better}
	}
	strained := Doubt{Strained: "the client was strained while it measured new (injector threads waited for a CPU: 0.62 threads at a time)", LateMs: 36}
	for _, tc := range []struct {
		name  string
		rows  []resultfiles.ABMetric
		doubt Doubt
		line  string
		worse int
		undec int
	}{
		{"one limit worse", []resultfiles.ABMetric{row("ttft_p50_ms", Same, 50, 50.2), row("itl_p95_ms", Worse, 20, 31)}, Doubt{},
			"A/B: new (B) is worse than old (A): stage 01 itl_p95_ms 20.00 → 31.00 (B − A +11.00, 95 % interval +10.00 … +12.00)", 1, 0},
		{"strained: a latency worse does not stand", []resultfiles.ABMetric{row("ttft_p95_ms", Worse, 50, 60)}, strained,
			"A/B: undecided: new (B) read worse than old (A), but not on numbers that stand: stage 01 ttft_p95_ms 50.00 → 60.00 (B − A +10.00, 95 % interval +9.00 … +11.00): the client was strained while it measured new (injector threads waited for a CPU", 0, 1},
		{"strained, but B is slower by more than the strain can add: it stands", []resultfiles.ABMetric{row("ttft_p50_ms", Worse, 5.85, 77.67)}, strained,
			"A/B: new (B) is worse than old (A): stage 01 ttft_p50_ms 5.85 → 77.67", 1, 0},
		{"strained: a throughput worse does not stand", []resultfiles.ABMetric{row("out_tok_per_sec", Worse, 900, 700)}, strained,
			"A/B: undecided: new (B) read worse than old (A)", 0, 1},
		{"strained: the error rate stands", []resultfiles.ABMetric{row("error_rate", Worse, 0, 0.2)}, strained,
			"A/B: new (B) is worse than old (A): stage 01 error_rate 0 → 0.2 (B − A +0.2", 1, 0},
		{"partial", []resultfiles.ABMetric{row("error_rate", Worse, 0, 0.2)}, Doubt{NotMeasured: "stage 01 is partial (cut short)"},
			"A/B: undecided: new (B) read worse than old (A), but not on numbers that stand: stage 01 error_rate 0 → 0.2 (B − A +0.2, 95 % interval -0.8 … +1.20): stage 01 is partial (cut short)", 0, 1},
		{"invalid replay", []resultfiles.ABMetric{row("out_tok_per_sec", Worse, 100, 80)}, Doubt{NotMeasured: "stage 01 is not a valid replay on a side, so its latencies are not the trace's"},
			"A/B: undecided: new (B) read worse than old (A), but not on numbers that stand: stage 01 out_tok_per_sec", 0, 1},
		{"no SLO, better", []resultfiles.ABMetric{row("ttft_p50_ms", Better, 50, 40), row("e2e_p50_ms", Same, 90, 90)}, Doubt{},
			"A/B: new (B) is no worse than old (A) on any metric, and better on 1", 0, 0},
		{"nothing differs", []resultfiles.ABMetric{row("ttft_p50_ms", Same, 50, 50), row("tpoc_p50_ms", Unknown, 0, 0)}, Doubt{},
			"A/B: no significant difference between new (B) and old (A) on any metric", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(resultfiles.AB{Metrics: tc.rows}, Doubts{1: tc.doubt})
			if line := d.Line("old", "new"); !strings.HasPrefix(line, tc.line) {
				t.Errorf("line %q, want %q…", line, tc.line)
			}
			if len(d.Worse) != tc.worse || len(d.Undecided) != tc.undec {
				t.Errorf("worse %v, undecided %v; want %d and %d", d.Worse, d.Undecided, tc.worse, tc.undec)
			}
		})
	}
}

// TestStageDoubt: a stage cut short or a lagging replay on either side doubts every verdict; B's
// strained client is named by its largest cause; A's strain is no doubt (it can only hide a worse B).
func TestStageDoubt(t *testing.T) {
	mk := func() *resultfiles.StageReport {
		return &resultfiles.StageReport{Stage: 2, Summary: &metrics.StageSummary{}}
	}
	a, b := mk(), mk()
	a.Injector = metrics.InjectorHealth{Cores: 2, CPUPercent: 199}
	if d := StageDoubt(a, b, "new"); d != (Doubt{}) {
		t.Errorf("A strained: %+v", d)
	}
	b.Injector = metrics.InjectorHealth{Cores: 2, CPUPercent: 199}
	if d := StageDoubt(a, b, "new"); !math.IsInf(d.LateMs, 1) {
		t.Errorf("A strained: %+v", d)
	}
	b.Injector = metrics.InjectorHealth{Cores: 2, ReadLagP99Ms: metrics.Some(4.48), RunQueueWaitPercent: metrics.Some(62.0)}
	a.Summary.Partial = true
	d := StageDoubt(a, b, "new")
	if d.NotMeasured != "stage 02 is partial (cut short)" || !strings.Contains(d.Strained, "measured new (injector threads waited for a CPU: 0.62") || d.LateMs != 3*12 {
		t.Errorf("%+v", d)
	}
}
