package resultfiles

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
)

// vllmKeys is every key `vllm bench serve --save-result --metric-percentiles 50,90,95,99` writes that
// plload writes too (vLLM's serve.py: its main adds date … max_concurrency, the benchmark the rest),
// plus plload's own "plload", in the file's order.
var vllmKeys = func() []string {
	keys := []string{"date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness",
		"max_concurrency", "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
		"request_throughput", "request_goodput", "output_throughput", "total_token_throughput"}
	for _, m := range []string{"ttft", "tpot", "itl", "e2el"} {
		keys = append(keys, "mean_"+m+"_ms", "median_"+m+"_ms", "std_"+m+"_ms", "p50_"+m+"_ms", "p90_"+m+"_ms", "p95_"+m+"_ms", "p99_"+m+"_ms")
	}
	return append(keys, "itls", "input_lens", "output_lens", "ttfts", "errors", "plload")
}()

// jsonKeys is an object's keys in file order.
func jsonKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %v", err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// vllmFile is the part of vllm_bench_result.json the test reads.
type vllmFile struct {
	Date                 string          `json:"date"`
	Backend              string          `json:"backend"`
	ModelID              string          `json:"model_id"`
	NumPrompts           int             `json:"num_prompts"`
	RequestRate          any             `json:"request_rate"`
	Burstiness           any             `json:"burstiness"`
	MaxConcurrency       any             `json:"max_concurrency"`
	Duration             float64         `json:"duration"`
	Completed            int             `json:"completed"`
	Failed               int             `json:"failed"`
	TotalInputTokens     int             `json:"total_input_tokens"`
	TotalOutputTokens    int             `json:"total_output_tokens"`
	RequestThroughput    float64         `json:"request_throughput"`
	RequestGoodput       *float64        `json:"request_goodput"`
	OutputThroughput     float64         `json:"output_throughput"`
	TotalTokenThroughput float64         `json:"total_token_throughput"`
	InputLens            []int           `json:"input_lens"`
	OutputLens           []int           `json:"output_lens"`
	TTFTs                []float64       `json:"ttfts"`
	ITLs                 [][]float64     `json:"itls"`
	Errors               []string        `json:"errors"`
	Plload               json.RawMessage `json:"plload"`
}

// TestVLLMResultEqualsStageJSON: every stage of a real run has vllm_bench_result.json with vLLM's
// keys, each number equal to stage.json's, and per-request arrays whose pooled gaps and TTFTs give
// stage.json's ITL and TTFT back (vLLM's definitions: ITL pooled per chunk, in seconds).
func TestVLLMResultEqualsStageJSON(t *testing.T) {
	for _, dir := range runSummaryFiles(t) {
		st, err := ReadStage(filepath.Join(dir, "stage.json"))
		if err != nil {
			t.Fatal(err)
		}
		s := st.Summary
		data, err := os.ReadFile(filepath.Join(dir, VLLMResult))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(vllmKeys, jsonKeys(t, data)); diff != "" {
			t.Errorf("%s: keys (-vLLM +plload):\n%s", dir, diff)
		}
		var f vllmFile
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		all := readJSON(t, filepath.Join(dir, VLLMResult))
		checkVLLMStats(t, dir, all, s)
		if !regexp.MustCompile(`^[0-9]{8}-[0-9]{6}$`).MatchString(f.Date) || f.Backend != "openai-chat" || f.ModelID != "m" ||
			f.RequestRate != "inf" || f.Burstiness != 1.0 || f.MaxConcurrency != float64(st.Concurrency) || f.RequestGoodput != nil {
			t.Errorf("%s: date %q backend %q model %q rate %v burstiness %v max_concurrency %v goodput %v", dir, f.Date, f.Backend,
				f.ModelID, f.RequestRate, f.Burstiness, f.MaxConcurrency, f.RequestGoodput)
		}
		t1 := s.Throughput
		wantTotals := []float64{s.Window.Seconds, float64(t1.Requests), float64(s.Requests.Errors + s.Requests.Cancelled),
			float64(t1.InputTokens), float64(t1.OutputTokens), t1.ReqPerSec, t1.OutTokPerSec, t1.TotalTokPerSec, float64(s.Requests.InWindow)}
		gotTotals := []float64{f.Duration, float64(f.Completed), float64(f.Failed), float64(f.TotalInputTokens),
			float64(f.TotalOutputTokens), f.RequestThroughput, f.OutputThroughput, f.TotalTokenThroughput, float64(f.NumPrompts)}
		if diff := cmp.Diff(wantTotals, gotTotals); diff != "" {
			t.Errorf("%s: duration, completed, failed, tokens, throughputs, num_prompts (-stage.json +file):\n%s", dir, diff)
		}
		checkVLLMArrays(t, dir, f, s)
	}
}

