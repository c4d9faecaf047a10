package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientCacheHitOverTheServersSpan: the server's counters are read at its first and last scrape
// in the window; the client's cache hit beside them counts exactly the successful requests whose first
// token came between those scrapes, from the records file.
func TestClientCacheHitOverTheServersSpan(t *testing.T) {
	const s = int64(1e9)
	rec := func(startNs int64, ttftMs float64, prompt, cached int, failed bool) Record {
		r := Record{RequestStartNs: startNs, TTFT: Some(ttftMs), UsagePromptTokens: Some(prompt), UsageCachedTokens: Some(cached)}
		if failed {
			r.Error = &RecordError{Code: Some(500), Type: "http", Message: "boom"}
		}
		return r
	}
	records := []Record{
		rec(0, 500, 1000, 0, false),                // first token at 0.5 s: before the span
		rec(1*s, 500, 1000, 900, false),            // 1.5 s: in
		rec(2*s, 2000, 1000, 500, false),           // 4.0 s: in (the span's end is inclusive)
		rec(3*s, 1500, 1000, 1000, false),          // 4.5 s: after
		rec(1*s, 100, 5000, 5000, true),            // failed: never counted
		{RequestStartNs: 2 * s, TTFT: Some(100.0)}, // no usage: not counted
	}
	path := filepath.Join(t.TempDir(), "profile_export.jsonl")
	var b []byte
	for i := range records {
		b = append(records[i].AppendJSON(b), '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	hits, queries := func(v float64) *float64 { return &v }, func(v float64) *float64 { return &v }
	samples := []ServerSample{
		{TNs: 0, PrefixHits: hits(0), PrefixQueries: queries(0)},
		{TNs: 1 * s, PrefixHits: hits(0), PrefixQueries: queries(1000)},
		{TNs: 4 * s, PrefixHits: hits(1400), PrefixQueries: queries(3000)},
		{TNs: 5 * s, PrefixHits: hits(2400), PrefixQueries: queries(4000)},
	}
	sum := SummarizeServer(samples, 1*s, 5*s) // the scrapes at 1 s and 4 s
	if sum.CountersFromNs != 1*s || sum.CountersToNs != 4*s || !sum.CacheHitRate.OK || sum.CacheHitRate.V != 0.7 {
		t.Fatalf("span %d–%d, rate %v; want 1 s–4 s and 0.7", sum.CountersFromNs, sum.CountersToNs, sum.CacheHitRate)
	}
	sum.WithClientCacheHit(path)
	if !sum.ClientCacheHit.OK || sum.ClientCacheHit.V != 0.7 {
		t.Errorf("client cache hit over the span %v, want 0.7 (1400 of 2000 tokens)", sum.ClientCacheHit)
	}
	// Without counters (a rate gauge only) there is no span, and nothing is read.
	gauge := SummarizeServer([]ServerSample{{TNs: 2 * s, CacheHitRate: hits(0.5)}}, 1*s, 5*s)
	if gauge.WithClientCacheHit(filepath.Join(t.TempDir(), "missing.jsonl")); gauge.ClientCacheHit.OK || gauge.Note != "" {
		t.Errorf("a gauge-only server: client hit %v, note %q; want neither", gauge.ClientCacheHit, gauge.Note)
	}
	// A records file that cannot be read leaves the figure absent, saying why after the note there.
	lost := SummarizeServer(samples, 1*s, 5*s)
	lost.Note = "scrapes stopped."
	if lost.WithClientCacheHit(filepath.Join(t.TempDir(), "missing.jsonl")); lost.ClientCacheHit.OK || !strings.HasPrefix(lost.Note, "scrapes stopped. The client's cache hit") {
		t.Errorf("an unreadable records file: client hit %v, note %q", lost.ClientCacheHit, lost.Note)
	}
}
