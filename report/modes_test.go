package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// Tests of the report for the open-loop modes of issue 16: stage.json's stage fields, the load
// column, the metric tables, the headline without an SLO, the replay verdict, the SLO text.

// modeScenario parses a scenario with the golden one's workload and the given load and slo/cost
// sections.
func modeScenario(t *testing.T, load, rest string) *workload.Scenario {
	t.Helper()
	text := `name: modes
seed: 3
target: {base_url: "http://127.0.0.1:8000/v1", model: m}
personas: {count: 2, system_prompt_tokens: 20}
session: {turns: 1, user_input_tokens: 10, max_output_tokens: 5, think_time: 0s}
load:
` + load + rest
	sc, issues := workload.Parse("modes.yaml", []byte(text), workload.LoadOptions{Getenv: func(string) string { return "" }})
	if err := issues.Err(); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return sc
}

// stageOf is stage i of sc as plload writes it, over one record at 1.5 s (TTFT 100 ms).
func stageOf(t *testing.T, sc *workload.Scenario, i int) *StageReport {
	t.Helper()
	in := StageInput(sc, i)
	in.T0Ns = metrics.Some(t0)
	s := metrics.NewStage(in)
	s.Add(rec(1.5, 100, 10, "a"))
	return NewStageReport("plload test", sc, i, strings.Repeat("a", 64), s.Summary(), EngineCounts{})
}

// TestLoadColumnEveryMode: the load column reads in each mode's words, with the stage's name when it
// has one, and stage.json carries the mode's keys (only those).
func TestLoadColumnEveryMode(t *testing.T) {
	for _, tc := range []struct {
		name, load string
		want       []string // the load column of each stage
		json       []string // stage.json's stage fields of stage 1, as JSON
	}{
		{"concurrency", "  mode: concurrency\n  stages: [{concurrency: 16, warmup: 1s, duration: 10s}, {name: peak, concurrency: 64, duration: 10s}]\n",
			[]string{"c=16", "peak: c=64"}, []string{`"concurrency":16`}},
		{"arrival_rate", "  mode: arrival_rate\n  stages: [{sessions_per_sec: 2, max_concurrency: 32, duration: 10s}, {sessions_per_sec: 0.25, max_concurrency: 8, duration: 10s}]\n",
			[]string{"2.0 sess/s ≤ 32", "0.25 sess/s ≤ 8"}, []string{`"sessions_per_sec":2`, `"max_concurrency":32`}},
		{"request_rate poisson", "  mode: request_rate\n  stages: [{name: average, rate: 20, duration: 10s}, {rate: {from: 10, to: 50, over: 2m}, duration: 3m}]\n",
			[]string{"average: 20 req/s poisson ≤ 1000", "10→50 req/s over 2m poisson ≤ 1000"},
			[]string{`"name":"average"`, `"rate":20`, `"arrival":"poisson"`, `"max_in_flight":1000`}},
		{"request_rate gamma", "  mode: request_rate\n  arrival: gamma\n  cv: 2.5\n  max_in_flight: 64\n  stages: [{rate: 2.5, duration: 10s}]\n",
			[]string{"2.5 req/s gamma cv 2.5 ≤ 64"}, []string{`"rate":2.5`, `"arrival":"gamma"`, `"cv":2.5`, `"max_in_flight":64`}},
		{"request_rate constant", "  mode: request_rate\n  arrival: constant\n  stages: [{rate: 20, duration: 10s}]\n",
			[]string{"20 req/s constant ≤ 1000"}, []string{`"rate":20`, `"arrival":"constant"`, `"max_in_flight":1000`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := modeScenario(t, tc.load, "")
			var got []string
			for i := range sc.Load.Stages {
				got = append(got, loadOf(stageOf(t, sc, i)))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("load column (-want +got):\n%s", diff)
			}
			st := stageOf(t, sc, 0)
			st.Tokenizer = nil // its own "name" is not the stage's
			data, _ := json.Marshal(st)
			for _, w := range tc.json {
				if !strings.Contains(string(data), w) {
					t.Errorf("stage.json lacks %s", w)
				}
			}
			for _, key := range []string{`"rate"`, `"arrival"`, `"cv"`, `"max_in_flight"`, `"time_scale"`, `"name"`} {
				if strings.Contains(string(data), key+":") != strings.Contains(strings.Join(tc.json, " "), key+":") {
					t.Errorf("stage.json has %s = %v, want %v: %s", key, !strings.Contains(strings.Join(tc.json, " "), key), strings.Contains(strings.Join(tc.json, " "), key), data)
				}
			}
		})
	}
}