// checkVLLMStats compares mean/median/std/pNN of ttft, tpot, itl and e2el with stage.json's.
func checkVLLMStats(t *testing.T, dir string, all map[string]any, s *metrics.StageSummary) {
	t.Helper()
	for name, d := range map[string]metrics.Dist{"ttft": s.TTFT, "tpot": s.TPOT, "itl": s.ITL, "e2el": s.E2E} {
		for prefix, stat := range map[string]string{"mean": "mean", "median": "p50", "std": "std", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"} {
			key := prefix + "_" + name + "_ms"
			want, _ := d.Stat(stat)
			if v, ok := all[key].(float64); !ok || !near(v, want) {
				t.Errorf("%s: %s = %v, stage.json %s = %v", dir, key, all[key], stat, want)
			}
		}
	}
}

// checkVLLMArrays: one entry per request that started in the window; the successes' TTFTs (s) and
// pooled gaps (s) summarize to stage.json's TTFT and ITL, and the errors are the failures.
func checkVLLMArrays(t *testing.T, dir string, f vllmFile, s *metrics.StageSummary) {
	t.Helper()
	n := s.Requests.InWindow
	if len(f.InputLens) != n || len(f.OutputLens) != n || len(f.TTFTs) != n || len(f.ITLs) != n || len(f.Errors) != n {
		t.Fatalf("%s: arrays of %d %d %d %d %d entries, want %d (requests that started in the window)", dir,
			len(f.InputLens), len(f.OutputLens), len(f.TTFTs), len(f.ITLs), len(f.Errors), n)
	}
	var ttfts, gaps []float64
	failed := 0
	for i, e := range f.Errors {
		if e != "" {
			failed++
			if f.TTFTs[i] != 0 || f.OutputLens[i] != 0 || len(f.ITLs[i]) != 0 {
				t.Errorf("%s: failed request %d (%s) has ttft %v, output_len %d, itls %v; vLLM writes 0, 0, []", dir, i, e, f.TTFTs[i], f.OutputLens[i], f.ITLs[i])
			}
			continue
		}
		ttfts = append(ttfts, f.TTFTs[i]*1000)
		for _, g := range f.ITLs[i] {
			gaps = append(gaps, g*1000)
		}
	}
	if failed != s.Requests.Errors+s.Requests.Cancelled || failed == 0 {
		t.Errorf("%s: %d error strings, stage.json %d errors + %d cancelled (the run should have some)", dir, failed, s.Requests.Errors, s.Requests.Cancelled)
	}
	for _, c := range []struct {
		name      string
		got, want metrics.Dist
	}{{"ttfts", summarizeCopy(ttfts), s.TTFT}, {"itls", summarizeCopy(gaps), s.ITL}} {
		for _, stat := range []string{"mean", "p50", "p99", "max", "std"} {
			g, _ := c.got.Stat(stat)
			w, _ := c.want.Stat(stat)
			if c.got.N != c.want.N || !near(g, w) {
				t.Errorf("%s: %s (n %d) %s %v, stage.json (n %d) %v", dir, c.name, c.got.N, stat, g, c.want.N, w)
			}
		}
	}
}

func summarizeCopy(v []float64) metrics.Dist {
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	return metrics.SummarizeSorted(c)
}

