package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// writeOpenAILog writes an OpenAI-style request log (single-turn, 2 requests/s) whose messages all
// contain sentinel, so a test can show the text is never printed or written.
func writeOpenAILog(t *testing.T, path, sentinel string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 5))
	var b strings.Builder
	ts := 1764547200.0
	for i := range n {
		ts += r.ExpFloat64() / 2
		fmt.Fprintf(&b, `{"timestamp": %.3f, "request": {"model": "m", "messages": [{"role": "system", "content": "%s system"}, {"role": "user", "content": "%s question %d"}]}, "usage": {"prompt_tokens": %d, "completion_tokens": %d}}`+"\n",
			ts, sentinel, sentinel, i, 30+r.IntN(40), 5+r.IntN(10))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFitThenValidateThenRun: `plload fit --out` writes a scenario that `plload validate` accepts and
// that runs on the mock (its stages shortened to a second); no line of the log's text is printed or
// written anywhere.
func TestFitThenValidateThenRun(t *testing.T) {
	const sentinel = "ZEBRA-SENTINEL-7"
	dir := t.TempDir()
	logPath := filepath.Join(dir, "requests.jsonl")
	writeOpenAILog(t, logPath, sentinel, 200)
	if data, _ := os.ReadFile(logPath); !strings.Contains(string(data), sentinel) {
		t.Fatal("the log lacks the sentinel: the check below would prove nothing")
	}
	scenario := filepath.Join(dir, "fitted.yaml")

	code, stdout, stderr := plload(t, "fit", logPath, "--out", scenario)
	if code != 0 {
		t.Fatalf("fit: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"read 200 requests", "format request_log", "wrote " + scenario} {
		if !strings.Contains(stdout, want) {
			t.Errorf("fit output lacks %q:\n%s", want, stdout)
		}
	}
	yaml, err := os.ReadFile(scenario)
	if err != nil {
		t.Fatal(err)
	}
	code, jsonOut, jsonErr := plload(t, "fit", logPath, "--json")
	if code != 0 {
		t.Fatalf("fit --json: exit %d\n%s", code, jsonErr)
	}
	for name, text := range map[string]string{"fit": stdout + stderr, "fit --json": jsonOut + jsonErr, "scenario": string(yaml)} {
		if strings.Contains(text, sentinel) || strings.Contains(text, "question") {
			t.Errorf("%s shows the log's prompt text:\n%s", name, text)
		}
	}

	code, stdout, stderr = plload(t, "validate", scenario)
	if code != 0 {
		t.Fatalf("validate the fitted scenario: exit %d\n%s\n%s\n%s", code, stdout, stderr, yaml)
	}

	short := strings.ReplaceAll(string(yaml), "warmup: 30s, duration: 180s", "warmup: 0s, duration: 1s")
	short = strings.Replace(short, "mock: {ttft: 200ms, tps: 40}", "mock: {ttft: 5ms, tps: 2000}", 1)
	if short == string(yaml) {
		t.Fatal("the stage durations or mock timing were not found to shorten")
	}
	os.WriteFile(scenario, []byte(short), 0o644)
	code, stdout, stderr = plload(t, "run", scenario, "--out", filepath.Join(dir, "results"), "--quiet")
	if code != 0 {
		t.Fatalf("run the fitted scenario on the mock: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestFitJSONKeys: --json prints one object with exactly the keys docs/data.md lists.
func TestFitJSONKeys(t *testing.T) {
	code, stdout, stderr := plload(t, "fit", "fit/testdata/request-log.jsonl", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	keys := func(m map[string]json.RawMessage) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	want := []string{"gamma_shape", "input_tokens", "interarrival_cv", "output_tokens", "peak_to_mean", "prefix_share", "rate_per_s", "requests", "sessions", "span_s"}
	if diff := cmp.Diff(want, keys(obj)); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	nested := map[string][]string{
		"rate_per_s":    {"mean", "peak_minute"},
		"input_tokens":  {"max", "p50", "p95", "p99"},
		"output_tokens": {"max", "p50", "p95", "p99"},
		"sessions":      {"count", "cut_off", "think_time_s", "turns"},
	}
	for k, want := range nested {
		var sub map[string]json.RawMessage
		if err := json.Unmarshal(obj[k], &sub); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if diff := cmp.Diff(want, keys(sub)); diff != "" {
			t.Errorf("%s keys (-want +got):\n%s", k, diff)
		}
	}
	// Two lines carry text, none of it shared.
	if string(obj["prefix_share"]) != "0" {
		t.Errorf("prefix_share = %s, want 0", obj["prefix_share"])
	}
}

// TestFitBadInput: bad flags and bad files are exit 2 with a message naming what is accepted.
func TestFitBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"timestamp\": 1, \"prompt_tokens\": 1, \"completion_tokens\": 1}\n{\"timestamp\": 2}\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"fit"}, "expected at least one log file"},
		{[]string{"fit", "--format", "csv", bad}, "accepted: request_log, records"},
		{[]string{"fit", bad}, "bad.jsonl line 2 (request_log)"},
		{[]string{"fit", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
	}
	for _, tt := range tests {
		code, _, stderr := plload(t, tt.args...)
		if code != exitBadInput || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// writeSharedTrace writes a Mooncake-style trace (10 requests/s) in which every request starts with
// one of heads shared prefixes of shared blocks and goes on with unique blocks of its own: a known
// prefix share of shared ÷ (shared + unique) blocks, less the heads' own first uses.
func writeSharedTrace(t *testing.T, path string, n, heads, shared, unique, inputTokens int) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 9))
	var b strings.Builder
	next := int64(1_000_000)
	for i := range n {
		ids := make([]int64, 0, shared+unique)
		h := int64(r.IntN(heads))
		for k := range shared {
			ids = append(ids, h*1000+int64(k))
		}
		for range unique {
			ids = append(ids, next)
			next++
		}
		data, _ := json.Marshal(ids)
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 8, "hash_ids": %s}`+"\n", i*100, inputTokens, data)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFitKeepsPrefixSharing: a trace whose requests share 40 % of their blocks is fitted, and the
// scenario it writes, run on the mock (a real block-hashed prefix cache), hits the cache within 5
// points of the trace's prefix_share: the sharing the fit measured is the sharing it sends.
func TestFitKeepsPrefixSharing(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	writeSharedTrace(t, trace, 600, 3, 2, 3, 1000)
	code, jsonOut, stderr := plload(t, "fit", trace, "--json")
	if code != 0 {
		t.Fatalf("fit --json: exit %d\n%s", code, stderr)
	}
	var sum struct {
		PrefixShare float64 `json:"prefix_share"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &sum); err != nil || sum.PrefixShare < 0.39 || sum.PrefixShare > 0.4 {
		t.Fatalf("prefix_share %v (err %v), want 2 of 5 blocks less 3 first uses: 0.398\n%s", sum.PrefixShare, err, jsonOut)
	}
	scenario := filepath.Join(dir, "fitted.yaml")
	if code, stdout, stderr := plload(t, "fit", trace, "--out", scenario); code != 0 {
		t.Fatalf("fit --out: exit %d\n%s\n%s", code, stdout, stderr)
	}
	yaml, _ := os.ReadFile(scenario)
	for _, want := range []string{"count: 3   # from logs (600 requests): first turns share 3 distinct prefixes", "system_prompt_tokens: {dist: constant, value: 398}   # from logs"} {
		if !strings.Contains(string(yaml), want) {
			t.Errorf("the fitted scenario lacks %q:\n%s", want, yaml)
		}
	}
	if strings.Contains(string(yaml), "SPEC") {
		t.Errorf("the fitted scenario cites a document that is not in this repository:\n%s", yaml)
	}
	fast := strings.Replace(string(yaml), "mock: {ttft: 200ms, tps: 40}", "mock: {ttft: 5ms, tps: 2000}", 1)
	os.WriteFile(scenario, []byte(fast), 0o644)
	out := filepath.Join(dir, "results")
	code, stdout, stderr := plload(t, "run", scenario, "--request-rate", "10", "--warmup", "2s", "--duration", "6s", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("run the fitted scenario: exit %d\n%s\n%s", code, stdout, stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(out, "*", "stage_01", "stage.json"))
	if len(runs) != 1 {
		t.Fatalf("stage.json files: %v", runs)
	}
	data, _ := os.ReadFile(runs[0])
	var st struct {
		Summary struct {
			CacheHit *float64 `json:"cache_hit"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(data, &st); err != nil || st.Summary.CacheHit == nil {
		t.Fatalf("stage.json: cache_hit missing (err %v)", err)
	}
	if hit := *st.Summary.CacheHit; hit < sum.PrefixShare-0.05 || hit > sum.PrefixShare+0.05 {
		t.Errorf("cache hit %.3f on the mock, want the trace's prefix_share %.3f ± 0.05\n%s", hit, sum.PrefixShare, yaml)
	} else {
		t.Logf("cache hit %.3f against the trace's prefix_share %.3f", hit, sum.PrefixShare)
	}
}

// TestFitRecordsOfARun: a real run on the mock, sessions whose answers take about 0.2 s and whose
// users pause for a known think time, is fitted from its own profile_export.jsonl: the scenario's
// think time has the run's true mean within 10 % (the true pause is each turn's intended start less
// the previous answer's end, both in the records), where start-to-start gaps would add the answers'
// latency; and the prefix share is the records' cached tokens ÷ prompt tokens, near the stage's cache hit.
func TestFitRecordsOfARun(t *testing.T) {
	for _, tc := range []struct{ name, think string }{
		{"exponential", "{dist: exponential, mean: 500ms}"},
		{"uniform", "{min: 300ms, max: 700ms}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			scenario := filepath.Join(dir, "sessions.yaml")
			os.WriteFile(scenario, []byte(`name: fit-think
seed: 7
target:
  base_url: mock
  mock: {ttft: 100ms, tps: 200}
personas:
  count: 2
  system_prompt_tokens: {min: 60, max: 90}
session:
  turns: {min: 4, max: 8}
  user_input_tokens: {min: 10, max: 30}
  max_output_tokens: {min: 15, max: 25}
  think_time: `+tc.think+`
load:
  mode: concurrency
  stages:
    - {concurrency: 12, warmup: 0s, duration: 5s}
`), 0o644)
			out := filepath.Join(dir, "results")
			if code, stdout, stderr := plload(t, "run", scenario, "--out", out, "--quiet"); code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
			}
			records, _ := filepath.Glob(filepath.Join(out, "*", "stage_01", "profile_export.jsonl"))
			if len(records) != 1 {
				t.Fatalf("profile_export.jsonl files: %v", records)
			}
			truth, startToStart, cached, prompt := runTruth(t, records[0])
			if len(truth) < 30 {
				t.Fatalf("only %d think-time gaps in the run: too few to compare", len(truth))
			}

			fitted := filepath.Join(dir, "fitted.yaml")
			code, stdout, stderr := plload(t, "fit", records[0], "--out", fitted)
			if code != 0 {
				t.Fatalf("fit: exit %d\n%s\n%s", code, stdout, stderr)
			}
			for _, w := range []string{"format records", "(answer end to the next turn's start)", "of prompt tokens were answered from the server's prefix cache"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("fit output lacks %q:\n%s", w, stdout)
				}
			}
			sc, issues := workload.Load(fitted, workload.LoadOptions{})
			if err := issues.Err(); err != nil {
				yaml, _ := os.ReadFile(fitted)
				t.Fatalf("the fitted scenario does not load: %v\n%s", err, yaml)
			}
			want, got := meanOf(truth), sc.Session.ThinkTime.MeanSeconds()
			t.Logf("%d gaps: true think-time mean %.4f s, fitted %.4f s (%s), start to start %.4f s",
				len(truth), want, got, sc.Session.ThinkTime.Kind, meanOf(startToStart))
			if math.Abs(got-want) > 0.10*want {
				t.Errorf("fitted think-time mean %.4f s, want the run's %.4f s within 10 %%", got, want)
			}

			code, jsonOut, stderr := plload(t, "fit", records[0], "--json")
			if code != 0 {
				t.Fatalf("fit --json: exit %d\n%s", code, stderr)
			}
			var sum struct {
				PrefixShare *float64 `json:"prefix_share"`
				Sessions    *struct {
					Count  int `json:"count"`
					CutOff int `json:"cut_off"`
					Turns  struct {
						P50 float64 `json:"p50"`
						Max float64 `json:"max"`
					} `json:"turns"`
				} `json:"sessions"`
			}
			if err := json.Unmarshal([]byte(jsonOut), &sum); err != nil || sum.PrefixShare == nil || sum.Sessions == nil {
				t.Fatalf("prefix_share or sessions missing (err %v):\n%s", err, jsonOut)
			}
			// The stage's end cuts the sessions still running: they are left out of the turns, so
			// the turns fitted are the scenario's 4 to 8, not the 1 or 2 turns a cut-off session had.
			t.Logf("sessions %d, %d cut off by the log's end; fitted turns %+v", sum.Sessions.Count, sum.Sessions.CutOff, sc.Session.Turns)
			if sum.Sessions.CutOff == 0 || !strings.Contains(stdout, "cut off by the log's end") {
				t.Errorf("no session reported cut off by the stage's end (%d of %d):\n%s", sum.Sessions.CutOff, sum.Sessions.Count, stdout)
			}
			if got := sum.Sessions.Turns; got.P50 < 4 || got.Max > 8 || sum.Sessions.CutOff >= sum.Sessions.Count {
				t.Errorf("turns %+v over %d of %d sessions, want the scenario's 4 to 8 over the sessions seen to their end",
					got, sum.Sessions.Count-sum.Sessions.CutOff, sum.Sessions.Count)
			}
			if share := float64(cached) / float64(prompt); prompt == 0 || math.Abs(*sum.PrefixShare-share) > 1e-9 || share < 0.2 {
				t.Errorf("prefix_share %.4f, want the records' cached ÷ prompt tokens %d ÷ %d (the personas and histories are cached)", *sum.PrefixShare, cached, prompt)
			}
		})
	}
}

// runTruth reads a run's records: each think-time pause (a turn's intended start less the end of the
// session's previous answer: what the engine waited), the start-to-start gaps between the same turns,
// and the sums of cached and prompt tokens the server reported.
func runTruth(t *testing.T, path string) (pauses, startToStart []float64, cached, prompt int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type turnKey struct {
		session string
		turn    int
	}
	byTurn := map[turnKey]*metrics.Record{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		r, err := metrics.ParseRecord([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if r.Error != nil || !r.RequestEndNs.OK {
			continue
		}
		byTurn[turnKey{r.XCorrelationID, r.TurnIndex}] = r
		if r.UsageCachedTokens.OK && r.UsagePromptTokens.OK {
			cached, prompt = cached+int64(r.UsageCachedTokens.V), prompt+int64(r.UsagePromptTokens.V)
		}
	}
	for k, r := range byTurn {
		prev, ok := byTurn[turnKey{k.session, k.turn - 1}]
		if !ok || !r.IntendedStartNs.OK {
			continue
		}
		pauses = append(pauses, float64(r.IntendedStartNs.V-prev.RequestEndNs.V)/1e9)
		startToStart = append(startToStart, float64(r.RequestStartNs-prev.RequestStartNs)/1e9)
	}
	return pauses, startToStart, cached, prompt
}

func meanOf(v []float64) float64 {
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(max(1, len(v)))
}
