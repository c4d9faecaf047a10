package metrics

// The server's cache hit (ServerSummary.CacheHitRate) is the increase of its counters between the
// first and last scrape in the window: the prompts it evaluated in that span. The client's cache hit
// (StageSummary.CacheHit) is over the requests that started in the window. Both are right and they
// differ by which requests sit at the edges, by several points on a short stage of multi-turn
// sessions, whose first turns hit the cache far less than later ones. So that the two can be
// compared, the client's is also computed over the server's span: the successful requests whose
// first token came in it (a server counts a prompt once it has evaluated it, just before the first
// token).

// cacheMark is one successful request's first-token time and its prompt and cached token counts.
type cacheMark struct {
	firstNs        int64
	prompt, cached int32
}

// markCache keeps what CacheHitBetween needs of a request with usage.
func (s *Stage) markCache(r *Record) {
	if !r.OK() || !r.UsagePromptTokens.OK || !r.TTFT.OK {
		return
	}
	m := cacheMark{firstNs: r.RequestStartNs + int64(r.TTFT.V*1e6), prompt: int32(r.UsagePromptTokens.V)}
	if r.UsageCachedTokens.OK {
		m.cached = int32(r.UsageCachedTokens.V)
	}
	s.s.cacheMarks = append(s.s.cacheMarks, m)
}

// CacheHitBetween is the client's cache hit over the requests whose first token came in
// (fromNs, toNs]: cached ÷ prompt tokens; absent when none did, or none had cached counts.
func (s *StageSummary) CacheHitBetween(fromNs, toNs int64) Opt[float64] {
	var prompt, cached int64
	for _, m := range s.cacheMarks {
		if m.firstNs > fromNs && m.firstNs <= toNs {
			prompt += int64(m.prompt)
			cached += int64(m.cached)
		}
	}
	if prompt == 0 || s.CachedReported == 0 {
		return Opt[float64]{}
	}
	return Some(float64(cached) / float64(prompt))
}

// WithClientCacheHit sets the server summary's client cache hit over the span its counters cover.
func (o *ServerSummary) WithClientCacheHit(sum *StageSummary) {
	if o == nil || sum == nil || !o.CacheHitRate.OK || o.countersToNs <= o.countersFromNs {
		return
	}
	o.ClientCacheHit = sum.CacheHitBetween(o.countersFromNs, o.countersToNs)
}
