package report

import (
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// Tests of the report for the open-loop modes of issue 16: the metric tables, the headline without an
// SLO, the replay verdict, the SLO text. stage.json's stage fields and the load column are tested in
// package results, the gate's rules on the new metrics in package gate.

// TestOpenLoopTable: an open-loop stage gets the table of latency from the send beside latency from
// the intended send, and its send lag; a concurrency stage does not.
func TestOpenLoopTable(t *testing.T) {
	st := openLoopStage(t, "")
	text := StageTable([]*resultfiles.StageReport{st})
	for _, want := range []string{
		"Open loop: from send vs from the intended send (ms):",
		"| stage | load | TTFT mean/median/p90/p95/p99 | TTFT from intended mean/median/p90/p95/p99 | E2E mean/median/p90/p95/p99 | E2E from intended mean/median/p90/p95/p99 | send lag p50/p99/max |",
		"| 01 | 20 req/s poisson ≤ 1000 | 115/115/127/128/130 ‡ | 155/155/167/168/170 ‡ | 340/340/352/354/355 ‡ | 380/380/392/394/395 ‡ |", // TTFT 100, 110, 120, 130; + 40 ms
		"| 40.00/40.00/40.00 |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	// A concurrency stage's records have intended sends too (the ends of think times): still no
	// open-loop table, that lag is the think lag.
	st.Mode, st.Rate, st.Arrival, st.MaxInFlight, st.Concurrency = workload.ModeConcurrency, nil, "", 0, 4
	if text := StageTable([]*resultfiles.StageReport{st}); strings.Contains(text, "Open loop") {
		t.Errorf("a concurrency run has the open-loop table:\n%s", text)
	}
}

// TestMetricTableLayout: the latency cells are mean/median/p90/p95/p99 whatever the SLO, the
// statistics an SLO limits in bold (a limit on the max adds a max after the five, in every cell, so
// the value judged is in the table); the latency table
// counts the requests, and marks percentiles of fewer than 20 (‡, with its footnote); throughput has
// input, output and total tok/s and chars/s; goodput its share; in flight its mean and max.
func TestMetricTableLayout(t *testing.T) {
	st := openLoopStage(t, "slo: {ttft: {p95: 500ms}, tpot: {max: 50ms}, e2e: {p90: 10s}}\n")
	text := StageTable([]*resultfiles.StageReport{st})
	for _, want := range []string{
		"| stage | load | active sess | in flight mean (max) | req/s | input tok/s | out tok/s | total tok/s | out chars/s |",
		"| 01 | 20 req/s poisson ≤ 1000 | 0.1 (0–1) | 0.1 (1) | 0.40 | 80.0 | 4.0 | 84.0 | 16.0 |",
		"| goodput req/s (% of req) |", "| 0.40 (100.0%) |",
		"| requests (ok) | TTFT mean/median/p90/p95/p99/max | TPOT mean/median/p90/p95/p99/max | ITL mean/median/p90/p95/p99/max | E2E mean/median/p90/p95/p99/max | SLO |",
		"| 4 (4) | 115/115/127/**128**/130/130 ‡ | 25.0/25.0/25.0/25.0/25.0/**25.0** ‡ | 25.0/25.0/30.0/30.0/30.0/30.0 ‡ | 340/340/**352**/354/355/355 ‡ | PASS |", // TTFT 100, 110, 120, 130
		"| TTFT first turn mean/median/p90/p95/p99/max | TTFT later turns mean/median/p90/p95/p99/max |",
		"In bold: the statistic the SLO limits.",
		"‡: the percentiles rest on fewer than 20 requests",
		"| t1 64.0% |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
}

// TestCacheByTurnCell: turns are numbered from 1; a long session shows its first turns, then … and
// its last; a turn without prompt usage is N/A.
func TestCacheByTurnCell(t *testing.T) {
	turn := func(i int, v float64, ok bool) metrics.TurnCacheHit {
		return metrics.TurnCacheHit{Turn: i, Requests: 3, CacheHit: metrics.Opt[float64]{V: v, OK: ok}}
	}
	if got := cacheByTurn([]metrics.TurnCacheHit{turn(0, 0, true), turn(1, 0.64, true), turn(2, 0, false)}); got != "t1 0.0% · t2 64.0% · t3 N/A" {
		t.Errorf("three turns: %q", got)
	}
	var long []metrics.TurnCacheHit
	for i := range 10 {
		long = append(long, turn(i, float64(i)/10, true))
	}
	if got := cacheByTurn(long); got != "t1 0.0% · t2 10.0% · t3 20.0% · t4 30.0% · t5 40.0% · … · t10 90.0%" {
		t.Errorf("ten turns: %q", got)
	}
	if got := cacheByTurn(nil); got != "N/A" {
		t.Errorf("none: %q", got)
	}
}

// TestHeadlineWithoutSLO: with no SLO set the headline says so and names the complete stage with the
// highest out tok/s as the best throughput, with its cost or "no price set"; it never says a stage
// failed.
func TestHeadlineWithoutSLO(t *testing.T) {
	sc := modeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, warmup: 1s, duration: 10s}, {name: peak, concurrency: 4, warmup: 1s, duration: 10s}, {concurrency: 8, warmup: 1s, duration: 10s}]\n",
		"cost: {gpu_hourly_usd: 2}\n")
	stages := []*resultfiles.StageReport{stageOf(t, sc, 0), stageOf(t, sc, 1), stageOf(t, sc, 2)}
	stages[0].Summary.Throughput.OutTokPerSec = 3
	stages[1].Summary.Throughput.OutTokPerSec = 9
	stages[2].Summary.Throughput.OutTokPerSec = 12
	stages[2].Summary.Partial = true // the best, but cut short: not the headline
	got := resultfiles.HeadlineText(stages)
	want := "no SLO was set, so no stage is judged; best throughput: stage 02 (load peak: c=4), out tok/s 9.0, $555.556/1M out, $5.5556/1K turns, $0.005556/session" // the costs of its summary (1 tok/s, 0.1 req/s)
	if got != want {
		t.Errorf("headline\n got %q\nwant %q", got, want)
	}
	stages[1].Cost.Unpriced = true
	if got := resultfiles.HeadlineText(stages); !strings.HasSuffix(got, "out tok/s 9.0; no price set: cost N/A") {
		t.Errorf("unpriced: %q", got)
	}
	stages[0].Summary.Partial, stages[1].Summary.Partial = true, true
	if got := resultfiles.HeadlineText(stages); got != "no SLO was set, so no stage is judged, and no stage was measured (each was cut short, had no successful request, or was a replay that fell behind its trace)." {
		t.Errorf("all partial: %q", got)
	}
	md := Markdown(resultfiles.New(sc, stages[:2], resultfiles.Meta{}), sc)
	for _, bad := range []string{"FAIL", "no stage met", "no complete stage passed", "no stage passed", "no valid stage passed"} {
		if strings.Contains(md, bad) {
			t.Errorf("report.md without an SLO says %q", bad)
		}
	}
}

