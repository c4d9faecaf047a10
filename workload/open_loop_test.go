package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRateRampAndMean: a ramp runs from → to over `over`, then holds; its mean over a window is the
// area under that line ÷ the window.
func TestRateRampAndMean(t *testing.T) {
	r := Rate{From: 10, To: 50, Over: Duration(2 * time.Minute)}
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{0, 10}, {30 * time.Second, 20}, {time.Minute, 30}, {2 * time.Minute, 50}, {5 * time.Minute, 50}} {
		if got := r.At(c.at); got != c.want {
			t.Errorf("At(%v) = %g, want %g", c.at, got, c.want)
		}
	}
	// 2 min ramp (mean 30) + 2 min at 50 → 40.
	if got := r.Mean(4 * time.Minute); got != 40 {
		t.Errorf("Mean(4m) = %g, want 40", got)
	}
	if got := r.Mean(time.Minute); got != 20 {
		t.Errorf("Mean(1m) = %g, want 20 (the ramp's first minute: 10 → 30)", got)
	}
	if c := ConstantRate(7); c.IsRamp() || c.At(time.Hour) != 7 || c.Mean(time.Second) != 7 {
		t.Errorf("a constant rate changed: %+v", c)
	}
}

const openLoopScenario = `name: ol
seed: 3
target: {base_url: mock, session_header: X-Session-ID}
personas: {count: 2, system_prompt_tokens: 20}
session: {turns: 1, user_input_tokens: 10, max_output_tokens: 5, think_time: 0s}
load:
  mode: request_rate
  arrival: gamma
  cv: 2.5
  max_in_flight: 64
  stages:
    - {name: average, rate: 20, warmup: 1s, duration: 10s}
    - {name: ramp, rate: {from: 10, to: 50, over: 2m}, duration: 3m}
slo: {ttft: {p95: 500ms}, tpot: {p99: 50ms}, e2e: {p90: 10s}, error_rate: 0.01}
cost: {gpu_hourly_usd: 2.5}
`

