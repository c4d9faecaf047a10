package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReuseCacheSplitsRepeats: the cache hit of the successful in-window requests whose session
// repeated a conversation (dataset_session) is set beside the others'; warmup requests, failures
// and requests without prompt usage count in neither hit; with no repeat the split is absent.
func TestReuseCacheSplitsRepeats(t *testing.T) {
	gaps := []float64{20, 20}
	withCache := func(r *Record, prompt, cached int, entry int) *Record {
		r.UsagePromptTokens, r.UsageCachedTokens = Some(prompt), Some(cached)
		if entry >= 0 {
			r.DatasetSession = Some(entry)
		}
		return r
	}
	noUsage := ok(5, 100, gaps, 3)
	noUsage.UsagePromptTokens, noUsage.UsageCachedTokens, noUsage.DatasetSession = Opt[int]{}, Opt[int]{}, Some(2)
	failedRepeat := failed(6, 500, "InternalServerError")
	failedRepeat.DatasetSession = Some(1)
	recs := []*Record{
		withCache(ok(0.5, 100, gaps, 3), 100, 100, 0), // warmup: left out
		withCache(ok(2, 100, gaps, 3), 100, 90, 0),
		withCache(ok(3, 100, gaps, 3), 300, 300, 1),
		withCache(ok(4, 100, gaps, 3), 200, 20, -1),
		withCache(ok(4.5, 100, gaps, 3), 200, 0, -1),
		noUsage,
		failedRepeat,
	}
	got := summary(input(), recs...).ReuseCache
	want := &ReuseCache{Reused: ReuseGroup{Requests: 3, CacheHit: Some(390.0 / 400)}, Fresh: ReuseGroup{Requests: 2, CacheHit: Some(20.0 / 400)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reuse cache hit (-want +got):\n%s", diff)
	}
	if got := summary(input(), recs[3:5]...).ReuseCache; got != nil {
		t.Errorf("no repeat, yet a split: %+v", got)
	}
}