// TestSLOMethodText: the method lists every limit the scenario sets, blocks and turn-1 keys alike;
// with none it says verdicts are N/A, and without a price that cost is N/A.
func TestSLOMethodText(t *testing.T) {
	for _, tc := range []struct {
		name, rest string
		want, not  []string
	}{
		{"blocks", "slo: {ttft: {p95: 500ms, mean: 200ms}, tpot: {p99: 50ms}, e2e: {p90: 10s}, error_rate: 0.01}\ncost: {gpu_hourly_usd: 2.5}\n",
			[]string{"- SLO: TTFT mean ≤ 200ms, TTFT p95 ≤ 500ms, TPOT p99 ≤ 50ms, E2E p90 ≤ 10s, error rate ≤ 1%; any known value", "- Cost: $2.5/h × 1 GPU(s)"},
			[]string{"ITL p95", "no SLO set", "no price set"}},
		{"turn-1 keys", "slo: {ttft_p95: 250ms, itl_p95: 50ms, error_rate_max: 0.2}\ncost: {gpu_hourly_usd: 2}\n",
			[]string{"- SLO: TTFT p95 ≤ 250ms, ITL p95 ≤ 50ms, error rate ≤ 20%; any known value"}, []string{"no SLO set"}},
		{"error rate only", "slo: {error_rate: 0}\n",
			[]string{"- SLO: error rate ≤ 0%; any known value"}, []string{"TTFT", "no SLO set"}},
		{"none", "", []string{"- SLO: no SLO set: verdicts are N/A", "- Cost: no price set: cost N/A"}, []string{"≤ 0s", "error rate ≤", "$0/h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := modeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, duration: 10s}]\n", tc.rest)
			r := resultfiles.New(sc, []*resultfiles.StageReport{stageOf(t, sc, 0)}, resultfiles.Meta{Tool: "plload test"})
			var lines []string // the SLO and cost lines of the method
			for _, l := range strings.Split(methodSection(r, sc), "\n") {
				if strings.HasPrefix(l, "- SLO:") || strings.HasPrefix(l, "- Cost:") {
					lines = append(lines, l)
				}
			}
			text := strings.Join(lines, "\n")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(text, n) {
					t.Errorf("says %q:\n%s", n, text)
				}
			}
		})
	}
}

