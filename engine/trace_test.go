package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// TestTracePrefixCacheHits: a Mooncake trace whose requests open with shared hash-id prefixes gives,
// on the real mock's prefix cache, the hit rate that the trace's own block reuse predicts, within
// 2 %: equal ids are equal text, so the trace's sharing becomes the server's. The trace's 512-token
// blocks are whole multiples of the mock's 16-token cache blocks, so a shared prefix is cached to
// its last token; the chat template's "user:\n" before the text is shorter than one cache block.
func TestTracePrefixCacheHits(t *testing.T) {
	const rows, bt = 6000, 512
	r := rand.New(rand.NewPCG(3, 4))
	prefixBlocks := []int{1, 2, 3, 2} // shared prefix p is ids p*100 … p*100+n−1
	idsByLine := map[int][]int64{}
	var file strings.Builder
	next := int64(1000)
	for i := range rows {
		var ids []int64
		if r.IntN(10) < 6 {
			p := r.IntN(len(prefixBlocks))
			for k := range prefixBlocks[p] {
				ids = append(ids, int64(p*100+k))
			}
		}
		// Past its shared blocks each request has tokens of its own, so every shared block is whole.
		in := len(ids)*bt + 1 + r.IntN(1200)
		for len(ids)*bt < in {
			ids = append(ids, next)
			next++
		}
		idsByLine[i+1] = ids
		list := make([]string, len(ids))
		for k, id := range ids {
			list[k] = strconv.FormatInt(id, 10)
		}
		fmt.Fprintf(&file, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [%s]}`+"\n",
			i*10, in, 1+r.IntN(3), strings.Join(list, ", "))
	}
	path := filepath.Join(t.TempDir(), "mooncake.jsonl")
	if err := os.WriteFile(path, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	base, _ := startMock(t, func(c *mock.Config) {
		c.TTFT, c.TPS, c.PrefillPerToken = time.Millisecond, 20000, 0
		c.CacheBlock, c.CacheCapacity = 16, 50_000_000 // nothing is evicted
	})
	// Concurrency 1: requests reach the cache in the trace's order, one after another.
	text := scenarioYAML(base, "  think_time: 0s", "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 1500ms}")
	text = withSource(text, fmt.Sprintf("workload:\n  trace: {file: %s, format: mooncake}\n", path))
	var sc *workload.Scenario
	res, dir, err := runScenarioConfig(t, context.Background(), text, func(c *Config) { sc = c.Scenario })
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Errors != 0 || res[0].Reused != 0 {
		t.Fatalf("%d errors, %d sessions reused (want none: the stage must not wrap around the trace)", res[0].Errors, res[0].Reused)
	}
	src := sc.Source()

	type sent struct {
		start          int64
		line           int
		prompt, cached float64
	}
	var reqs []sent
	for _, rec := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		md := rec["metadata"].(map[string]any)
		if md["was_cancelled"] == true || rec["error"] != nil {
			continue
		}
		conv := md["conversation_id"].(string) // s01-NNNNNN: the pool's session NNNNNN, the trace's in order
		j, err := strconv.Atoi(conv[strings.LastIndexByte(conv, '-')+1:])
		if err != nil {
			t.Fatalf("conversation_id %q", conv)
		}
		m := rec["metrics"].(map[string]any)
		s := sent{start: integer(md["request_start_ns"]), line: src.Sessions[j].Turns[0].Line,
			prompt: float64(num(t, m["usage_prompt_tokens"].(map[string]any)["value"]))}
		if c, ok := m["usage_prompt_cache_read_tokens"].(map[string]any); ok {
			s.cached = float64(num(t, c["value"]))
		}
		reqs = append(reqs, s)
	}
	if len(reqs) < 20 {
		t.Fatalf("only %d requests answered", len(reqs))
	}
	sort.Slice(reqs, func(a, b int) bool { return reqs[a].start < reqs[b].start })

	// The trace's own reuse, over the requests as they were sent: a request reuses its leading
	// blocks whose ids an earlier request had.
	seen := map[int64]bool{}
	var reused, input, cached, prompt float64
	for _, q := range reqs {
		ids := idsByLine[q.line]
		run := 0
		for run < len(ids) && seen[ids[run]] {
			run++
		}
		for _, id := range ids {
			seen[id] = true
		}
		reused += float64(run * bt)
		in := src.Sessions[q.line-1].Turns[0].UserTokens
		input += float64(in)
		cached += q.cached
		prompt += q.prompt
	}
	want, got := reused/input, cached/prompt
	t.Logf("%d requests: cache hit %.4f (%.0f of %.0f prompt tokens), trace block reuse %.4f (%.0f of %.0f)", len(reqs), got, cached, prompt, want, reused, input)
	if want < 0.2 || math.Abs(got-want) > 0.02*want {
		t.Fatalf("cache hit %.4f, trace block reuse %.4f: want within 2 %% of each other (and reuse ≥ 0.2)", got, want)
	}
}
