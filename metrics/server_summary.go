package metrics

import (
	"math"
	"strings"
)

// ServerSummary is a stage's server-side view, from the scrapes inside its window.
type ServerSummary struct {
	Engine       string       `json:"engine"`
	Samples      int          `json:"samples"`
	RunningMean  Opt[float64] `json:"running_mean"`
	RunningMax   Opt[float64] `json:"running_max"`
	WaitingMean  Opt[float64] `json:"waiting_mean"`
	WaitingMax   Opt[float64] `json:"waiting_max"`
	KVUsageMean  Opt[float64] `json:"kv_usage_mean"`
	KVUsageMax   Opt[float64] `json:"kv_usage_max"`
	TTFTP50Ms    Opt[float64] `json:"ttft_p50_ms"` // from the histogram's increase over the window
	TTFTP95Ms    Opt[float64] `json:"ttft_p95_ms"`
	CacheHitRate Opt[float64] `json:"cache_hit_rate"` // Δhits ÷ Δqueries, or the server's own rate
	// ClientCacheHit is the client's cache hit over the requests whose first token came between the
	// two scrapes CacheHitRate's counters were read at: the same prompts, so the two agree where the
	// client's counts are the server's (cache_span.go). Absent where the server has no counters.
	ClientCacheHit Opt[float64] `json:"client_cache_hit_same_span"`
	// CountersFromNs and CountersToNs are the times of those two scrapes (absent without counters).
	CountersFromNs int64 `json:"counters_from_ns,omitempty"`
	CountersToNs   int64 `json:"counters_to_ns,omitempty"`
	// CacheTokens is the KV cache's size in tokens, the last the server said in the window; absent
	// where its metrics do not say (ServerSample.CacheTokens).
	CacheTokens Opt[float64] `json:"cache_tokens,omitzero"`
	// Scrapes and ScrapesOK count the stage's scrape attempts and the ones that gave a sample (a slow
	// or failed scrape is counted and scraping goes on): "server metrics: 57 of 60 scrapes ok".
	Scrapes   int    `json:"scrapes"`
	ScrapesOK int    `json:"scrapes_ok"`
	Note      string `json:"note,omitempty"`
}

// SummarizeServer reduces the scrapes taken in [wNs, eNs).
func SummarizeServer(samples []ServerSample, wNs, eNs int64) ServerSummary {
	var in []ServerSample
	for _, s := range samples {
		if s.TNs >= wNs && s.TNs < eNs {
			in = append(in, s)
		}
	}
	out := ServerSummary{Samples: len(in)}
	if len(in) == 0 {
		out.Note = "no server metrics were scraped in the measurement window"
		return out
	}
	out.Engine = in[0].Engine
	meanMax := func(get func(ServerSample) *float64) (Opt[float64], Opt[float64]) {
		var total, top float64
		n := 0
		for _, s := range in {
			if v := get(s); v != nil {
				total += *v
				top = math.Max(top, *v)
				n++
			}
		}
		if n == 0 {
			return Opt[float64]{}, Opt[float64]{}
		}
		return Some(total / float64(n)), Some(top)
	}
	out.RunningMean, out.RunningMax = meanMax(func(s ServerSample) *float64 { return s.Running })
	out.WaitingMean, out.WaitingMax = meanMax(func(s ServerSample) *float64 { return s.Waiting })
	out.KVUsageMean, out.KVUsageMax = meanMax(func(s ServerSample) *float64 { return s.KVUsage })
	first, last := in[0], in[len(in)-1]
	if first.PrefixQueries != nil && last.PrefixQueries != nil && first.PrefixHits != nil && last.PrefixHits != nil {
		// A counter that went backwards (the server restarted in the window) or more hits than
		// lookups is no rate at all: leave it absent rather than print a hit rate under 0 or over 100 %.
		dq, dh := *last.PrefixQueries-*first.PrefixQueries, *last.PrefixHits-*first.PrefixHits
		if dq > 0 && dh >= 0 && dh <= dq {
			out.CacheHitRate = Some(dh / dq)
			out.CountersFromNs, out.CountersToNs = first.TNs, last.TNs
		}
	} else {
		// The server's own rate gauge, when it has no counters; one out of [0, 1] (a percent, say)
		// is not a fraction this report can show.
		rate, _ := meanMax(func(s ServerSample) *float64 { return s.CacheHitRate })
		if rate.OK && rate.V >= 0 && rate.V <= 1 {
			out.CacheHitRate = rate
		}
	}
	for _, s := range in {
		if s.CacheTokens != nil {
			out.CacheTokens = Some(*s.CacheTokens)
		}
	}
	if delta := bucketDelta(first.TTFTBuckets, last.TTFTBuckets); delta != nil {
		total := last.TTFTCount - first.TTFTCount
		out.TTFTP50Ms = histogramQuantile(delta, total, 0.50)
		out.TTFTP95Ms = histogramQuantile(delta, total, 0.95)
	}
	if out.Engine == "unknown" {
		out.Note = "the server's metrics are not vLLM's, SGLang's, llama.cpp's or the plload mock's"
	}
	return out
}

func bucketDelta(a, b []ServerBucket) []ServerBucket {
	if len(a) == 0 || len(a) != len(b) {
		return nil
	}
	out := make([]ServerBucket, len(b))
	for i := range b {
		if a[i].LE != b[i].LE {
			return nil
		}
		out[i] = ServerBucket{LE: b[i].LE, Count: b[i].Count - a[i].Count}
	}
	return out
}

// histogramQuantile is Prometheus's histogram_quantile: linear interpolation inside the bucket that
// holds the quantile, in ms. Absent when the window saw no observations or the quantile falls past the
// last finite bucket.
func histogramQuantile(b []ServerBucket, total, q float64) Opt[float64] {
	if total <= 0 {
		return Opt[float64]{}
	}
	rank := q * total
	prevLE, prevCount := 0.0, 0.0
	for _, bk := range b {
		if bk.Count >= rank {
			width := bk.Count - prevCount
			frac := 1.0
			if width > 0 {
				frac = (rank - prevCount) / width
			}
			return Some(1000 * (prevLE + frac*(bk.LE-prevLE)))
		}
		prevLE, prevCount = bk.LE, bk.Count
	}
	return Opt[float64]{}
}

// ServerEngineOf names the engine for a note ("vllm" → "vLLM").
func ServerEngineOf(name string) string {
	return map[string]string{"vllm": "vLLM", "sglang": "SGLang", "llamacpp": "llama.cpp", "plload-mock": "plload mock"}[strings.ToLower(name)]
}