// invalidReplay is a replay stage whose client fell behind its trace.
func invalidReplay(t *testing.T) *resultfiles.StageReport {
	t.Helper()
	_, stages := goldenStages(t)
	st := stages[0]
	st.Mode, st.MaxInFlight, st.TimeScale = workload.ModeReplay, 1000, 0.5
	st.Summary.ReplayValid = metrics.Some(false)
	st.Summary.ReplayInvalidReason = "send lag p99 14.20 ms > 10 ms"
	st.Summary.SendLag = metrics.Dist{N: 100, P50: 1.5, P99: 14.2, Max: 40}
	return st
}

// TestReplayInvalidWarning: a replay that could not keep its trace's pace says so in report.md (under
// the headline), the terminal's warnings, `plload report` and the handoff; a valid one does not.
func TestReplayInvalidWarning(t *testing.T) {
	const want = "stage 01: client could not keep the trace's pace: send lag p99 14.20 ms > 10 ms"
	st := invalidReplay(t)
	st.Summary.Warnings = append(st.Summary.Warnings, "client could not keep the trace's pace: send lag p99 14.20 ms > 10 ms")
	sc, _ := goldenStages(t)
	r := resultfiles.New(sc, []*resultfiles.StageReport{st}, resultfiles.Meta{})
	md := Markdown(r, sc)
	if !strings.Contains(md, "**Headline**: ") || !strings.Contains(md, "\n\n**Warning**: "+want+"\n") {
		t.Errorf("report.md lacks the warning:\n%s", md[:min(len(md), 600)])
	}
	if n := strings.Count(strings.Join(r.Warnings(), "\n"), want); n != 1 {
		t.Errorf("Warnings() has the replay warning %d times: %q", n, r.Warnings())
	}
	runs := []Run{{Dir: "/r/replay", Name: "replay", Stages: []*resultfiles.StageReport{st}}}
	if text := Comparison(runs); !strings.Contains(text, "warning: replay: "+want) {
		t.Errorf("plload report lacks the warning:\n%s", text)
	}
	h := Handoff(runs, "")
	for _, w := range []string{"stage 01 (load replay ×0.5 ≤ 1000): the replay is not valid", "client could not keep the trace's pace: send lag p99 14.20 ms > 10 ms",
		"send lag p50/p99/max 1.50/14.20/40.00 ms", "Done when: stage 01 has replay_valid: true"} {
		if !strings.Contains(h, w) {
			t.Errorf("handoff lacks %q:\n%s", w, h)
		}
	}
	if text := StageTable([]*resultfiles.StageReport{st}); !strings.Contains(text, "| INVALID (see warning) |") {
		t.Errorf("the open-loop table lacks the verdict:\n%s", text)
	}
	// Without the metrics' reason, the numbers say why.
	st.Summary.ReplayInvalidReason = ""
	if w := resultfiles.ReplayWarnings([]*resultfiles.StageReport{st}); len(w) != 1 || !strings.Contains(w[0], "send lag p99 14.20 ms, max 40.00 ms") {
		t.Errorf("no reason: %q", w)
	}
	st.Summary.ReplayValid = metrics.Some(true)
	if w := resultfiles.ReplayWarnings([]*resultfiles.StageReport{st}); len(w) != 0 {
		t.Errorf("a valid replay warns: %q", w)
	}
	if h := Handoff(runs, ""); strings.Contains(h, "not valid") {
		t.Errorf("a valid replay is a problem in the handoff:\n%s", h)
	}
}

// TestHandoffWithoutSLO: a run with no SLO has no SLO problem and says no stage was judged, not that
// every stage passed.
func TestHandoffWithoutSLO(t *testing.T) {
	sc := modeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, warmup: 1s, duration: 10s}]\n", "")
	h := Handoff([]Run{{Dir: "/r/x", Name: "x", Stages: []*resultfiles.StageReport{stageOf(t, sc, 0)}}}, "")
	if !strings.Contains(h, "No SLO was set, so no stage was judged") || strings.Contains(h, "passes its SLO") || strings.Contains(h, "over the SLO") {
		t.Errorf("handoff without an SLO:\n%s", h)
	}
}

