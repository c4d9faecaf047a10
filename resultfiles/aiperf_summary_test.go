package resultfiles

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// summaryFilesScenario is two closed-loop stages against a mock that streams reasoning before the
// answer (so TTFO differs from TTFT), jitters its times and fails one request in ten.
const summaryFilesScenario = `name: summary-files
seed: 3
target: {base_url: %s, model: m, timeout: 30s}
personas: {count: 2, system_prompt_tokens: 10}
session: {turns: 2, user_input_tokens: 10, max_output_tokens: 8, think_time: 0s}
load:
  mode: concurrency
  drain_timeout: 2s
  stages: [{concurrency: 3, warmup: 200ms, duration: 700ms}, {concurrency: 6, warmup: 100ms, duration: 600ms}]
`

// runSummaryFiles runs the scenario against a real mock on loopback and writes each stage as plload
// run does (SummarizeFile, NewStageReport, Write); it returns the stage directories.
func runSummaryFiles(t *testing.T) []string {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.TPS, cfg.Jitter, cfg.ReasoningTokens, cfg.ErrorRate, cfg.Seed = 15*time.Millisecond, 400, 0.3, 2, 0.1, 5
	m, err := mock.Start(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m.Close(ctx)
	}()
	sc, issues := workload.Parse("summary.yaml", []byte(fmt.Sprintf(summaryFilesScenario, m.BaseURL())), workload.LoadOptions{ForRun: true})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	// Two stages of under a second and a 2 s drain: a minute means the run hung, and says so.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := engine.Run(ctx, engine.Config{Scenario: sc, Workload: w, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("the run did not finish: %v", err)
	}
	var dirs []string
	for i, r := range res {
		in := StageInput(sc, i)
		in.T0Ns = metrics.Some(r.T0Ns)
		sum, err := metrics.SummarizeFile(filepath.Join(r.Dir, "profile_export.jsonl"), in, false)
		if err != nil {
			t.Fatal(err)
		}
		st := NewStageReport("plload test", sc, i, w.Stages[i].SHA256, sum, EngineCounts{Issued: r.Issued})
		if err := st.Write(r.Dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, r.Dir)
	}
	if len(dirs) != 2 {
		t.Fatalf("%d stages ran, want 2", len(dirs))
	}
	return dirs
}

// aiperfDistKeys maps each AIPerf metric with a distribution to stage.json's summary key for the
// same quantity: the test's own statement of the mapping, not the writer's.
var aiperfDistKeys = map[string]string{
	"time_to_first_token": "ttft_ms", "time_to_second_token": "ttst_ms", "time_to_first_output_token": "ttfo_ms",
	"request_latency": "e2e_ms", "inter_token_latency": "tpot_ms", "inter_chunk_latency": "itl_ms",
	"output_sequence_length": "osl_tokens", "input_sequence_length": "isl_tokens",
	"output_token_throughput_per_user": "out_tok_per_sec_per_user",
}

// aiperfStatOf maps AIPerf's statistic names to stage.json's.
func aiperfStatOf(k string) string {
	if k == "avg" {
		return "mean"
	}
	return k
}

// readJSON reads a file of dir into a generic value, failing the test when it is not JSON.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: not JSON: %v", path, err)
	}
	return v
}

