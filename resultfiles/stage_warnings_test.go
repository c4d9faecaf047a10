package resultfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// TestReuseWarning: the dataset-reuse warning is said whenever a session repeated a conversation —
// with a nonce in every request and when failures used the pool up too — and gives the repeats'
// share, the cache hit of their requests against the others', and what kept a repeat off the
// cache (or that nothing did); with no repeat it is silent.
func TestReuseWarning(t *testing.T) {
	cache := &metrics.ReuseCache{Reused: metrics.ReuseGroup{Requests: 30, CacheHit: metrics.Some(0.998)},
		Fresh: metrics.ReuseGroup{Requests: 10, CacheHit: metrics.Some(0.25)}}
	// at is a synthetic scenario with load.session_reuse reuse and workload.nonce nonce ("": none).
	at := func(reuse, nonce string) *workload.Scenario {
		t.Helper()
		text := "name: t\nseed: 1\ntarget: {base_url: mock}\npersonas: {count: 2, system_prompt_tokens: 20}\n" +
			"session: {turns: 1, user_input_tokens: 10, max_output_tokens: 4, think_time: 0s}\n" +
			"load:\n  mode: concurrency\n  session_reuse: " + reuse + "\n  stages:\n    - {concurrency: 2, duration: 1s}\n"
		if nonce != "" {
			text += "workload: {nonce: " + nonce + "}\n"
		}
		sc, issues := workload.Parse("t.yaml", []byte(text), workload.LoadOptions{})
		if err := issues.Err(); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	// fromFile is the same stage over a dataset of two conversations, which have no personas.
	fromFile := func(reuse, nonce string) *workload.Scenario {
		t.Helper()
		path := filepath.Join(t.TempDir(), "c.jsonl")
		conversations := `{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "one"}]}` + "\n" +
			`{"messages": [{"role": "user", "content": "two"}]}` + "\n"
		if err := os.WriteFile(path, []byte(conversations), 0o644); err != nil {
			t.Fatal(err)
		}
		text := "name: t\nseed: 1\ntarget: {base_url: mock}\nworkload: {dataset: {file: " + path + ", format: openai}"
		if nonce != "" {
			text += ", nonce: " + nonce
		}
		text += "}\nload:\n  mode: concurrency\n  session_reuse: " + reuse + "\n  stages:\n    - {concurrency: 2, duration: 1s}\n"
		sc, issues := workload.Parse("t.yaml", []byte(text), workload.LoadOptions{})
		if err := issues.Err(); err != nil {
			t.Fatal(err)
		}
		if sc.Source() == nil {
			t.Fatal("the dataset scenario has no source")
		}
		return sc
	}
	onlyRepeats := &metrics.ReuseCache{Reused: metrics.ReuseGroup{Requests: 23, CacheHit: metrics.Some(0.419)}}
	for _, tc := range []struct {
		name   string
		sc     *workload.Scenario
		in     StageReuse
		want   []string // "" : no warning
		absent []string
	}{
		{"no repeat", at("wrap", ""), StageReuse{Pool: 6, Sessions: 40}, nil, nil},
		{"wrap", at("wrap", ""), StageReuse{Pool: 6, Sessions: 40, Reused: 30, Cache: cache},
			[]string{"dataset reuse: 30 of 40 sessions started (75.0 %) repeated a conversation the run had sent (its pool of 6 sessions ran dry; load.session_reuse: wrap)",
				"cache hit 99.8 % on the repeats' 30 requests, 25.0 % on the others' 10",
				"each repeat carried a nonce of its own after the system prompt", "load.session_reuse: fresh draws new sessions past the pool instead"},
			[]string{"failed at once"}},
		{"byte for byte", at("wrap_identical", ""), StageReuse{Pool: 6, Sessions: 40, Reused: 30, Cache: cache},
			[]string{"load.session_reuse: wrap_identical", "no nonce kept a repeat off the cache"}, nil},
		{"nonce at the start", at("wrap_identical", "true"), StageReuse{Pool: 6, Sessions: 40, Reused: 30, Cache: cache},
			[]string{"every request began with a nonce (workload.nonce), so a repeat could not hit the cache"}, nil},
		{"nonce after the system prompt", at("wrap_identical", "after_system"), StageReuse{Pool: 6, Sessions: 40, Reused: 30, Cache: cache},
			[]string{"workload.nonce: after_system"}, nil},
		{"failures used the pool up", at("wrap", ""), StageReuse{Pool: 6, Sessions: 40, Reused: 30, Explained: true},
			[]string{"30 of 40 sessions", "because sessions failed at once and used the pool up", "cache hit unknown: no request of a repeat succeeded in the window"}, nil},
		{"no usage", at("wrap", ""), StageReuse{Pool: 6, Sessions: 40, Reused: 30, Cache: &metrics.ReuseCache{Reused: metrics.ReuseGroup{Requests: 3}, Fresh: metrics.ReuseGroup{Requests: 1}}},
			[]string{"cache hit n/a (no usage) on the repeats' 3 requests, n/a (no usage) on the others' 1"}, nil},
		{"synthetic wrap: the persona", at("wrap", ""), StageReuse{Pool: 6, Sessions: 40, Reused: 30, Cache: cache},
			[]string{"could hit the cache on its persona only"}, nil},
		{"every request a repeat's", fromFile("wrap", ""), StageReuse{Pool: 2, Sessions: 25, Reused: 23, Cache: onlyRepeats},
			[]string{"cache hit 41.9 % on the repeats' 23 requests; ", "its pool of 2 sessions ran dry or the file's conversations started over",
				"each repeat carried a nonce of its own after the system prompt, so it could hit the cache on its system prompt only"},
			[]string{"others'", "persona"}},
		{"dataset, nonce after the system prompt", fromFile("wrap_identical", "after_system"), StageReuse{Pool: 2, Sessions: 25, Reused: 23, Cache: onlyRepeats},
			[]string{"(workload.nonce: after_system), so a repeat could hit the cache on its system prompt only"}, []string{"persona"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ReuseWarning(tc.sc, tc.in)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("warned %q, want nothing", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.absent {
				if strings.Contains(got, w) {
					t.Errorf("warning says %q:\n%s", w, got)
				}
			}
		})
	}
}