// TestHandoffNewSLOChecks: a failed limit beyond the turn-1 ones (tpot p99, e2e p90) is a problem
// with its evidence and its done condition.
func TestHandoffNewSLOChecks(t *testing.T) {
	st := openLoopStage(t, "slo: {tpot: {p99: 10ms}, e2e: {p90: 100ms}}\n")
	h := Handoff([]Run{{Dir: "/r/x", Name: "x", Stages: []*resultfiles.StageReport{st}}}, "")
	for _, w := range []string{"## 1. stage 01 (load 20 req/s poisson ≤ 1000): TPOT p99 over the SLO", "TPOT p99 25.0 ms against a limit of 10.0 ms; TPOT mean/median/p99 25.0/25.0/25.0 ms",
		"Likely causes: decode batches", "Done when: TPOT p99 ≤ 10.0 ms at stage 01",
		"## 2. stage 01 (load 20 req/s poisson ≤ 1000): E2E p90 over the SLO", "Done when: E2E p90 ≤ 100 ms at stage 01"} {
		if !strings.Contains(h, w) {
			t.Errorf("handoff lacks %q:\n%s", w, h)
		}
	}
}

// TestNoSLOGoodputCell: with no latency limit goodput is N/A and says why.
func TestNoSLOGoodputCell(t *testing.T) {
	st := openLoopStage(t, "")
	if got := goodputText(st); got != "N/A (no latency SLO)" {
		t.Errorf("goodput %q", got)
	}
}

// TestHTMLWithoutSLOAndInvalidReplay: report.html does not count stages of a run without an SLO as
// failing it, and shows the replay warning.
func TestHTMLWithoutSLOAndInvalidReplay(t *testing.T) {
	sc := modeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, warmup: 1s, duration: 10s}]\n", "")
	page, err := HTML([]Run{{Name: "x", Stages: []*resultfiles.StageReport{stageOf(t, sc, 0)}}}, "plload test", "")
	if err != nil {
		t.Fatal(err)
	}
	if html := string(page); !strings.Contains(html, "No SLO was set, so no stage is judged.") || strings.Contains(html, "is the first that does not") {
		t.Errorf("report.html without an SLO judges it")
	}
	page, err = HTML([]Run{{Name: "r", Stages: []*resultfiles.StageReport{invalidReplay(t)}}}, "plload test", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "stage 01: client could not keep the trace's pace: send lag p99 14.20 ms &gt; 10 ms") {
		t.Errorf("report.html lacks the replay warning")
	}
}

// TestChartWithoutSLO: the chart marks no stage of a run without an SLO as failed; with an SLO, the
// stage that did not pass is marked.
func TestChartWithoutSLO(t *testing.T) {
	sc := modeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, warmup: 1s, duration: 10s}]\n", "")
	if pt := Curve([]Run{{Name: "x", Stages: []*resultfiles.StageReport{stageOf(t, sc, 0)}}}).Runs[0].Points[0]; pt.Failed || pt.Pass {
		t.Errorf("a stage without an SLO: %+v", pt)
	}
	_, golden := goldenStages(t)
	if pts := Curve([]Run{{Name: "g", Stages: golden}}).Runs[0].Points; pts[0].Failed || !pts[1].Failed {
		t.Errorf("golden stages: %+v", pts)
	}
}

// TestInvalidReplayIsNotTheHeadline: a replay stage that met its SLO but fell behind its trace is not
// the headline, and the headline says why there is none.
func TestInvalidReplayIsNotTheHeadline(t *testing.T) {
	sc := modeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, warmup: 1s, duration: 10s}]\n", "slo: {ttft_p95: 1s}\ncost: {gpu_hourly_usd: 2}\n")
	st := stageOf(t, sc, 0)
	st.Summary.SLO.Verdict = metrics.SLOPass
	if got := resultfiles.HeadlineText([]*resultfiles.StageReport{st}); !strings.HasPrefix(got, "stage 01: ") {
		t.Fatalf("a valid stage that passed: %q", got)
	}
	st.Summary.ReplayValid = metrics.Some(false)
	want := "no valid stage passed the SLO, so there is no cost at the SLO (1 stage(s) met it as a replay that fell behind its trace: those numbers are not the trace's)."
	if got := resultfiles.HeadlineText([]*resultfiles.StageReport{st}); got != want {
		t.Errorf("headline\n got %q\nwant %q", got, want)
	}
}
