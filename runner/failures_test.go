package runner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// TestRunFailures: what makes a finished run exit 1. With no SLO set, no stage "failed the SLO";
// a replay stage that fell behind its trace did not measure the trace.
func TestRunFailures(t *testing.T) {
	errMax := 0.01
	sloSet := workload.SLO{TTFT: &workload.Limits{P95: workload.Duration(500 * time.Millisecond)}, ErrorRate: &errMax}
	stage := func(edit func(*metrics.StageSummary)) *resultfiles.StageReport {
		sum := &metrics.StageSummary{}
		sum.Requests.Succeeded = 10
		sum.Throughput.Requests = 10
		sum.ErrorRate = metrics.Some(0.0)
		edit(sum)
		return &resultfiles.StageReport{Stage: 1, Summary: sum}
	}
	fine := func(*metrics.StageSummary) {}
	verdict := func(v string) func(*metrics.StageSummary) { return func(s *metrics.StageSummary) { s.SLO.Verdict = v } }
	behind := func(s *metrics.StageSummary) {
		s.SLO.Verdict = metrics.SLOPass
		s.ReplayValid, s.ReplayInvalidReason = metrics.Some(false), "send lag p99 25.0 ms > 10 ms"
	}
	replayLine := "stage 01 is not a valid replay: client could not keep the trace's pace: send lag p99 25.0 ms > 10 ms; raise load.max_in_flight, replay slower (load.time_scale > 1), or run on a machine with more cores"
	for _, tc := range []struct {
		name     string
		slo      workload.SLO
		stage    *resultfiles.StageReport
		headline bool
		want     []string
	}{
		{"no SLO, no headline", workload.SLO{}, stage(fine), false, nil},
		{"SLO set, the stage failed it", sloSet, stage(verdict(metrics.SLOFail)), false, []string{"no stage met the SLO (TTFT p95 ≤ 500ms, error rate ≤ 1%): stage 01 failed it"}},
		{"a replay that fell behind but met the SLO: only the replay is the cause", sloSet, stage(behind), false, []string{replayLine}},
		{"SLO set, the stage could not be judged", sloSet, stage(verdict(metrics.SLONA)), false,
			[]string{"no stage could be judged against the SLO (TTFT p95 ≤ 500ms, error rate ≤ 1%): stage 01 has the verdict N/A (a limit's metric has no values: see its stage table)"}},
		{"no request succeeded: the stage's own line, never an SLO line", sloSet, stage(func(s *metrics.StageSummary) {
			s.Requests.Succeeded, s.Requests.Errors, s.SLO.Verdict = 0, 10, metrics.SLONA
		}), false, []string{"stage 01 failed: no request in its window succeeded (10 errors, 0 cancelled)"}},
		{"SLO met", sloSet, stage(fine), true, nil},
		{"every stage partial: none could be judged", sloSet, stage(func(s *metrics.StageSummary) { s.Partial = true }), false,
			[]string{"no stage can be judged against the SLO (TTFT p95 ≤ 500ms, error rate ≤ 1%): every stage is partial (cut short, or a shard of the run lost: see merge.json), so none is the headline"}},
		{"error rate over the limit", sloSet, stage(func(s *metrics.StageSummary) { s.ErrorRate = metrics.Some(0.2) }), true,
			[]string{"stage 01 failed: error rate 20.00% is over the SLO's error rate limit 1.00%"}},
		{"error rate without a limit", workload.SLO{}, stage(func(s *metrics.StageSummary) { s.ErrorRate = metrics.Some(0.2) }), false, nil},
		{"replay kept pace", workload.SLO{}, stage(func(s *metrics.StageSummary) { s.ReplayValid = metrics.Some(true) }), false, nil},
		{"replay fell behind", workload.SLO{}, stage(func(s *metrics.StageSummary) {
			s.ReplayValid, s.ReplayInvalidReason = metrics.Some(false), "send lag p99 25.0 ms > 10 ms"
		}), false, []string{"stage 01 is not a valid replay: client could not keep the trace's pace: send lag p99 25.0 ms > 10 ms; raise load.max_in_flight, replay slower (load.time_scale > 1), or run on a machine with more cores"}},
		{"replay fell behind, no reason given", workload.SLO{}, stage(func(s *metrics.StageSummary) {
			s.ReplayValid = metrics.Some(false)
			s.SendLag = metrics.Dist{N: 5, P99: 30, Max: 1500}
		}), false, []string{"stage 01 is not a valid replay: client could not keep the trace's pace: send lag p99 30.0 ms, max 1500.0 ms (limits: p99 ≤ 10 ms, none > 1000 ms); raise load.max_in_flight, replay slower (load.time_scale > 1), or run on a machine with more cores"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Failures(&workload.Scenario{SLO: tc.slo}, []*resultfiles.StageReport{tc.stage}, tc.headline)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunFailuresOverStages: across stages, a run whose only SLO FAIL sits beside a replay that met
// the SLO but fell behind says both, in the tables' words; a strained client is a warning, never a
// failure of the SLO.
func TestRunFailuresOverStages(t *testing.T) {
	errMax := 0.01
	sc := &workload.Scenario{SLO: workload.SLO{TTFT: &workload.Limits{P95: workload.Duration(500 * time.Millisecond)}, ErrorRate: &errMax}}
	mk := func(n int, verdict string, replayValid bool, warnings ...string) *resultfiles.StageReport {
		sum := &metrics.StageSummary{Warnings: warnings}
		sum.Requests.Succeeded, sum.Throughput.Requests = 10, 10
		sum.ErrorRate = metrics.Some(0.0)
		sum.SLO.Verdict = verdict
		sum.ReplayValid = metrics.Some(replayValid)
		return &resultfiles.StageReport{Stage: n, Summary: sum}
	}
	got := Failures(sc, []*resultfiles.StageReport{mk(1, metrics.SLOPass, false), mk(2, metrics.SLOFail, true)}, false)
	want := []string{
		"stage 01 is not a valid replay: client could not keep the trace's pace: send lag p99 0.0 ms, max 0.0 ms (limits: p99 ≤ 10 ms, none > 1000 ms); raise load.max_in_flight, replay slower (load.time_scale > 1), or run on a machine with more cores",
		"no valid stage met the SLO (TTFT p95 ≤ 500ms, error rate ≤ 1%): stage 02 failed it, and stage 01 met it only as a replay that fell behind its trace",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	strained := mk(1, metrics.SLOPass, true, "stage 01: injector threads waited for a CPU 54% of the time (> 15%)")
	if got := Failures(sc, []*resultfiles.StageReport{strained}, true); len(got) != 0 {
		t.Errorf("a strained client that met the SLO failed the run: %v", got)
	}
}

// TestRunFailuresNameTheCause: the line that says no stage met the SLO names what each stage broke,
// with its value and limit, and a strained client's largest cause beside it, so the last lines of a
// run say what its tables show: one limit failing, a strained client, an invalid replay, a partial
// stage, no SLO.
func TestRunFailuresNameTheCause(t *testing.T) {
	errMax := 0.01
	sc := &workload.Scenario{SLO: workload.SLO{TTFT: &workload.Limits{P95: workload.Duration(500 * time.Millisecond)},
		ITL: &workload.Limits{P95: workload.Duration(50 * time.Millisecond)}, ErrorRate: &errMax}}
	v := func(f float64) *float64 { return &f }
	b := func(x bool) *bool { return &x }
	itlOnly := metrics.SLOResult{Verdict: metrics.SLOFail, Checks: []metrics.SLOCheck{
		{Name: "ttft_p95_ms", Limit: 500, Value: v(138), Pass: b(true)},
		{Name: "itl_p95_ms", Limit: 50, Value: v(122), Pass: b(false)},
		{Name: "error_rate", Limit: 0.01, Value: v(0), Pass: b(true)}}}
	stage := func(edit func(*resultfiles.StageReport)) []*resultfiles.StageReport {
		sum := &metrics.StageSummary{SLO: itlOnly}
		sum.Requests.Succeeded, sum.Throughput.Requests = 10, 10
		sum.ErrorRate = metrics.Some(0.0)
		st := &resultfiles.StageReport{Stage: 1, Summary: sum}
		edit(st)
		return []*resultfiles.StageReport{st}
	}
	const slo = "no stage met the SLO (TTFT p95 ≤ 500ms, ITL p95 ≤ 50ms, error rate ≤ 1%): "
	for _, tc := range []struct {
		name   string
		sc     *workload.Scenario
		stages []*resultfiles.StageReport
		want   []string
	}{
		{"one limit failing", sc, stage(func(*resultfiles.StageReport) {}), []string{slo + "stage 01 broke ITL p95 122 ms > 50 ms"}},
		{"strained", sc, stage(func(st *resultfiles.StageReport) {
			st.Injector = metrics.InjectorHealth{Cores: 2, CPUPercent: 50, ReadLagP99Ms: metrics.Some(4.48), RunQueueWaitPercent: metrics.Some(62.0)}
		}), []string{slo + "stage 01 broke ITL p95 122 ms > 50 ms (its client was strained: injector threads waited for a CPU: 0.62 threads at a time on average were ready to run with no core free (over 0.15): other processes were taking the cores, so timestamps may be late; run the client on a quieter machine; its latencies may read longer than the server's, never shorter)"}},
		{"invalid: a replay that fell behind and failed", sc, stage(func(st *resultfiles.StageReport) {
			st.Summary.ReplayValid, st.Summary.ReplayInvalidReason = metrics.Some(false), "send lag p99 25.0 ms > 10 ms"
		}), []string{"stage 01 is not a valid replay: client could not keep the trace's pace: send lag p99 25.0 ms > 10 ms; raise load.max_in_flight, replay slower (load.time_scale > 1), or run on a machine with more cores",
			slo + "stage 01 broke ITL p95 122 ms > 50 ms"}},
		{"partial", sc, stage(func(st *resultfiles.StageReport) { st.Summary.Partial = true }),
			[]string{"no stage can be judged against the SLO (TTFT p95 ≤ 500ms, ITL p95 ≤ 50ms, error rate ≤ 1%): every stage is partial (cut short, or a shard of the run lost: see merge.json), so none is the headline"}},
		{"no SLO", &workload.Scenario{}, stage(func(st *resultfiles.StageReport) { st.Summary.SLO = metrics.SLOResult{Verdict: metrics.SLONA} }), nil},
		{"every answer outlasted the window", &workload.Scenario{}, stage(func(st *resultfiles.StageReport) {
			st.Summary.SLO = metrics.SLOResult{Verdict: metrics.SLONA}
			// The drain cancelled all three: they were still running when the window ended.
			st.Summary.Requests.InWindow, st.Summary.Requests.Succeeded, st.Summary.Requests.Cancelled, st.Summary.Throughput.Requests = 3, 0, 3, 0
			st.Summary.Window.Seconds = 2.000731
		}), []string{"stage 01 failed: no request ended in the window: 3 started in its 2 s, and every answer outlasted it (throughput reads 0): lengthen the stage (load.stages[].duration, or --duration) to several answers' length"}},
		{"every request refused", &workload.Scenario{}, stage(func(st *resultfiles.StageReport) {
			// Failures explain the zero throughput, not the window's length: the line says they failed.
			st.Summary.SLO = metrics.SLOResult{Verdict: metrics.SLONA}
			st.Summary.Requests.InWindow, st.Summary.Requests.Succeeded, st.Summary.Requests.Errors, st.Summary.Throughput.Requests = 10, 0, 10, 0
			st.Summary.Window.Seconds = 1.387627746
		}), []string{"stage 01 failed: no request in its window succeeded (10 errors, 0 cancelled)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Failures(tc.sc, tc.stages, false)); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
		})
	}
}
