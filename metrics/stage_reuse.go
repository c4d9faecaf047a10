package metrics

// ReuseCache splits a stage's cache hit by whether a request's session repeated a conversation the
// run had sent (its record has dataset_session: the pool ran dry, or a file started over) or was
// new. A repeat sent byte for byte can be answered from the server's prefix cache whole, which
// flatters every latency; beside the new sessions' hit, the repeats' says whether that happened.
type ReuseCache struct {
	Reused ReuseGroup `json:"reused"`
	Fresh  ReuseGroup `json:"fresh"`
}

// ReuseGroup is one side of ReuseCache: its successful in-window requests, and their cache hit
// (Σ cached ÷ Σ prompt tokens over those with prompt usage; null without one).
type ReuseGroup struct {
	Requests int          `json:"requests"`
	CacheHit Opt[float64] `json:"cache_hit"`
}

// reuseTally sums the two groups' prompt and cached tokens.
type reuseTally struct {
	reused, fresh turnCache
	any           bool // a record had dataset_session
}

// add takes a successful in-window request.
func (t *reuseTally) add(r *Record) {
	g := &t.fresh
	if r.DatasetSession.OK {
		g, t.any = &t.reused, true
	}
	g.requests++
	if !r.UsagePromptTokens.OK {
		return
	}
	prompt, cached := int64(r.UsagePromptTokens.V), int64(0)
	if r.UsageCachedTokens.OK {
		cached = min(int64(r.UsageCachedTokens.V), prompt)
	}
	g.prompt, g.cached = g.prompt+prompt, g.cached+cached
}

// result is the split; nil when no successful in-window request repeated a conversation.
func (t *reuseTally) result() *ReuseCache {
	if !t.any {
		return nil
	}
	group := func(tc turnCache) ReuseGroup {
		g := ReuseGroup{Requests: tc.requests}
		if tc.prompt > 0 {
			g.CacheHit = Some(float64(tc.cached) / float64(tc.prompt))
		}
		return g
	}
	return &ReuseCache{Reused: group(t.reused), Fresh: group(t.fresh)}
}
