package resultfiles

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
)

// TestSLOBroken: the one wording of what stages broke of their SLO, per stage (run, gate) and per
// load (the repeats of one matrix level): stages that met it or were not judged are left out, a FAIL
// without a broken limit on record still names its stage, a strained client is named with its
// largest cause, and repeats that broke the same limits say them once.
func TestSLOBroken(t *testing.T) {
	pass, fail := true, false
	itl := metrics.SLOCheck{Name: "itl_p95_ms", Limit: 50, Value: ptrF(122), Pass: &fail}
	errs := metrics.SLOCheck{Name: "error_rate", Limit: 0.01, Value: ptrF(0.032), Pass: &fail}
	ttftOK := metrics.SLOCheck{Name: "ttft_p95_ms", Limit: 500, Value: ptrF(485), Pass: &pass}
	stage := func(n int, verdict string, strained bool, checks ...metrics.SLOCheck) *StageReport {
		st := &StageReport{Stage: n, Summary: &metrics.StageSummary{SLO: metrics.SLOResult{Verdict: verdict, Checks: checks}}}
		if strained {
			st.Injector = metrics.InjectorHealth{Cores: 2, CPUPercent: 60, RunQueueWaitPercent: metrics.Some(62.0)}
		}
		return st
	}
	for _, tc := range []struct {
		name              string
		stages            []*StageReport
		perStage, perLoad string
	}{
		{"none failed", []*StageReport{stage(1, metrics.SLOPass, false, ttftOK), stage(2, metrics.SLONA, false)}, "", ""},
		{"one limit", []*StageReport{stage(1, metrics.SLOPass, false, ttftOK), stage(2, metrics.SLOFail, false, ttftOK, itl)},
			"stage 02 broke ITL p95 122 ms > 50 ms", "ITL p95 122 ms > 50 ms"},
		{"two limits, two stages", []*StageReport{stage(1, metrics.SLOFail, false, itl, errs), stage(2, metrics.SLOFail, false, errs)},
			"stage 01 broke ITL p95 122 ms > 50 ms, error rate 3.2 % > 1 %; stage 02 broke error rate 3.2 % > 1 %",
			"ITL p95 122 ms > 50 ms, error rate 3.2 % > 1 %; error rate 3.2 % > 1 %"},
		{"repeats that broke the same limit", []*StageReport{stage(1, metrics.SLOFail, false, itl), stage(1, metrics.SLOFail, false, itl)},
			"stage 01 broke ITL p95 122 ms > 50 ms; stage 01 broke ITL p95 122 ms > 50 ms", "ITL p95 122 ms > 50 ms"},
		{"a FAIL with no broken limit on record", []*StageReport{stage(3, metrics.SLOFail, false)}, "stage 03 failed it", ""},
		{"a strained client", []*StageReport{stage(1, metrics.SLOFail, true, itl)},
			"stage 01 broke ITL p95 122 ms > 50 ms (its client was strained: injector threads waited for a CPU: 0.62 threads at a time on average were ready to run with no core free (over 0.15): other processes were taking the cores, so timestamps may be late; run the client on a quieter machine; its latencies may read longer than the server's, never shorter)",
			"ITL p95 122 ms > 50 ms"},
		{"no stages", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.perStage, SLOBroken(tc.stages, BrokenPerStage)); diff != "" {
				t.Errorf("per stage (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.perLoad, SLOBroken(tc.stages, BrokenPerLoad)); diff != "" {
				t.Errorf("per load (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrF(v float64) *float64 { return &v }