// TestReplayFields: a replay stage carries its time scale and cap (no rate, no arrival), and reads
// "replay ×0.5 ≤ 1000".
func TestReplayFields(t *testing.T) {
	r := &StageReport{Mode: workload.ModeReplay, Stage: 1}
	openLoopFields(r, workload.LoadPlan{Mode: workload.ModeReplay, MaxInFlight: 1000, TimeScale: 0.5, Arrival: "poisson"}, workload.Stage{})
	if diff := cmp.Diff(&StageReport{Mode: workload.ModeReplay, Stage: 1, MaxInFlight: 1000, TimeScale: 0.5}, r); diff != "" {
		t.Errorf("replay fields (-want +got):\n%s", diff)
	}
	if got := loadOf(r); got != "replay ×0.5 ≤ 1000" {
		t.Errorf("load %q", got)
	}
	r.Name = "trace day 1"
	if got := loadOf(r); got != "trace day 1: replay ×0.5 ≤ 1000" {
		t.Errorf("load %q", got)
	}
}

// TestStageRateJSON: a constant rate is a number in stage.json, a ramp an object; both read back, and
// a request_rate stage.json validates against the schema.
func TestStageRateJSON(t *testing.T) {
	for _, tc := range []struct {
		rate StageRate
		json string
	}{
		{StageRate{From: 20, To: 20}, `20`},
		{StageRate{From: 10, To: 50, Over: "2m"}, `{"from":10,"to":50,"over":"2m"}`},
		{StageRate{From: 0, To: 50, Over: "30s"}, `{"from":0,"to":50,"over":"30s"}`},
	} {
		data, err := json.Marshal(tc.rate)
		if err != nil || string(data) != tc.json {
			t.Errorf("%+v: %s %v, want %s", tc.rate, data, err, tc.json)
		}
		var back StageRate
		if err := json.Unmarshal(data, &back); err != nil || back != tc.rate {
			t.Errorf("%s read back as %+v (%v)", data, back, err)
		}
	}
	var bad StageRate
	if err := json.Unmarshal([]byte(`"fast"`), &bad); err == nil || !strings.Contains(err.Error(), "accepted: a number") {
		t.Errorf("a string rate: %v", err)
	}
	_, stageSchema := schemas(t)
	sc := modeScenario(t, "  mode: request_rate\n  arrival: gamma\n  cv: 2\n  stages: [{name: ramp, rate: {from: 10, to: 50, over: 2m}, duration: 3m}, {rate: 20, duration: 10s}]\n", "")
	for i := range sc.Load.Stages {
		data, _ := json.Marshal(stageOf(t, sc, i))
		if err := validate(t, stageSchema, "stage.json", data); err != nil {
			t.Errorf("stage %d: %v\n%s", i+1, err, data)
		}
	}
}

// openLoopStage is a request_rate stage whose requests went out late: intended at 1.5 s + k, sent
// 40 ms later (k = 0…3), so TTFT from intended is TTFT + 40 ms.
func openLoopStage(t *testing.T, slo string) *StageReport {
	t.Helper()
	sc := modeScenario(t, "  mode: request_rate\n  stages: [{rate: 20, warmup: 1s, duration: 10s}]\n", slo)
	in := StageInput(sc, 0)
	in.T0Ns = metrics.Some(t0)
	s := metrics.NewStage(in)
	for k := range 4 {
		r := rec(1.5+float64(k), 100+float64(10*k), 10, string(rune('a'+k)))
		r.IntendedStartNs = metrics.Some(r.RequestStartNs - 40e6)
		s.Add(r)
	}
	return NewStageReport("plload test", sc, 0, strings.Repeat("a", 64), s.Summary(), EngineCounts{})
}

