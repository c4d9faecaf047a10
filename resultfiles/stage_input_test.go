package resultfiles_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/resultfiles/resultstest"
	"github.com/plload/plload/workload"
)

// TestStageInputFromSLOBlocks: the scenario's SLO reaches the stage whole — every metric × stat
// block in Latency (ms), the ttft and itl p95 bounds also in the turn-1 fields the charts draw (the
// stricter of a bound set both ways), error_rate or error_rate_max, nothing set when the file sets
// nothing — and a replay stage is marked so its pacing is judged; the limits survive stage.json.
// Catches: blocks dropped, seconds taken for ms, the looser bound kept, a replay not marked.
func TestStageInputFromSLOBlocks(t *testing.T) {
	cases := []struct {
		name, load, slo string
		want            metrics.SLOLimits
		replay          bool
	}{
		{"blocks", "  mode: concurrency\n  stages: [{concurrency: 2, duration: 10s}]\n",
			"slo: {ttft: {p95: 500ms, mean: 300ms}, tpot: {p99: 50ms}, itl: {p95: 40ms}, e2e: {p90: 10s}, ttfo: {max: 2s}, error_rate: 0.01}\n",
			metrics.SLOLimits{TTFTP95Ms: 500, ITLP95Ms: 40, ErrorRateMax: 0.01, Latency: []metrics.LatencyLimit{
				{Metric: "ttft", Stat: "mean", LimitMs: 300}, {Metric: "ttft", Stat: "p95", LimitMs: 500}, {Metric: "ttfo", Stat: "max", LimitMs: 2000},
				{Metric: "tpot", Stat: "p99", LimitMs: 50}, {Metric: "itl", Stat: "p95", LimitMs: 40}, {Metric: "e2e", Stat: "p90", LimitMs: 10000}}},
			false},
		{"turn-1 keys and a block on the same bound", "  mode: concurrency\n  stages: [{concurrency: 2, duration: 10s}]\n",
			"slo: {ttft_p95: 400ms, ttft: {p95: 600ms}, itl_p95: 80ms, error_rate_max: 0}\n",
			metrics.SLOLimits{TTFTP95Ms: 400, ITLP95Ms: 80, ErrorRateMax: 0, Latency: []metrics.LatencyLimit{
				{Metric: "ttft", Stat: "p95", LimitMs: 400}, {Metric: "itl", Stat: "p95", LimitMs: 80}}},
			false},
		{"no slo", "  mode: concurrency\n  stages: [{concurrency: 2, duration: 10s}]\n", "",
			metrics.SLOLimits{ErrorRateUnset: true}, false},
		{"replay", "  mode: replay\n  stages: [{duration: 10s}]\n", "slo: {e2e: {p99: 1s}}\n",
			metrics.SLOLimits{ErrorRateUnset: true, Latency: []metrics.LatencyLimit{{Metric: "e2e", Stat: "p99", LimitMs: 1000}}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := inputScenario(t, tc.load, tc.slo)
			in := resultfiles.StageInput(sc, 0)
			if diff := cmp.Diff(tc.want, in.SLO); diff != "" || in.Replay != tc.replay {
				t.Errorf("replay %v, want %v; SLO (-want +got):\n%s", in.Replay, tc.replay, diff)
			}
			data, err := json.Marshal(in.SLO)
			if err != nil {
				t.Fatal(err)
			}
			var back metrics.SLOLimits
			if err := json.Unmarshal(data, &back); err != nil || !cmp.Equal(back, in.SLO) {
				t.Errorf("stage.json round trip %s: %v (-wrote +read):\n%s", data, err, cmp.Diff(in.SLO, back))
			}
		})
	}
}

// inputScenario is a minimal valid scenario with the given load section and slo line.
func inputScenario(t *testing.T, load, slo string) *workload.Scenario {
	t.Helper()
	text := "name: input\nseed: 1\ntarget: {base_url: \"http://127.0.0.1:8000/v1\", model: m}\n" +
		"personas: {count: 1, system_prompt_tokens: 20}\nsession: {turns: 1, user_input_tokens: 10, max_output_tokens: 5, think_time: 0s}\n"
	if strings.Contains(load, "replay") { // a replay needs a source with times
		path := filepath.Join(t.TempDir(), "t.jsonl")
		if err := os.WriteFile(path, []byte(`{"timestamp": 0, "input_length": 20, "output_length": 4, "hash_ids": [1]}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		text += "workload: {trace: {file: " + strconv.Quote(path) + ", format: mooncake}}\n"
	}
	text += "load:\n" + load + slo
	sc, issues := workload.Parse("input.yaml", []byte(text), workload.LoadOptions{Getenv: func(string) string { return "" }})
	if err := issues.Err(); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return sc
}

// TestReplayStageMatchesSchema: a replay stage with every issue-16 summary field known — goodput,
// cache hit by turn, send lag with a stall (replay_valid false and its reason), chars/s, TTFT by turn
// — writes a stage.json the committed schema accepts. Catches: a summary key or SLO field the schema
// does not list, a type it does not allow.
func TestReplayStageMatchesSchema(t *testing.T) {
	sc := inputScenario(t, "  mode: replay\n  stages: [{duration: 10s}]\n", "slo: {ttft: {p95: 500ms}, tpot: {p99: 50ms}, error_rate: 0.01}\n")
	in := resultfiles.StageInput(sc, 0)
	in.T0Ns = metrics.Some(resultstest.T0)
	s := metrics.NewStage(in)
	for i, lagMs := range []float64{0.2, 0.3, 1500} {
		r := resultstest.Record(1+float64(i), 100, 8, "a")
		r.TurnIndex = i
		r.IntendedStartNs = metrics.Some(r.CreditIssuedNs - int64(lagMs*1e6))
		s.Add(r)
	}
	st := resultfiles.NewStageReport("plload test", sc, 0, strings.Repeat("a", 64), s.Summary(), resultfiles.EngineCounts{})
	sum := st.Summary
	if !sum.Goodput.Share.OK || len(sum.CacheHitByTurn) != 3 || sum.ReplayValid != metrics.Some(false) || !sum.Throughput.OutCharsPerSec.OK {
		t.Fatalf("the fixture must fill every new field: goodput %+v, cache by turn %+v, replay %+v, chars/s %+v",
			sum.Goodput, sum.CacheHitByTurn, sum.ReplayValid, sum.Throughput.OutCharsPerSec)
	}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	_, stageSchema := resultstest.Schemas(t)
	if err := resultstest.Validate(t, stageSchema, "stage.json", data); err != nil {
		t.Fatalf("stage.json does not match its schema: %v\n%s", err, data)
	}
}
