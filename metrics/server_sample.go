package metrics

import (
	"bytes"
	"encoding/json"
	"os"
)

// ServerSample is one scrape of the target's own Prometheus endpoint, reduced to what plload reads.
// Gauges are summed over series (one per model); counters are cumulative, as the server reports them.
// Package scrape takes the samples, one a line of stage_NN/server_metrics.jsonl; SummarizeServer
// reduces a stage's to its window.
type ServerSample struct {
	TNs           int64          `json:"t_ns"`
	Engine        string         `json:"engine"` // vllm, sglang, llamacpp, plload-mock or unknown
	Running       *float64       `json:"running,omitempty"`
	Waiting       *float64       `json:"waiting,omitempty"`
	KVUsage       *float64       `json:"kv_usage,omitempty"`       // 0–1
	CacheHitRate  *float64       `json:"cache_hit_rate,omitempty"` // 0–1, when the server reports a rate
	PrefixHits    *float64       `json:"prefix_hits,omitempty"`    // cumulative tokens
	PrefixQueries *float64       `json:"prefix_queries,omitempty"` // cumulative tokens, hits included
	TTFTBuckets   []ServerBucket `json:"ttft_buckets,omitempty"`   // cumulative, seconds; +Inf left out
	TTFTCount     float64        `json:"ttft_count,omitempty"`     // all observations (the +Inf bucket)
	// CacheTokens is the KV cache's size in tokens, where the server says (vLLM's cache_config_info:
	// num_gpu_blocks × block_size; SGLang's max_total_num_tokens): what its prefix cache can hold.
	CacheTokens *float64 `json:"cache_tokens,omitempty"`
	// Preemptions is the server's count of requests it preempted (evicted from the KV cache to make
	// room, to be recomputed), cumulative: vLLM's num_preemptions_total, SGLang's
	// num_retracted_requests_total.
	Preemptions *float64 `json:"preemptions,omitempty"`
	// SpecDrafted and SpecAccepted are speculative decoding's draft tokens proposed and accepted,
	// cumulative (vLLM's spec_decode_num_draft_tokens_total and _accepted_tokens_total): their
	// increases' ratio is the acceptance rate over a span.
	SpecDrafted  *float64 `json:"spec_drafted,omitempty"`
	SpecAccepted *float64 `json:"spec_accepted,omitempty"`
	// SpecAcceptRate is a server's own gauge of the share of draft tokens accepted (0–1), for a
	// server without the counters: SGLang's spec_accept_rate, averaged over its ranks.
	SpecAcceptRate *float64 `json:"spec_accept_rate,omitempty"`
}

// ServerBucket is one cumulative histogram bucket.
type ServerBucket struct {
	LE    float64 `json:"le"`
	Count float64 `json:"count"`
}

// AppendJSON writes the sample as one JSON object.
func (s *ServerSample) AppendJSON(b []byte) []byte {
	out, err := json.Marshal(s)
	if err != nil {
		return append(b, "{}"...)
	}
	return append(b, out...)
}

// ReadJSONLines reads a file of one JSON object a line (server_metrics.jsonl, gpu_metrics.jsonl); a
// line that does not parse — a killed run's torn last line — is skipped.
func ReadJSONLines[T any](path string) ([]T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, line := range bytes.Split(data, []byte("\n")) {
		var v T
		if len(bytes.TrimSpace(line)) > 0 && json.Unmarshal(line, &v) == nil {
			out = append(out, v)
		}
	}
	return out, nil
}
