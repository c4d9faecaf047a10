// Package scrape reads a target server's own Prometheus /metrics during a stage: Parse reduces one
// answer to a metrics.ServerSample (running and waiting requests, KV-cache use, prefix-cache counters,
// the TTFT histogram of vLLM, SGLang, llama.cpp or the plload mock). The engine scrapes every second
// of a stage into stage_NN/server_metrics.jsonl (docs/records.md); the window's summary is metrics'
// SummarizeServer, computed from that file afterwards. The GPUs' telemetry is read the same way:
// ParseDCGM (a DCGM exporter's text) and ReadNvidiaSMI (nvidia-smi's CSV) into metrics.GPUSample,
// stage_NN/gpu_metrics.jsonl, summarized by metrics' SummarizeGPU.
package scrape

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plload/plload/metrics"
)

// serverNames maps each engine's metric names to what they mean. A name may carry a label selector,
// `name{label=a|b}`, to take only the series whose label is one of the values. Counts (running,
// waiting, token counters) are summed over series — one per model, data-parallel rank or engine —
// and fractions (KV use, a hit rate) averaged: two ranks at 50 % are a server at 50 %, not 100 %.
//
// The prefix-cache queries are every prompt token looked up, hits included, so that the window's hit
// rate is Δhits ÷ Δqueries ≤ 1. vLLM and SGLang count them that way; llama.cpp does not: its
// prompt_tokens_total excludes the cached tokens (its HELP says so, testdata/llamacpp_metrics.txt), so for
// it queries = cached + processed, named in `processed`.
var serverNames = []struct {
	engine, marker                                       string
	running, waiting, kv, rate, hits, queries, processed []string
	preempted, drafted, accepted, acceptRate             []string
	ttft                                                 string
}{
	{engine: "vllm", marker: "vllm:num_requests_running",
		running: []string{"vllm:num_requests_running"}, waiting: []string{"vllm:num_requests_waiting"},
		kv:   []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
		hits: []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}, queries: []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"},
		preempted: []string{"vllm:num_preemptions_total", "vllm:num_preemptions"},
		drafted:   []string{"vllm:spec_decode_num_draft_tokens_total"}, accepted: []string{"vllm:spec_decode_num_accepted_tokens_total"},
		ttft: "vllm:time_to_first_token_seconds"},
	// SGLang: names from sglang/srt/metrics (num_running_reqs, num_queue_reqs, token_usage, the
	// cache_hit_rate gauge; newer versions count prefill tokens by mode in realtime_tokens_total,
	// which gives the window's hit rate from counters, as for vLLM).
	{engine: "sglang", marker: "sglang:num_running_reqs",
		running: []string{"sglang:num_running_reqs"}, waiting: []string{"sglang:num_queue_reqs"},
		kv: []string{"sglang:token_usage"}, rate: []string{"sglang:cache_hit_rate"},
		hits:    []string{"sglang:realtime_tokens_total{mode=prefill_cache}"},
		queries: []string{"sglang:realtime_tokens_total{mode=prefill_cache|prefill_compute}"},
		// A retraction is SGLang's preemption (a running request evicted to be recomputed); the
		// gauge num_retracted_reqs counts only the latest batch's, so the counter alone is read.
		// Speculative decoding gives a gauge of the batch's acceptance, not token counters.
		preempted: []string{"sglang:num_retracted_requests_total"}, acceptRate: []string{"sglang:spec_accept_rate"},
		ttft: "sglang:time_to_first_token_seconds"},
	{engine: "llamacpp", marker: "llamacpp:requests_processing",
		running: []string{"llamacpp:requests_processing"}, waiting: []string{"llamacpp:requests_deferred"},
		kv:   []string{"llamacpp:kv_cache_usage_ratio"},
		hits: []string{"llamacpp:prompt_tokens_cached_total"}, processed: []string{"llamacpp:prompt_tokens_total"},
		drafted: []string{"llamacpp:spec_decode_num_draft_tokens_total"}, accepted: []string{"llamacpp:spec_decode_num_accepted_tokens_total"}},
}