// TestVLLMLoadKeys: request_rate, burstiness and max_concurrency as vLLM writes them for each of
// plload's load modes.
func TestVLLMLoadKeys(t *testing.T) {
	for _, c := range []struct {
		name                  string
		r                     StageReport
		rate, burst, maxConcy any
	}{
		{"closed loop", StageReport{Mode: "concurrency", Concurrency: 8}, "inf", 1.0, 8},
		{"poisson, unbounded", StageReport{Mode: "request_rate", Rate: &StageRate{From: 4, To: 4}, Arrival: "poisson"}, 4.0, 1.0, nil},
		{"gamma cv 2, capped", StageReport{Mode: "request_rate", Rate: &StageRate{From: 5, To: 5}, Arrival: "gamma", CV: 2, MaxInFlight: 30}, 5.0, 0.25, 30},
		{"constant", StageReport{Mode: "request_rate", Rate: &StageRate{From: 2, To: 2}, Arrival: "constant"}, 2.0, "inf", nil},
		{"ramp: its final rate", StageReport{Mode: "request_rate", Rate: &StageRate{From: 1, To: 9, Over: "2s"}, Arrival: "poisson"}, 9.0, 1.0, nil},
		{"arrival_rate", StageReport{Mode: "arrival_rate", SessionsPerSec: 3, MaxConcurrency: 12}, 3.0, 1.0, 12},
		{"replay", StageReport{Mode: "replay"}, "inf", 1.0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := []any{c.r.vllmRate(), c.r.vllmBurstiness(), c.r.vllmMaxConcurrency()}
			if diff := cmp.Diff([]any{c.rate, c.burst, c.maxConcy}, got); diff != "" {
				t.Errorf("request_rate, burstiness, max_concurrency (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVLLMPerRequestSource: the plload key says where the per-request arrays came from. A stage
// whose records are not kept (output.record_requests: false) still has them, read before the file is
// removed, and says so: it named profile_export.jsonl, a file the directory no longer holds.
func TestVLLMPerRequestSource(t *testing.T) {
	const start = int64(1_760_000_000_000_000_000)
	rec := (&metrics.Record{RequestStartNs: start + 1e6, CreditIssuedNs: start + 1e6, RequestEndNs: metrics.Some(start + 5e8),
		BenchmarkPhase: metrics.PhaseProfiling, TTFT: metrics.Some(100.0), RequestLatency: metrics.Some(499.0),
		InterChunkLatency: []float64{200, 199}, InputSequenceLength: metrics.Some(10), OutputSequenceLength: metrics.Some(3)}).AppendJSON(nil)
	cases := []struct {
		name    string
		kept    bool
		records bool
		want    string
		n       int
	}{
		{"records kept", true, true, "profile_export.jsonl", 1},
		{"records removed after the stage", false, true, "profile_export.jsonl, read before it was removed (output.record_requests: false)", 1},
		{"no records file", false, false, "none: the stage's records are not kept (output.record_requests: false)", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.records {
				if err := os.WriteFile(filepath.Join(dir, "profile_export.jsonl"), append(rec, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sum := &metrics.StageSummary{}
			sum.Window.WNs, sum.Window.EEffNs, sum.Window.Seconds = start, start+1e9, 1
			st := &StageReport{Run: "r", Stage: 1, Stages: 1, RecordsKept: tc.kept, Summary: sum}
			if err := st.writeVLLMResult(dir); err != nil {
				t.Fatal(err)
			}
			var f struct {
				TTFTs  []float64 `json:"ttfts"`
				Plload struct {
					PerRequest string `json:"per_request"`
				} `json:"plload"`
			}
			data, err := os.ReadFile(filepath.Join(dir, VLLMResult))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Plload.PerRequest != tc.want || len(f.TTFTs) != tc.n {
				t.Errorf("per_request %q with %d ttfts, want %q with %d", f.Plload.PerRequest, len(f.TTFTs), tc.want, tc.n)
			}
		})
	}
}

// Each endpoint is named as what it is in vLLM's and AIPerf's files: never chat's backend or path
// for an API that is not chat.
func TestEndpointNamesInForeignFiles(t *testing.T) {
	for endpoint, want := range map[string][2]string{
		"chat": {"openai-chat", "/chat/completions"}, "completions": {"openai", "/completions"},
		"messages": {"plload-messages", "/messages"}, "responses": {"plload-responses", "/responses"},
		"embeddings": {"openai-embeddings", "/embeddings"}, "rerank": {"vllm-rerank", "/rerank"},
	} {
		r := &StageReport{Target: Target{Endpoint: endpoint}}
		got, _ := json.Marshal(r.aiperfInputConfig())
		if vllmBackend(endpoint) != want[0] || !strings.Contains(string(got), `"custom_endpoint":"`+want[1]+`"`) {
			t.Errorf("%s: backend %s, AIPerf input config %s; want %v", endpoint, vllmBackend(endpoint), got, want)
		}
	}
}