// TestOpenLoopScenarioRoundTrips: the request_rate keys, stage names, ramps and SLO blocks are read,
// and scenario.resolved.yaml writes them back so that reading it again gives the same scenario.
func TestOpenLoopScenarioRoundTrips(t *testing.T) {
	s, issues := Parse("ol.yaml", []byte(openLoopScenario), LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	l := s.Load
	if l.Arrival != ArrivalGamma || l.CV != 2.5 || l.MaxInFlight != 64 || s.Target.SessionHeader != "X-Session-ID" {
		t.Fatalf("load %+v, session header %q", l, s.Target.SessionHeader)
	}
	if st := l.Stages[1]; st.Name != "ramp" || *st.Rate != (Rate{From: 10, To: 50, Over: Duration(2 * time.Minute)}) {
		t.Fatalf("stage 2: %+v rate %+v", st, st.Rate)
	}
	want := []SLOLimit{{"ttft", "p95", 500 * time.Millisecond}, {"tpot", "p99", 50 * time.Millisecond}, {"e2e", "p90", 10 * time.Second}}
	if diff := cmp.Diff(want, s.SLO.LatencyLimits()); diff != "" {
		t.Errorf("latency limits (-want +got):\n%s", diff)
	}
	if v, ok := s.SLO.ErrorRateLimit(); !ok || v != 0.01 {
		t.Errorf("error rate limit %g %v", v, ok)
	}
	out, err := s.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	again, issues := Parse("resolved.yaml", out, LoadOptions{})
	if issues.Err() != nil {
		t.Fatalf("%v\n%s", issues.Err(), out)
	}
	if diff := cmp.Diff(s.Load, again.Load); diff != "" {
		t.Errorf("load after a round trip (-first +again):\n%s\n%s", diff, out)
	}
	if diff := cmp.Diff(s.SLO, again.SLO); diff != "" {
		t.Errorf("slo after a round trip (-first +again):\n%s", diff)
	}
}

// TestTurnOneSLOKeysFold: ttft_p95 and itl_p95 are the ttft and itl blocks' p95; set both ways, the
// stricter wins. A file without any limit has none (N/A), never 0-limits.
func TestTurnOneSLOKeysFold(t *testing.T) {
	half := Duration(500 * time.Millisecond)
	s := SLO{TTFTP95: Duration(time.Second), ITLP95: Duration(100 * time.Millisecond), ITL: &Limits{P95: Duration(200 * time.Millisecond), P99: half}}
	want := []SLOLimit{{"ttft", "p95", time.Second}, {"itl", "p95", 100 * time.Millisecond}, {"itl", "p99", 500 * time.Millisecond}}
	if diff := cmp.Diff(want, s.LatencyLimits()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if (SLO{}).IsSet() {
		t.Error("an empty SLO says it is set")
	}
}

// TestReplayStagesSliceTheTrace: replay stage k takes the requests whose time × time_scale falls in
// the warmup + duration after stage k−1's, due at their own offsets from the stage's origin, in time
// order and never wrapped around; a stage past the trace's end is refused before any traffic.
func TestReplayStagesSliceTheTrace(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i, ms := range []int{0, 0, 0, 400, 900, 1000, 1500, 2600, 3900} {
		lines = append(lines, fmt.Sprintf(`{"timestamp": %d, "input_length": %d, "output_length": 4, "hash_ids": [%d]}`, ms, 20+i, i))
	}
	writeTraceLines(t, filepath.Join(dir, "t.jsonl"), lines...)
	scenario := func(stages string) string {
		return "name: r\nseed: 1\ntarget: {base_url: mock}\nworkload:\n  trace: {file: t.jsonl, format: mooncake, block_tokens: 16}\n" +
			"load:\n  mode: replay\n  time_scale: 0.5\n  stages:\n" + stages + "slo: {ttft_p95: 1s}\ncost: {gpu_hourly_usd: 1}\n"
	}
	path := filepath.Join(dir, "s.yaml")
	os.WriteFile(path, []byte(scenario("    - {warmup: 200ms, duration: 300ms}\n    - {duration: 1s}\n")), 0o644)
	_, w := loadAndBuild(t, path)
	ats := func(p StagePool) []time.Duration {
		var out []time.Duration
		for _, sp := range p.Sessions {
			if !sp.Timed {
				t.Errorf("stage %d session %s has no time", p.Stage, sp.ID)
			}
			out = append(out, sp.At)
		}
		return out
	}
	ms := time.Millisecond
	// × 0.5: 0 0 0 200 450 500 750 1300 1950 ms. Stage 1 is [0, 500), stage 2 [500, 1500).
	if diff := cmp.Diff([]time.Duration{0, 0, 0, 200 * ms, 450 * ms}, ats(w.Stages[0])); diff != "" {
		t.Errorf("stage 1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{0, 250 * ms, 800 * ms}, ats(w.Stages[1])); diff != "" {
		t.Errorf("stage 2 (-want +got):\n%s", diff)
	}
	os.WriteFile(path, []byte(scenario("    - {duration: 2s}\n    - {duration: 1s}\n")), 0o644)
	if _, err := loadValid(t, path).Build(); err == nil || !strings.Contains(err.Error(), "load.stages[1]: load.mode replay: no request of t.jsonl falls in this stage's slice") {
		t.Errorf("a stage past the trace's end: %v", err)
	}
}

// TestReplayOfATimedDataset: an aiperf dataset whose turns carry "timestamp" (ms; AIPerf's fixed
// schedule, and what plload writes into a replay stage's dataset.jsonl) replays at those times; one
// without times is refused with what is accepted.
func TestReplayOfATimedDataset(t *testing.T) {
	dir := t.TempDir()
	timed := `{"session_id": "a", "turns": [{"text": "hello there", "timestamp": 0, "output_length": 3}]}
{"session_id": "b", "turns": [{"text": "second one", "timestamp": 250.5, "output_length": 3}]}
`
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(timed), 0o644)
	os.WriteFile(filepath.Join(dir, "plain.jsonl"), []byte(`{"session_id": "a", "turns": [{"text": "hello"}]}`+"\n"), 0o644)
	scenario := func(file string) string {
		return "name: r\ntarget: {base_url: mock}\nworkload:\n  dataset: {file: " + file + ", format: aiperf}\n" +
			"load:\n  mode: replay\n  stages:\n    - {duration: 1s}\n"
	}
	path := filepath.Join(dir, "s.yaml")
	os.WriteFile(path, []byte(scenario("d.jsonl")), 0o644)
	_, w := loadAndBuild(t, path)
	var got []time.Duration
	for _, sp := range w.Stages[0].Sessions {
		got = append(got, sp.At)
	}
	if diff := cmp.Diff([]time.Duration{0, 250500 * time.Microsecond}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if data := datasetOf(t, &w.Stages[0]); !strings.Contains(string(data), `"timestamp":250`) {
		t.Errorf("dataset.jsonl lacks the replay times:\n%s", data)
	}
	os.WriteFile(path, []byte(scenario("plain.jsonl")), 0o644)
	if _, err := loadValid(t, path).Build(); err == nil || !strings.Contains(err.Error(), "plain.jsonl has no request times") {
		t.Errorf("a dataset without times: %v", err)
	}
}

// TestRequestRateIsSingleTurnByDefault: a request_rate scenario that leaves out session.turns and
// think_time sends single requests, and its pool holds the stage's expected arrivals with room for
// their spread, so no request reuses another's prompt.
func TestRequestRateIsSingleTurnByDefault(t *testing.T) {
	text := `name: rr
target: {base_url: mock}
personas: {count: 2, system_prompt_tokens: 20}
session: {user_input_tokens: 10, max_output_tokens: 5}
load:
  mode: request_rate
  stages:
    - {rate: 50, warmup: 1s, duration: 3s}
    - {rate: {from: 0, to: 100, over: 2s}, duration: 4s}
`
	_, w := buildText(t, "rr.yaml", text)
	// 200 expected + 4√200 ≈ 57 → 258; the ramp: (50·2 + 100·2) = 300 + 4√300 ≈ 70 → 371.
	for i, want := range []int{258, 371} {
		pool := w.Stages[i]
		if len(pool.Sessions) != want {
			t.Errorf("stage %d pool %d, want %d", i+1, len(pool.Sessions), want)
		}
		for _, sp := range pool.Sessions {
			if sp.PlannedTurns() != 1 {
				t.Fatalf("stage %d session %s has %d turns, want 1", i+1, sp.ID, sp.PlannedTurns())
			}
		}
	}
}

// TestReplayScalesTurnGaps: time_scale applies to a multi-turn trace's gaps between turns as well
// as to its sessions' first requests; outside replay the trace keeps its own pace.
func TestReplayScalesTurnGaps(t *testing.T) {
	dir := t.TempDir()
	writeTraceLines(t, filepath.Join(dir, "q.jsonl"),
		`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 1.0, "input_length": 40, "output_length": 5, "type": "text", "turn": 1, "hash_ids": [1, 2, 3]}`,
		`{"chat_id": 2, "parent_chat_id": 1, "timestamp": 1.6, "input_length": 70, "output_length": 5, "type": "text", "turn": 2, "hash_ids": [1, 2, 3, 4, 5]}`)
	for _, c := range []struct {
		load string
		want time.Duration
	}{
		{"load:\n  mode: replay\n  time_scale: 0.5\n  stages:\n    - {duration: 10s}\n", 300 * time.Millisecond},
		{"load:\n  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 10s}\n", 600 * time.Millisecond},
	} {
		text := "name: q\ntarget: {base_url: mock}\nworkload:\n  trace: {file: q.jsonl, format: qwen_bailian}\n" + c.load
		path := filepath.Join(dir, "s.yaml")
		os.WriteFile(path, []byte(text), 0o644)
		s, w := loadAndBuild(t, path)
		if got := w.Stages[0].Sessions[0].Turns[1].AfterPrevious; got != c.want {
			t.Errorf("%s: turn 2 due %v after turn 1, want %v", s.Load.Mode, got, c.want)
		}
	}
}

// loadValid reads the scenario at path and fails the test on any error in it.
func loadValid(t *testing.T, path string) *Scenario {
	t.Helper()
	s, issues := Load(path, LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	return s
}

// loadAndBuild reads the scenario at path and builds its workload, failing the test on any error.
// buildText parses a scenario's text (named name in messages) and builds its workload, failing the
// test on any issue.
func buildText(t testing.TB, name, text string) (*Scenario, *Workload) {
	t.Helper()
	s, issues := Parse(name, []byte(text), LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s, w
}

func loadAndBuild(t *testing.T, path string) (*Scenario, *Workload) {
	t.Helper()
	s := loadValid(t, path)
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s, w
}