// Parse reads Prometheus text (with prometheus/common's parser) and picks out the engine's running
// and waiting requests, KV-cache use, prefix-cache counters and TTFT histogram; tNs is the sample's
// time on the run's clock.
func Parse(r io.Reader, tNs int64) (metrics.ServerSample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return metrics.ServerSample{}, fmt.Errorf("not Prometheus text: %w", err)
	}
	s := metrics.ServerSample{TNs: tNs, Engine: "unknown"}
	for _, n := range serverNames {
		if _, ok := families[n.marker]; !ok {
			continue
		}
		s.Engine = n.engine
		if _, mock := families["plload_mock_send_lateness_seconds"]; mock {
			s.Engine = "plload-mock"
		}
		s.Running, s.Waiting = total(families, n.running, false), total(families, n.waiting, false)
		s.KVUsage, s.CacheHitRate = total(families, n.kv, true), total(families, n.rate, true)
		s.PrefixHits, s.PrefixQueries = total(families, n.hits, false), total(families, n.queries, false)
		if n.processed != nil {
			s.PrefixQueries = nil
			if processed := total(families, n.processed, false); processed != nil && s.PrefixHits != nil {
				q := *s.PrefixHits + *processed
				s.PrefixQueries = &q
			}
		}
		if f, ok := families[n.ttft]; ok {
			s.TTFTBuckets, s.TTFTCount = buckets(f)
		}
		s.CacheTokens = cacheTokens(families)
		s.Preemptions = total(families, n.preempted, false)
		s.SpecDrafted, s.SpecAccepted = total(families, n.drafted, false), total(families, n.accepted, false)
		s.SpecAcceptRate = total(families, n.acceptRate, true)
		break
	}
	return s, nil
}

// total adds (or, for a fraction, averages) the values of the selected series of the first name
// present; nil when none is.
func total(families map[string]*dto.MetricFamily, names []string, fraction bool) *float64 {
	for _, spec := range names {
		name, label, values := spec, "", []string(nil)
		if i := strings.IndexByte(spec, '{'); i >= 0 {
			var list string
			name = spec[:i]
			label, list, _ = strings.Cut(strings.TrimSuffix(spec[i+1:], "}"), "=")
			values = strings.Split(list, "|")
		}
		f, ok := families[name]
		if !ok {
			continue
		}
		sum, n := 0.0, 0
		for _, m := range f.GetMetric() {
			if label != "" && !slices.Contains(values, labelValue(m, label)) {
				continue
			}
			v, ok := seriesValue(m)
			if !ok {
				continue
			}
			sum += v
			n++
		}
		if n == 0 {
			continue
		}
		if fraction {
			sum /= float64(n)
		}
		return &sum
	}
	return nil
}

// seriesValue is a gauge's, counter's or untyped series' value; false for other kinds, and for NaN
// and ±Inf, which Prometheus text allows (an older vLLM's hit-rate gauge reads NaN before its first
// query): they are no reading, and JSON has no way to write them, so one would make the whole sample
// unwritable.
func seriesValue(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.Gauge != nil:
		v = m.GetGauge().GetValue()
	case m.Counter != nil:
		v = m.GetCounter().GetValue()
	case m.Untyped != nil:
		v = m.GetUntyped().GetValue()
	default:
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// buckets adds the finite cumulative buckets of every series of a histogram family (JSON has no +Inf),
// and returns the total count apart.
func buckets(f *dto.MetricFamily) ([]metrics.ServerBucket, float64) {
	byLE := map[float64]float64{}
	total := 0.0
	for _, m := range f.GetMetric() {
		for _, b := range m.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				byLE[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		total += float64(m.GetHistogram().GetSampleCount())
	}
	out := make([]metrics.ServerBucket, 0, len(byLE))
	for le, c := range byLE {
		out = append(out, metrics.ServerBucket{LE: le, Count: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LE < out[j].LE })
	return out, total
}

// cacheTokens is the KV cache's size in tokens, summed over the server's engines, where its metrics
// say: vLLM's cache_config_info (an info metric whose labels carry num_gpu_blocks and block_size),
// SGLang's max_total_num_tokens gauge. nil when neither is there, or a label is not a number.
func cacheTokens(families map[string]*dto.MetricFamily) *float64 {
	if f, ok := families["vllm:cache_config_info"]; ok {
		var sum float64
		for _, m := range f.GetMetric() {
			blocks, err1 := strconv.ParseFloat(labelValue(m, "num_gpu_blocks"), 64)
			size, err2 := strconv.ParseFloat(labelValue(m, "block_size"), 64)
			if err1 != nil || err2 != nil || blocks < 0 || size <= 0 {
				return nil // "None" before the cache is sized, or a layout this does not know
			}
			sum += blocks * size
		}
		if len(f.GetMetric()) > 0 {
			return &sum
		}
	}
	return total(families, []string{"sglang:max_total_num_tokens"}, false)
}
