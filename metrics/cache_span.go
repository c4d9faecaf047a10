package metrics

import (
	"fmt"
	"os"
	"strings"
)

// The server's cache hit (ServerSummary.CacheHitRate) is the increase of its counters between the
// first and last scrape in the window: the prompts it evaluated in that span. The client's cache hit
// (StageSummary.CacheHit) is over the requests that started in the window. Both are right and they
// differ by which requests sit at the edges, by several points on a short stage of multi-turn
// sessions, whose first turns hit the cache far less than later ones. So that the two can be
// compared, the client's is also computed over the server's span: the successful requests whose
// first token came in it (a server counts a prompt once it has evaluated it, just before the first
// token).

// cacheSpanHit sums cached and prompt tokens over the successful requests whose first token came in
// (from, to].
type cacheSpanHit struct {
	from, to       int64
	prompt, cached int64
	reported       bool
}

func (c *cacheSpanHit) add(r *Record) {
	if !r.OK() || !r.UsagePromptTokens.OK || !r.TTFT.OK {
		return
	}
	if first := r.RequestStartNs + int64(r.TTFT.V*1e6); first <= c.from || first > c.to {
		return
	}
	c.prompt += int64(r.UsagePromptTokens.V)
	if r.UsageCachedTokens.OK {
		c.cached += int64(min(r.UsageCachedTokens.V, r.UsagePromptTokens.V)) // as the stage's cache hit: never over the prompt
		c.reported = true
	}
}

func (c *cacheSpanHit) result() Opt[float64] {
	if c.prompt == 0 || !c.reported {
		return Opt[float64]{}
	}
	return Some(float64(c.cached) / float64(c.prompt))
}

// WithClientCacheHit sets the server summary's client cache hit over the span its counters cover,
// from the stage's records file; it does nothing where the server gave no counter-based rate. A file
// it cannot read leaves the figure absent and says why in the summary's note, after any note there.
func (o *ServerSummary) WithClientCacheHit(recordsPath string) {
	if o == nil || !o.CacheHitRate.OK || o.CountersToNs <= o.CountersFromNs {
		return
	}
	c := cacheSpanHit{from: o.CountersFromNs, to: o.CountersToNs}
	err := func() error {
		f, err := os.Open(recordsPath)
		if err != nil {
			return err
		}
		defer f.Close()
		return ReadRecords(f, func(r *Record) error { c.add(r); return nil })
	}()
	if err != nil {
		o.Note = strings.TrimSpace(o.Note + " The client's cache hit over the counters' span could not be read: " + fmt.Sprintf("%s: %v", recordsPath, err))
		return
	}
	o.ClientCacheHit = c.result()
}