// stageSingles is stage.json's value of each single-value AIPerf metric.
func stageSingles(s *metrics.StageSummary) map[string]float64 {
	return map[string]float64{
		"request_throughput": s.Throughput.ReqPerSec, "output_token_throughput": s.Throughput.OutTokPerSec,
		"request_count": float64(s.Throughput.Requests), "error_request_count": float64(s.Requests.Errors + s.Requests.Cancelled),
		"benchmark_duration": s.Window.Seconds,
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestAIPerfSummaryEqualsStageJSON: every stage of a real run has profile_export_aiperf.json, and
// each of its numbers is stage.json's (read back from the file) for the same quantity.
func TestAIPerfSummaryEqualsStageJSON(t *testing.T) {
	for _, dir := range runSummaryFiles(t) {
		st, err := ReadStage(filepath.Join(dir, "stage.json"))
		if err != nil {
			t.Fatal(err)
		}
		var stageRaw struct {
			Summary map[string]json.RawMessage `json:"summary"`
		}
		data, _ := os.ReadFile(filepath.Join(dir, "stage.json"))
		if err := json.Unmarshal(data, &stageRaw); err != nil {
			t.Fatal(err)
		}
		got := readJSON(t, filepath.Join(dir, AIPerfSummaryJSON))
		if st.Summary.Requests.Errors == 0 || !st.Summary.TTST.Known() || st.Summary.TTFO.Mean == st.Summary.TTFT.Mean {
			t.Fatalf("%s: the run should have errors, a TTST and TTFO ≠ TTFT: %+v", dir, st.Summary.Requests)
		}
		for tag, key := range aiperfDistKeys {
			var d metrics.Dist
			if err := json.Unmarshal(stageRaw.Summary[key], &d); err != nil || !d.Known() {
				t.Fatalf("%s: stage.json summary.%s: %v (%s)", dir, key, err, stageRaw.Summary[key])
			}
			m, ok := got[tag].(map[string]any)
			if !ok {
				t.Fatalf("%s: %s missing or not an object: %v", dir, tag, got[tag])
			}
			for _, k := range AIPerfStatKeys {
				want, _ := d.Stat(aiperfStatOf(k))
				if v, ok := m[k].(float64); !ok || !near(v, want) {
					t.Errorf("%s: %s.%s = %v, stage.json %s.%s = %v", dir, tag, k, m[k], key, aiperfStatOf(k), want)
				}
			}
		}
		for tag, want := range stageSingles(st.Summary) {
			m, _ := got[tag].(map[string]any)
			if v, ok := m["avg"].(float64); !ok || !near(v, want) || len(m) != 2 {
				t.Errorf("%s: %s = %v, stage.json %v (want only unit and avg)", dir, tag, m, want)
			}
		}
		checkAIPerfErrors(t, dir, got["error_summary"], st.Summary.ErrorKinds)
		if start, _ := time.Parse(time.RFC3339Nano, got["start_time"].(string)); start.UnixNano()/1000 != st.Summary.Window.WNs/1000 {
			t.Errorf("%s: start_time %v, window w_ns %d", dir, got["start_time"], st.Summary.Window.WNs)
		}
		if end, _ := time.Parse(time.RFC3339Nano, got["end_time"].(string)); end.UnixNano()/1000 != st.Summary.Window.EEffNs/1000 {
			t.Errorf("%s: end_time %v, window e_eff_ns %d", dir, got["end_time"], st.Summary.Window.EEffNs)
		}
		if got["was_cancelled"] != false {
			t.Errorf("%s: was_cancelled %v for a stage that ran to its end", dir, got["was_cancelled"])
		}
	}
}

// checkAIPerfErrors compares error_summary with stage.json's error kinds.
func checkAIPerfErrors(t *testing.T, dir string, v any, kinds map[string]int) {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: error_summary is %T, want a list", dir, v)
	}
	got := map[string]int{}
	for _, e := range list {
		e := e.(map[string]any)
		d := e["error_details"].(map[string]any)
		kind := d["type"].(string)
		if c, ok := d["code"].(float64); ok {
			kind = fmt.Sprintf("%d %s", int(c), kind)
		}
		got[kind] = int(e["count"].(float64))
	}
	if diff := cmp.Diff(kinds, got); diff != "" {
		t.Errorf("%s: error_summary against stage.json error_kinds (-stage.json +file):\n%s", dir, diff)
	}
}

// TestAIPerfSummaryCSV: profile_export_aiperf.csv has AIPerf's two sections, rows sorted by tag,
// named "Header (unit)", with stage.json's numbers to AIPerf's two decimals.
func TestAIPerfSummaryCSV(t *testing.T) {
	dir := runSummaryFiles(t)[1]
	st, err := ReadStage(filepath.Join(dir, "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, AIPerfSummaryCSV))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.HasPrefix(text, "Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\r\n") {
		t.Fatalf("header row:\n%s", text)
	}
	parts := strings.Split(text, "\r\n\r\n")
	if len(parts) != 2 || !strings.HasPrefix(parts[1], "Metric,Value\r\n") {
		t.Fatalf("want two sections split by a blank line, the second headed Metric,Value:\n%q", text)
	}
	dists, err := csv.NewReader(strings.NewReader(parts[0])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	singles, err := csv.NewReader(strings.NewReader(parts[1])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	wantDists := []string{ // sorted by tag
		"Input Sequence Length (tokens)", "Inter Chunk Latency (ms)", "Inter Token Latency (ms)",
		"Output Sequence Length (tokens)", "Output Token Throughput Per User (tokens/sec/user)", "Request Latency (ms)",
		"Time to First Output Token (ms)", "Time to First Token (ms)", "Time to Second Token (ms)",
	}
	byName := map[string]*metrics.Dist{"Input Sequence Length (tokens)": &st.Summary.ISL, "Inter Chunk Latency (ms)": &st.Summary.ITL,
		"Inter Token Latency (ms)": &st.Summary.TPOT, "Output Sequence Length (tokens)": &st.Summary.OSL,
		"Output Token Throughput Per User (tokens/sec/user)": &st.Summary.PerUser, "Request Latency (ms)": &st.Summary.E2E,
		"Time to First Output Token (ms)": &st.Summary.TTFO, "Time to First Token (ms)": &st.Summary.TTFT,
		"Time to Second Token (ms)": &st.Summary.TTST}
	var names []string
	for _, row := range dists[1:] {
		names = append(names, row[0])
		d, ok := byName[row[0]]
		if !ok || len(row) != len(AIPerfStatKeys)+1 {
			t.Errorf("row %q: not a metric of the stage, or not %d columns", row, len(AIPerfStatKeys)+1)
			continue
		}
		for i, k := range AIPerfStatKeys {
			want, _ := d.Stat(aiperfStatOf(k))
			if v, err := strconv.ParseFloat(row[i+1], 64); err != nil || math.Abs(v-want) > 0.005+1e-9 || !twoDecimals.MatchString(row[i+1]) {
				t.Errorf("%s %s = %q, stage.json %v (two decimals)", row[0], k, row[i+1], want)
			}
		}
	}
	if diff := cmp.Diff(wantDists, names); diff != "" {
		t.Errorf("metric rows (-want +got):\n%s", diff)
	}
	s := stageSingles(st.Summary)
	wantSingles := [][]string{{"Metric", "Value"},
		{"Benchmark Duration (sec)", fmt.Sprintf("%.2f", s["benchmark_duration"])},
		{"Error Request Count", fmt.Sprintf("%.2f", s["error_request_count"])},
		{"Output Token Throughput (tokens/sec)", fmt.Sprintf("%.2f", s["output_token_throughput"])},
		{"Request Count", fmt.Sprintf("%.2f", s["request_count"])},
		{"Request Throughput (requests/sec)", fmt.Sprintf("%.2f", s["request_throughput"])},
	}
	if diff := cmp.Diff(wantSingles, singles); diff != "" {
		t.Errorf("single-value section (-want +got):\n%s", diff)
	}
}

// aiperfFixtureKeys is the key set of a real AIPerf summary (fixtures/aiperf/profile_export_aiperf.json
// in the project's shared files, AIPerf ~0.3): its top-level keys and each metric's keys. The file
// plload writes must use only these names, and a metric the same keys as AIPerf's metric of that tag.
var twoDecimals = regexp.MustCompile(`^-?[0-9]+\.[0-9]{2}$`)

var aiperfFixtureKeys = map[string][]string{
	"benchmark_duration": {"avg", "unit"}, "error_request_count": nil, "error_summary": nil, "end_time": nil,
	"input_config": nil, "start_time": nil, "was_cancelled": nil,
	"request_throughput": {"avg", "unit"}, "request_count": {"avg", "unit"}, "output_token_throughput": {"avg", "unit"},
	"time_to_first_token": aiperfDistFixtureKeys, "time_to_second_token": aiperfDistFixtureKeys,
	"time_to_first_output_token": aiperfDistFixtureKeys, "request_latency": aiperfDistFixtureKeys,
	"inter_token_latency": aiperfDistFixtureKeys, "inter_chunk_latency": aiperfDistFixtureKeys,
	"output_sequence_length": aiperfDistFixtureKeys, "input_sequence_length": aiperfDistFixtureKeys,
	"output_token_throughput_per_user": aiperfDistFixtureKeys,
	// in the fixture but not written by plload
	"goodput": nil, "good_request_count": nil, "output_token_count": nil, "reasoning_token_count": nil,
	"min_request_timestamp": nil, "max_response_timestamp": nil, "total_output_tokens": nil, "total_reasoning_tokens": nil,
	"total_isl": nil, "total_osl": nil, "error_isl": nil, "total_error_isl": nil, "telemetry_data": nil, "prefill_throughput": nil,
}

var aiperfDistFixtureKeys = []string{"avg", "max", "min", "p1", "p10", "p25", "p5", "p50", "p75", "p90", "p95", "p99", "std", "unit"}

// TestAIPerfSummaryKeys: the top-level keys and each metric's keys are AIPerf's (golden-style, against
// the fixture's key set), and every metric the issue lists is written.
func TestAIPerfSummaryKeys(t *testing.T) {
	dir := runSummaryFiles(t)[0]
	got := readJSON(t, filepath.Join(dir, AIPerfSummaryJSON))
	for k, v := range got {
		fixture, known := aiperfFixtureKeys[k]
		if !known {
			t.Errorf("key %q is not in AIPerf's summary", k)
			continue
		}
		m, isMetric := v.(map[string]any)
		if !isMetric || fixture == nil {
			continue
		}
		var keys []string
		for mk := range m {
			keys = append(keys, mk)
		}
		sort.Strings(keys)
		if k == "error_request_count" { // null in the fixture (no errors): AIPerf's count metrics carry unit and avg
			fixture = []string{"avg", "unit"}
		}
		if diff := cmp.Diff(fixture, keys); diff != "" {
			t.Errorf("%s's keys (-AIPerf +plload):\n%s", k, diff)
		}
	}
	for _, k := range []string{"time_to_first_token", "time_to_second_token", "time_to_first_output_token", "request_latency",
		"inter_token_latency", "inter_chunk_latency", "output_sequence_length", "input_sequence_length",
		"output_token_throughput_per_user", "request_throughput", "output_token_throughput", "request_count",
		"error_request_count", "benchmark_duration", "input_config", "was_cancelled", "error_summary", "start_time", "end_time"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s missing", k)
		}
	}
	units := map[string]string{"time_to_first_token": "ms", "inter_chunk_latency": "ms", "output_sequence_length": "tokens",
		"output_token_throughput_per_user": "tokens/sec/user", "request_throughput": "requests/sec",
		"output_token_throughput": "tokens/sec", "request_count": "requests", "benchmark_duration": "sec"}
	for k, u := range units {
		if m, _ := got[k].(map[string]any); m["unit"] != u {
			t.Errorf("%s unit %v, AIPerf writes %q", k, m["unit"], u)
		}
	}
}

// TestAIPerfErrorSummary: stage.json's error kinds become AIPerf's error_summary, most frequent first,
// with a null code where the kind has none.
func TestAIPerfErrorSummary(t *testing.T) {
	for _, c := range []struct {
		name  string
		kinds map[string]int
		want  string
	}{
		{"none", nil, `[]`},
		{"codes and types", map[string]int{"429 Too Many Requests": 2, "TransportError": 5, "499 RequestCancellationError": 2},
			`[{"error_details":{"code":null,"type":"TransportError","message":""},"count":5},` +
				`{"error_details":{"code":429,"type":"Too Many Requests","message":""},"count":2},` +
				`{"error_details":{"code":499,"type":"RequestCancellationError","message":""},"count":2}]`},
		{"a type with a space and no code", map[string]int{"Odd Error": 1},
			`[{"error_details":{"code":null,"type":"Odd Error","message":""},"count":1}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := json.Marshal(aiperfErrors(c.kinds))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
