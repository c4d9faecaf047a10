package scrape

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
)

func TestParseLlamaCppMetrics(t *testing.T) {
	file, err := os.Open("testdata/llamacpp_metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	s, err := Parse(file, 7)
	if err != nil {
		t.Fatal(err)
	}
	// prompt_tokens_total (629) excludes the cached tokens (627), so 1256 prompt tokens were looked up.
	if s.Engine != "llamacpp" || s.TNs != 7 || *s.Running != 0 || *s.Waiting != 0 || *s.PrefixHits != 627 || *s.PrefixQueries != 1256 {
		t.Fatalf("%+v", s)
	}
	// llama.cpp exports its speculative counters, at 0 without a draft model; it counts no preemptions.
	if s.SpecDrafted == nil || *s.SpecDrafted != 0 || s.SpecAccepted == nil || s.Preemptions != nil {
		t.Fatalf("drafted %v, accepted %v, preemptions %v", s.SpecDrafted, s.SpecAccepted, s.Preemptions)
	}
}

// TestLlamaCppServerCacheHit: the real llama.cpp scrape (testdata/llamacpp_metrics.txt) against a
// fresh server's zeros. Two of its requests shared a ~600-token prompt: 627 prompt tokens came from
// the cache and 629 were computed, so the hit rate is 627 ÷ (629 + 627) = 627 ÷ 1256 = 0.5 − 1/1256
// ≈ 0.49920 — not 627 ÷ 629 ≈ 0.997 as when prompt_tokens_total was taken for all the prompt tokens.
func TestLlamaCppServerCacheHit(t *testing.T) {
	text, err := os.ReadFile("testdata/llamacpp_metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	fresh := strings.NewReplacer("llamacpp:prompt_tokens_total 629", "llamacpp:prompt_tokens_total 0",
		"llamacpp:prompt_tokens_cached_total 627", "llamacpp:prompt_tokens_cached_total 0").Replace(string(text))
	if fresh == string(text) {
		t.Fatal("the fixture no longer holds the counters this test zeroes")
	}
	before, err := Parse(strings.NewReader(fresh), 10)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Parse(strings.NewReader(string(text)), 20)
	if err != nil {
		t.Fatal(err)
	}
	s := metrics.SummarizeServer([]metrics.ServerSample{before, after}, 0, 100)
	if want := 627.0 / 1256; !s.CacheHitRate.OK || math.Abs(s.CacheHitRate.V-want) > 1e-12 {
		t.Fatalf("cache hit %+v, want %v", s.CacheHitRate, want)
	}
}

// TestServerCacheHitNeverPassesOne: whatever the counters do between two scrapes — many more cached
// than computed tokens (a long shared prefix), nothing new, a restart that sets them back — the
// window's server cache hit is absent or within [0, 1]; so is a rate gauge that reads out of range.
func TestServerCacheHitNeverPassesOne(t *testing.T) {
	llama := func(processed, cached float64) string {
		return fmt.Sprintf("# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 1\n"+
			"# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total %g\n"+
			"# TYPE llamacpp:prompt_tokens_cached_total counter\nllamacpp:prompt_tokens_cached_total %g\n", processed, cached)
	}
	vllm := func(queries, hits float64) string {
		return fmt.Sprintf("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"+
			"vllm:prefix_cache_queries_total %g\nvllm:prefix_cache_hits_total %g\n", queries, hits)
	}
	sglang := func(rate float64) string {
		return fmt.Sprintf("# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 1\nsglang:cache_hit_rate %g\n", rate)
	}
	cases := []struct {
		name          string
		first, second string
		want          metrics.Opt[float64]
	}{
		{"llama.cpp: a long prefix cached, few tokens computed", llama(100, 0), llama(110, 990), metrics.Some(990.0 / 1000)},
		{"llama.cpp: everything computed", llama(0, 0), llama(500, 0), metrics.Some(0.0)},
		{"llama.cpp: nothing new", llama(5, 5), llama(5, 5), metrics.Opt[float64]{}},
		{"llama.cpp: restarted in the window", llama(5000, 4000), llama(10, 20), metrics.Opt[float64]{}},
		{"vLLM: hits counter reset, queries not", vllm(100, 90), vllm(200, 10), metrics.Opt[float64]{}},
		{"vLLM: more hits than lookups", vllm(100, 0), vllm(110, 50), metrics.Opt[float64]{}},
		{"vLLM: a plain window", vllm(100, 20), vllm(300, 120), metrics.Some(0.5)},
		{"SGLang: a gauge in percent", sglang(85), sglang(95), metrics.Opt[float64]{}},
		{"SGLang: a gauge as a fraction", sglang(0.25), sglang(0.75), metrics.Some(0.5)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var samples []metrics.ServerSample
			for i, text := range []string{tc.first, tc.second} {
				s, err := Parse(strings.NewReader(text), int64(i))
				if err != nil {
					t.Fatal(err)
				}
				samples = append(samples, s)
			}
			got := metrics.SummarizeServer(samples, 0, 10).CacheHitRate
			if got.OK && (got.V < 0 || got.V > 1) {
				t.Fatalf("cache hit %v: outside [0, 1]", got.V)
			}
			if got.OK != tc.want.OK || math.Abs(got.V-tc.want.V) > 1e-12 {
				t.Fatalf("cache hit %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseVLLMStyleAndUnknown(t *testing.T) {
	text := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} 3
vllm:num_requests_running{model_name="b"} 2
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="a"} 4
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="a"} 0.5
vllm:gpu_cache_usage_perc{model_name="b"} 0.25
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1"} 10
vllm:time_to_first_token_seconds_bucket{le="0.25"} 30
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 40
vllm:time_to_first_token_seconds_sum 9
vllm:time_to_first_token_seconds_count 40
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="a"} 7
vllm:num_preemptions_total{model_name="b"} 1
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{model_name="a"} 1200
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{model_name="a"} 840
`
	s, err := Parse(strings.NewReader(text), 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Engine != "vllm" || *s.Running != 5 || *s.Waiting != 4 || *s.KVUsage != 0.375 || len(s.TTFTBuckets) != 2 || s.TTFTCount != 40 {
		t.Fatalf("%+v", s)
	}
	// The timeline's counters: preemptions summed over the models, speculative decoding's tokens.
	if s.Preemptions == nil || *s.Preemptions != 8 || s.SpecDrafted == nil || *s.SpecDrafted != 1200 || s.SpecAccepted == nil || *s.SpecAccepted != 840 {
		t.Fatalf("preemptions %v, drafted %v, accepted %v", s.Preemptions, s.SpecDrafted, s.SpecAccepted)
	}
	u, err := Parse(strings.NewReader("# TYPE x gauge\nx 1\n"), 1)
	if err != nil || u.Engine != "unknown" || u.Running != nil {
		t.Fatalf("%+v %v", u, err)
	}
	if _, err := Parse(strings.NewReader("<html>not metrics</html>"), 1); err == nil {
		t.Fatal("HTML accepted as metrics")
	}
}

// TestParseSGLangDataParallel: SGLang's scheduler gauges come one series per data-parallel rank
// (labels as in sglang/srt/metrics). Requests and retractions add up across ranks; KV use, the
// hit-rate gauge and speculative acceptance are averaged; the prefix-cache counters come from
// realtime_tokens_total by mode.
func TestParseSGLangDataParallel(t *testing.T) {
	text := `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0"} 12
sglang:num_running_reqs{model_name="m",tp_rank="0",dp_rank="1",moe_ep_rank="0"} 8
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0"} 3
sglang:num_queue_reqs{model_name="m",tp_rank="0",dp_rank="1",moe_ep_rank="0"} 1
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0"} 0.6
sglang:token_usage{model_name="m",tp_rank="0",dp_rank="1",moe_ep_rank="0"} 0.4
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0"} 0.9
sglang:cache_hit_rate{model_name="m",tp_rank="0",dp_rank="1",moe_ep_rank="0"} 0.7
# TYPE sglang:realtime_tokens_total counter
sglang:realtime_tokens_total{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0",mode="prefill_compute"} 100
sglang:realtime_tokens_total{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0",mode="prefill_cache"} 300
sglang:realtime_tokens_total{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0",mode="decode"} 5000
sglang:realtime_tokens_total{model_name="m",tp_rank="0",dp_rank="1",moe_ep_rank="0",mode="prefill_compute"} 50
sglang:realtime_tokens_total{model_name="m",tp_rank="0",dp_rank="1",moe_ep_rank="0",mode="prefill_cache"} 50
# TYPE sglang:num_retracted_requests_total counter
sglang:num_retracted_requests_total{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0"} 4
sglang:num_retracted_requests_total{model_name="m",tp_rank="0",dp_rank="1",moe_ep_rank="0"} 3
# TYPE sglang:num_retracted_reqs gauge
sglang:num_retracted_reqs{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0"} 1
# TYPE sglang:spec_accept_rate gauge
sglang:spec_accept_rate{model_name="m",tp_rank="0",dp_rank="0",moe_ep_rank="0"} 0.6
sglang:spec_accept_rate{model_name="m",tp_rank="0",dp_rank="1",moe_ep_rank="0"} 0.8
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 4
sglang:time_to_first_token_seconds_bucket{le="0.5",model_name="m"} 9
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 10
sglang:time_to_first_token_seconds_sum{model_name="m"} 2.5
sglang:time_to_first_token_seconds_count{model_name="m"} 10
`
	s, err := Parse(strings.NewReader(text), 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Engine != "sglang" || *s.Running != 20 || *s.Waiting != 4 || *s.KVUsage != 0.5 || *s.CacheHitRate != 0.8 ||
		*s.PrefixHits != 350 || *s.PrefixQueries != 500 || len(s.TTFTBuckets) != 2 || s.TTFTCount != 10 ||
		s.Preemptions == nil || *s.Preemptions != 7 || s.SpecAcceptRate == nil || math.Abs(*s.SpecAcceptRate-0.7) > 1e-9 {
		t.Fatalf("%+v", s)
	}
	// An older SGLang without realtime_tokens_total: no counters, the gauge stands.
	old := strings.Split(text, "# TYPE sglang:realtime_tokens_total")[0]
	if s, err := Parse(strings.NewReader(old), 1); err != nil || s.PrefixHits != nil || *s.CacheHitRate != 0.8 {
		t.Fatalf("%+v %v", s, err)
	}
}

// TestNonFiniteValuesAreNoReading: Prometheus text may carry NaN and ±Inf. A series that reads so is
// left out (the other series still count), and the sample stays writable as JSON with its engine and
// time; before, one NaN gauge turned the whole sample into "{}".
func TestNonFiniteValuesAreNoReading(t *testing.T) {
	text := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} NaN
vllm:num_requests_running{model_name="b"} 3
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting NaN
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="a"} +Inf
vllm:gpu_cache_usage_perc{model_name="b"} 0.5
`
	s, err := Parse(strings.NewReader(text), 42)
	if err != nil {
		t.Fatal(err)
	}
	if s.Running == nil || *s.Running != 3 || s.Waiting != nil || s.KVUsage == nil || *s.KVUsage != 0.5 {
		t.Fatalf("running %v waiting %v kv %v: want 3, absent, 0.5", s.Running, s.Waiting, s.KVUsage)
	}
	var back metrics.ServerSample
	if err := json.Unmarshal(s.AppendJSON(nil), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Fatalf("sample written and read back differs (-parsed +read):\n%s", diff)
	}
}

// TestCacheSize: the KV cache's size in tokens, where the server says it: vLLM's cache_config_info
// (labels as vLLM writes them; num_gpu_blocks × block_size, added over engines), SGLang's
// max_total_num_tokens (added over data-parallel ranks); not where a label is no number (vLLM writes
// "None" before the cache is sized) or the engine does not say (llama.cpp).
func TestCacheSize(t *testing.T) {
	vllm := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9",num_cpu_blocks="None",num_gpu_blocks="27350",prefix_caching_hash_algo="sha256"} 1.0
`
	sglang := `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",dp_rank="0"} 1
sglang:num_running_reqs{model_name="m",dp_rank="1"} 1
# TYPE sglang:max_total_num_tokens gauge
sglang:max_total_num_tokens{model_name="m",dp_rank="0"} 471258
sglang:max_total_num_tokens{model_name="m",dp_rank="1"} 471258
`
	secondEngine := `vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="1",gpu_memory_utilization="0.9",num_cpu_blocks="None",num_gpu_blocks="27350",prefix_caching_hash_algo="sha256"} 1.0
`
	for _, tc := range []struct {
		name, text string
		want       *float64
	}{
		{"vLLM", vllm, ptr(27350 * 16)},
		{"vLLM, two engines", vllm + secondEngine, ptr(2 * 27350 * 16)},
		{"vLLM before the cache is sized", strings.Replace(vllm, `num_gpu_blocks="27350"`, `num_gpu_blocks="None"`, 1), nil},
		{"SGLang", sglang, ptr(2 * 471258)},
		{"llama.cpp", "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 0\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(strings.NewReader(tc.text), 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.CacheTokens); diff != "" {
				t.Errorf("cache tokens (-want +got):\n%s", diff)
			}
			sum := metrics.SummarizeServer([]metrics.ServerSample{s}, 0, 10)
			if sum.CacheTokens.OK != (tc.want != nil) || tc.want != nil && sum.CacheTokens.V != *tc.want {
				t.Errorf("summary's cache tokens %+v, want %v", sum.CacheTokens, tc.want)
			}
		})
	}
}

func ptr(v float64) *float64 { return &v }