// TestOpenLoopTable: an open-loop stage gets the table of latency from the send beside latency from
// the intended send, and its send lag; a concurrency stage does not.
func TestOpenLoopTable(t *testing.T) {
	st := openLoopStage(t, "")
	text := StageTable([]*StageReport{st})
	for _, want := range []string{
		"Open loop: from send vs from the intended send (ms):",
		"| stage | load | TTFT mean/median/p99 | TTFT from intended mean/median/p99 | E2E mean/median/p99 | E2E from intended mean/median/p99 | send lag p50/p99/max |",
		"| 01 | 20 req/s poisson ≤ 1000 | 115/115/130 | 155/155/170 | 340/340/355 | 380/380/395 |", // TTFT 100, 110, 120, 130; + 40 ms
		"| 40.00/40.00/40.00 |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	// A concurrency stage's records have intended sends too (the ends of think times): still no
	// open-loop table, that lag is the think lag.
	st.Mode, st.Rate, st.Arrival, st.MaxInFlight, st.Concurrency = workload.ModeConcurrency, nil, "", 0, 4
	if text := StageTable([]*StageReport{st}); strings.Contains(text, "Open loop") {
		t.Errorf("a concurrency run has the open-loop table:\n%s", text)
	}
}

// TestMetricTableLayout: the latency cells are mean/median/p99 (vLLM's layout), plus each statistic
// an SLO limits, in order; throughput has input, output and total tok/s and chars/s; goodput its
// share; in flight its mean and max.
func TestMetricTableLayout(t *testing.T) {
	st := openLoopStage(t, "slo: {ttft: {p95: 500ms}, tpot: {max: 50ms}, e2e: {p90: 10s}}\n")
	text := StageTable([]*StageReport{st})
	for _, want := range []string{
		"| stage | load | active sess | in flight mean (max) | req/s | input tok/s | out tok/s | total tok/s | out chars/s |",
		"| 01 | 20 req/s poisson ≤ 1000 | 0.1 (0–1) | 0.1 (1) | 0.40 | 80.0 | 4.0 | 84.0 | 16.0 |",
		"| goodput req/s (% of req) |", "| 0.40 (100.0%) |",
		"| TTFT mean/median/p95/p99 | TPOT mean/median/p99/max | ITL mean/median/p99 | E2E mean/median/p90/p99 | SLO |",
		"| 115/115/128/130 | 25.0/25.0/25.0/25.0 | 25.0/25.0/30.0 | 340/340/352/355 | PASS |", // TTFT 100, 110, 120, 130
		"| TTFT first turn mean/median/p95/p99 | TTFT later turns mean/median/p95/p99 |",
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
	stages := []*StageReport{stageOf(t, sc, 0), stageOf(t, sc, 1), stageOf(t, sc, 2)}
	stages[0].Summary.Throughput.OutTokPerSec = 3
	stages[1].Summary.Throughput.OutTokPerSec = 9
	stages[2].Summary.Throughput.OutTokPerSec = 12
	stages[2].Summary.Partial = true // the best, but cut short: not the headline
	got := HeadlineText(stages)
	want := "no SLO was set, so no stage is judged; best throughput: stage 02 (load peak: c=4), out tok/s 9.0, $555.556/1M out, $5.5556/1K turns, $0.005556/session" // the costs of its summary (1 tok/s, 0.1 req/s)
	if got != want {
		t.Errorf("headline\n got %q\nwant %q", got, want)
	}
	stages[1].Cost.Unpriced = true
	if got := HeadlineText(stages); !strings.HasSuffix(got, "out tok/s 9.0; no price set: cost N/A") {
		t.Errorf("unpriced: %q", got)
	}
	stages[0].Summary.Partial, stages[1].Summary.Partial = true, true
	if got := HeadlineText(stages); got != "no SLO was set, so no stage is judged, and no stage was measured (each was cut short, had no successful request, or was a replay that fell behind its trace)." {
		t.Errorf("all partial: %q", got)
	}
	md := New(sc, stages[:2], Meta{}).Markdown(sc)
	for _, bad := range []string{"FAIL", "no stage met", "no complete stage passed"} {
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
			[]string{"- SLO: TTFT mean ≤ 200ms, TTFT p95 ≤ 500ms, TPOT p99 ≤ 50ms, E2E p90 ≤ 10s, error rate ≤ 0.01; any known value", "- Cost: $2.5/h × 1 GPU(s)"},
			[]string{"ITL p95", "no SLO set", "no price set"}},
		{"turn-1 keys", "slo: {ttft_p95: 250ms, itl_p95: 50ms, error_rate_max: 0.2}\ncost: {gpu_hourly_usd: 2}\n",
			[]string{"- SLO: TTFT p95 ≤ 250ms, ITL p95 ≤ 50ms, error rate ≤ 0.2; any known value"}, []string{"no SLO set"}},
		{"error rate only", "slo: {error_rate: 0}\n",
			[]string{"- SLO: error rate ≤ 0; any known value"}, []string{"TTFT", "no SLO set"}},
		{"none", "", []string{"- SLO: no SLO set: verdicts are N/A", "- Cost: no price set: cost N/A"}, []string{"≤ 0s", "error rate ≤", "$0/h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := modeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, duration: 10s}]\n", tc.rest)
			r := New(sc, []*StageReport{stageOf(t, sc, 0)}, Meta{Tool: "plload test"})
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
func invalidReplay(t *testing.T) *StageReport {
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
	r := New(sc, []*StageReport{st}, Meta{})
	md := r.Markdown(sc)
	if !strings.Contains(md, "**Headline**: ") || !strings.Contains(md, "\n\n**Warning**: "+want+"\n") {
		t.Errorf("report.md lacks the warning:\n%s", md[:min(len(md), 600)])
	}
	if n := strings.Count(strings.Join(r.Warnings(), "\n"), want); n != 1 {
		t.Errorf("Warnings() has the replay warning %d times: %q", n, r.Warnings())
	}
	runs := []Run{{Dir: "/r/replay", Name: "replay", Stages: []*StageReport{st}}}
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
	if text := StageTable([]*StageReport{st}); !strings.Contains(text, "| INVALID (see warning) |") {
		t.Errorf("the open-loop table lacks the verdict:\n%s", text)
	}
	// Without the metrics' reason, the numbers say why.
	st.Summary.ReplayInvalidReason = ""
	if w := ReplayWarnings([]*StageReport{st}); len(w) != 1 || !strings.Contains(w[0], "send lag p99 14.20 ms, max 40.00 ms") {
		t.Errorf("no reason: %q", w)
	}
	st.Summary.ReplayValid = metrics.Some(true)
	if w := ReplayWarnings([]*StageReport{st}); len(w) != 0 {
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
	h := Handoff([]Run{{Dir: "/r/x", Name: "x", Stages: []*StageReport{stageOf(t, sc, 0)}}}, "")
	if !strings.Contains(h, "No SLO was set, so no stage was judged") || strings.Contains(h, "passes its SLO") || strings.Contains(h, "over the SLO") {
		t.Errorf("handoff without an SLO:\n%s", h)
	}
}

// TestHandoffNewSLOChecks: a failed limit beyond the turn-1 ones (tpot p99, e2e p90) is a problem
// with its evidence and its done condition.
func TestHandoffNewSLOChecks(t *testing.T) {
	st := openLoopStage(t, "slo: {tpot: {p99: 10ms}, e2e: {p90: 100ms}}\n")
	h := Handoff([]Run{{Dir: "/r/x", Name: "x", Stages: []*StageReport{st}}}, "")
	for _, w := range []string{"## 1. stage 01 (load 20 req/s poisson ≤ 1000): TPOT p99 over the SLO", "TPOT p99 25.0 ms against a limit of 10.0 ms; TPOT mean/median/p99 25.0/25.0/25.0 ms",
		"Likely causes: decode batches", "Done when: TPOT p99 ≤ 10.0 ms at stage 01",
		"## 2. stage 01 (load 20 req/s poisson ≤ 1000): E2E p90 over the SLO", "Done when: E2E p90 ≤ 100 ms at stage 01"} {
		if !strings.Contains(h, w) {
			t.Errorf("handoff lacks %q:\n%s", w, h)
		}
	}
}

// TestGateNewMetrics: a rule may name the new metrics, each read from its own field, with its own
// unit (latencies as durations, shares as percents).
func TestGateNewMetrics(t *testing.T) {
	st := openLoopStage(t, "slo: {ttft: {p95: 500ms}}\n")
	s := st.Summary
	s.TPOT.P99, s.E2E.P90, s.SendLag.Max = 41, 900, 7
	s.Goodput.Share = metrics.Some(0.93)
	s.InFlight = metrics.InFlight{Mean: 3.5, Max: 6}
	s.Throughput.InTokPerSec, s.Throughput.TotalTokPerSec = 80, 84
	for _, tc := range []struct {
		rule string
		want float64
	}{
		{"tpot_p99 < 50ms", 41}, {"e2e_p90 < 1s", 900}, {"send_lag_max <= 10ms", 7}, {"goodput_share > 90%", 0.93},
		{"in_flight_mean < 4", 3.5}, {"in_flight_max <= 6", 6}, {"input_tok_s >= 80", 80}, {"total_tok_s > 83/s", 84},
		{"ttft_from_intended_p50 < 200ms", 155}, {"ttft_first_turn_mean < 200ms", 115}, {"out_chars_s == 16", 16},
	} {
		r, err := ParseRule("all: " + tc.rule)
		if err != nil {
			t.Errorf("%s: %v", tc.rule, err)
			continue
		}
		checks := Evaluate([]Rule{r}, []*StageReport{st})
		if len(checks) != 1 || checks[0].Candidate == nil || *checks[0].Candidate != tc.want || checks[0].Status != StatusPass {
			t.Errorf("%s: %+v, want %g passing", tc.rule, checks, tc.want)
		}
	}
	if _, err := ParseRule("tpot_p99 < 50"); err == nil || !strings.Contains(err.Error(), "a duration") {
		t.Errorf("tpot_p99 takes a duration: %v", err)
	}
	if _, err := ParseRule("in_flight_max < 4ms"); err == nil {
		t.Error("in_flight_max took a duration")
	}
}

// TestNoSLOGoodputCell: with no latency limit goodput is N/A and says why.
func TestNoSLOGoodputCell(t *testing.T) {
	st := openLoopStage(t, "")
	if got := goodputText(st); got != "N/A (no latency SLO)" {
		t.Errorf("goodput %q", got)
	}
}

// TestGateHeadlineWithoutSLO: a rule on the headline stage of a run without an SLO fails saying why
// and what to write instead; with an SLO that no stage passed, it says that.
func TestGateHeadlineWithoutSLO(t *testing.T) {
	sc := modeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, warmup: 1s, duration: 10s}]\n", "")
	st := stageOf(t, sc, 0)
	r, _ := ParseRule("ttft_p95 < 1s")
	checks := Evaluate([]Rule{r}, []*StageReport{st})
	if len(checks) != 1 || checks[0].Status != StatusFail || !strings.Contains(checks[0].Message, "no SLO was set, so there is no headline stage") ||
		!strings.Contains(checks[0].Message, "all: or stage N:") {
		t.Errorf("no SLO: %+v", checks)
	}
	_, golden := goldenStages(t)
	golden[0].Summary.SLO.Verdict = metrics.SLOFail
	if checks := Evaluate([]Rule{r}, golden); len(checks) != 1 || checks[0].Message != "no stage passed the SLO, so there is no headline stage" {
		t.Errorf("SLO failed: %+v", checks)
	}
}

// TestHTMLWithoutSLOAndInvalidReplay: report.html does not count stages of a run without an SLO as
// failing it, and shows the replay warning.
func TestHTMLWithoutSLOAndInvalidReplay(t *testing.T) {
	sc := modeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, warmup: 1s, duration: 10s}]\n", "")
	page, err := HTML([]Run{{Name: "x", Stages: []*StageReport{stageOf(t, sc, 0)}}}, "plload test", "")
	if err != nil {
		t.Fatal(err)
	}
	if html := string(page); !strings.Contains(html, "No SLO was set, so no stage is judged.") || strings.Contains(html, "is the first that does not") {
		t.Errorf("report.html without an SLO judges it")
	}
	page, err = HTML([]Run{{Name: "r", Stages: []*StageReport{invalidReplay(t)}}}, "plload test", "")
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
	if pt := Curve([]Run{{Name: "x", Stages: []*StageReport{stageOf(t, sc, 0)}}}).Runs[0].Points[0]; pt.Failed || pt.Pass {
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
	if got := HeadlineText([]*StageReport{st}); !strings.HasPrefix(got, "stage 01: ") {
		t.Fatalf("a valid stage that passed: %q", got)
	}
	st.Summary.ReplayValid = metrics.Some(false)
	want := "no complete stage passed the SLO, so there is no cost at the SLO (1 stage(s) met it as a replay that fell behind its trace: those numbers are not the trace's)."
	if got := HeadlineText([]*StageReport{st}); got != want {
		t.Errorf("headline\n got %q\nwant %q", got, want)
	}
}
