package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plload/plload/workload"
)

// sentKey is one record as the schedule sees it: which session, which turn, and its intended
// offset from the stage's origin.
type sentKey struct {
	Conv   string
	Turn   int
	Offset time.Duration
}

// shardRun is one run's stage 1: its result and its records' keys (sorted).
type shardRun struct {
	res  StageResult
	dir  string
	keys []sentKey
	err  error
}

// runShards runs text unsharded (index 0 of the returned slice) and as count shards (1..count), all
// at once against the one mock, each in its own results directory.
func runShards(t *testing.T, text string, count int) []shardRun {
	t.Helper()
	out := make([]shardRun, count+1)
	var wg sync.WaitGroup
	for k := range out {
		wg.Go(func() {
			res, dir, err := runScenarioConfig(t, context.Background(), text, func(c *Config) {
				if k > 0 {
					c.Shard = workload.Shard{Index: k - 1, Count: count}
				}
			})
			out[k] = shardRun{dir: dir, err: err}
			if err == nil && len(res) == 1 {
				out[k].res = res[0]
			}
		})
	}
	wg.Wait()
	for k := range out {
		if out[k].err != nil {
			t.Fatalf("run %d: %v", k, out[k].err)
		}
		for _, r := range sentTimes(t, out[k].dir, out[k].res.T0Ns) {
			out[k].keys = append(out[k].keys, sentKey{r.conv, r.turn, time.Duration(r.intended)})
		}
		slices.SortFunc(out[k].keys, compareKeys)
	}
	return out
}

func compareKeys(a, b sentKey) int {
	if c := int(a.Offset - b.Offset); c != 0 {
		return c
	}
	return strings.Compare(a.Conv, b.Conv)
}

// ordinal is the global session ordinal at the end of a conversation id (sKK-JJJJJJ).
func ordinal(t *testing.T, conv string) int {
	t.Helper()
	_, j, _ := strings.Cut(conv, "-")
	n, err := strconv.Atoi(j)
	if err != nil {
		t.Fatalf("conversation id %q has no ordinal", conv)
	}
	return n
}

// TestShardsUnionIsTheUnshardedRun: for the open-loop modes (a trace's replay too), three shards of a scenario send,
// between them, exactly the unsharded run's requests — the same conversations at the same intended
// offsets from the origin — each shard only its own residue of the arrivals, and the shards'
// scheduled counts sum to the whole schedule. Arrivals within a few ms of the stage's end may be
// cut by the end in one run and not another (a late timer), so the comparison stops 50 ms before it.
func TestShardsUnionIsTheUnshardedRun(t *testing.T) {
	base, _ := startMock(t, nil)
	single := "  turns: {min: 1, max: 1}\n  user_input_tokens: {min: 5, max: 10}\n  max_output_tokens: {min: 2, max: 4}\n  think_time: {min: 1ms, max: 2ms}"
	// A bursty trace of 160 requests over 960 ms: bursts of 4 at one millisecond every 24 ms.
	var trace strings.Builder
	for i := range 160 {
		fmt.Fprintf(&trace, `{"timestamp": %d, "input_length": 20, "output_length": 3, "hash_ids": [%d]}`+"\n", 5000+(i/4)*24, i)
	}
	replaySource := "workload:\n  trace: {file: " + writeTrace(t, "shard.jsonl", trace.String()) + ", format: mooncake}\n"
	cases := []struct {
		name, load, source string
		span               time.Duration
	}{
		{"request_rate", "  mode: request_rate\n  max_in_flight: 16\n  stages:\n    - {rate: 150, warmup: 100ms, duration: 900ms}", "", time.Second},
		{"arrival_rate", "  mode: arrival_rate\n  stages:\n    - {sessions_per_sec: 120, max_concurrency: 16, warmup: 100ms, duration: 900ms}", "", time.Second},
		{"replay", "  mode: replay\n  max_in_flight: 16\n  stages:\n    - {warmup: 100ms, duration: 900ms}", replaySource, time.Second},
	}
	const count = 3
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := scenarioYAML(base, single, tc.load)
			if tc.source != "" {
				text = withSource(text, tc.source)
			}
			runs := runShards(t, text, count)
			cut := func(keys []sentKey) []sentKey {
				return slices.DeleteFunc(slices.Clone(keys), func(k sentKey) bool { return k.Offset >= tc.span-50*time.Millisecond })
			}
			var union []sentKey
			scheduled := 0
			for k, r := range runs[1:] {
				for _, key := range r.keys {
					if key.Turn != 0 || ordinal(t, key.Conv)%count != k {
						t.Fatalf("shard %d/%d sent %+v: not its arrival", k, count, key)
					}
				}
				union = append(union, cut(r.keys)...)
				scheduled += r.res.Scheduled
			}
			slices.SortFunc(union, compareKeys)
			want := cut(runs[0].keys)
			if len(want) < 80 {
				t.Fatalf("the unsharded run sent %d requests; the test needs more", len(want))
			}
			// A run that fell behind (a loaded machine, -race) leaves arrivals queued at the
			// max_in_flight cap when the stage ends: they are never started, on one side only. Any
			// difference must be such arrivals; every key both sent must agree.
			shardsNotStarted := 0
			for _, r := range runs[1:] {
				shardsNotStarted += r.res.NotStarted
			}
			onlyUnsharded, onlyUnion := keyDifference(want, union)
			if len(onlyUnion) > runs[0].res.NotStarted || len(onlyUnsharded) > shardsNotStarted {
				t.Fatalf("the shards' union is not the unsharded run (%d never started there, %d in the shards) (-unsharded +union):\n%s",
					runs[0].res.NotStarted, shardsNotStarted, cmp.Diff(want, union))
			}
			if len(onlyUnion)+len(onlyUnsharded) > 0 {
				t.Logf("%d arrivals sent only by the shards, %d only unsharded: each never started on the other side", len(onlyUnion), len(onlyUnsharded))
			}
			if scheduled != runs[0].res.Scheduled {
				t.Errorf("the shards scheduled %d arrivals between them; the unsharded run %d", scheduled, runs[0].res.Scheduled)
			}
		})
	}
}

// keyDifference returns the keys only in a and those only in b (both sorted by compareKeys).
func keyDifference(a, b []sentKey) (onlyA, onlyB []sentKey) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && compareKeys(a[i], b[j]) < 0):
			onlyA, i = append(onlyA, a[i]), i+1
		case i == len(a) || compareKeys(a[i], b[j]) > 0:
			onlyB, j = append(onlyB, b[j]), j+1
		default:
			i, j = i+1, j+1
		}
	}
	return onlyA, onlyB
}

// TestShardsSplitConcurrency: a concurrency stage of 7 sessions as three shards keeps 3, 2 and 2
// open (the remainder to the lowest index), and each shard's conversations are its residue of the
// pool: disjoint, and together the sessions the unsharded run starts from.
func TestShardsSplitConcurrency(t *testing.T) {
	base, _ := startMock(t, nil)
	runs := runShards(t, scenarioYAML(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 7, duration: 700ms}"), 3)
	seen := map[string]int{}
	for k, r := range runs[1:] {
		sessions := readSessions(t, filepath.Join(r.dir, "stage_01", "sessions.jsonl"))
		var edges []edge
		for _, s := range sessions {
			conv := s["conversation_id"].(string)
			if ordinal(t, conv)%3 != k {
				t.Fatalf("shard %d/3 ran %s: not its residue", k, conv)
			}
			if other, ok := seen[conv]; ok && other != k {
				t.Fatalf("%s ran on shards %d and %d", conv, other, k)
			}
			seen[conv] = k
			if s["start_ns"] != nil && s["end_ns"] != nil {
				edges = append(edges, edge{integer(s["start_ns"]), 1}, edge{integer(s["end_ns"]), -1})
			}
		}
		most := mostOpen(edges)
		if want := []int{3, 2, 2}[k]; most != want {
			t.Errorf("shard %d/3 had at most %d sessions open; its part of concurrency 7 is %d", k, most, want)
		}
	}
	if len(seen) == 0 {
		t.Fatal("the shards ran no sessions")
	}
}

// TestStageStartSetsTheOrigin: with a start barrier the stage's t0 is the instant it returned, in
// an open-loop and a closed-loop mode, and nothing is sent before it; a barrier error fails the run
// with its message and sends nothing.
func TestStageStartSetsTheOrigin(t *testing.T) {
	base, cap := startMock(t, nil)
	for _, load := range []string{
		"  mode: request_rate\n  stages:\n    - {rate: 100, duration: 300ms}",
		"  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 300ms}",
	} {
		var start time.Time
		res, dir, err := runScenarioConfig(t, context.Background(), scenarioYAML(base, shortSessions, load), func(c *Config) {
			c.StageStart = func(ctx context.Context, stage int) (time.Time, error) {
				start = time.Now().Add(250 * time.Millisecond)
				return start, nil
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		// t0 is epoch ns from the run's monotonic clock; the wall clock read here agrees within a
		// few ms unless it was stepped mid-test.
		if d := time.Duration(res[0].T0Ns - start.UnixNano()); d < -5*time.Millisecond || d > 5*time.Millisecond {
			t.Errorf("%s: t0 is %v from the barrier's instant", load, d)
		}
		recs := sentTimes(t, dir, res[0].T0Ns)
		if len(recs) == 0 {
			t.Fatalf("%s: no records", load)
		}
		for _, r := range recs {
			if r.credit < 0 {
				t.Fatalf("%s: a request issued %v before the barrier's instant", load, time.Duration(-r.credit))
			}
		}
	}
	before := requestsSeen(cap)
	_, _, err := runScenarioConfig(t, context.Background(), scenarioYAML(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 300ms}"), func(c *Config) {
		c.StageStart = func(context.Context, int) (time.Time, error) {
			return time.Time{}, errors.New("shard 2 did not report in within --join-timeout")
		}
	})
	if err == nil || !strings.Contains(err.Error(), "shard 2 did not report in") {
		t.Fatalf("a barrier error: run returned %v", err)
	}
	if n := requestsSeen(cap); n != before {
		t.Errorf("%d requests sent after the barrier failed", n-before)
	}
}

// requestsSeen is how many chat requests the mock has answered.
func requestsSeen(c *captured) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.requests {
		n += len(r)
	}
	return n
}

// TestShardNextSession: a concurrency shard takes its residue of the pool in order and wraps within
// it, marking the repeats as reuse; a pool shorter than the shard count leaves a shard only repeats.
// A reuse gets its own conversation id, numbered by its global ordinal (in the shard's residue
// class), and names the pool entry it replays.
func TestShardNextSession(t *testing.T) {
	cases := []struct {
		pool  int
		shard workload.Shard
		want  []string // conversation id, with <-entry for a reuse
	}{
		{10, workload.Shard{}, []string{"s01-000000", "s01-000001", "s01-000002", "s01-000003", "s01-000004", "s01-000005", "s01-000006", "s01-000007", "s01-000008", "s01-000009", "s01-000010<-0"}},
		{10, workload.Shard{Index: 0, Count: 3}, []string{"s01-000000", "s01-000003", "s01-000006", "s01-000009", "s01-000012<-0", "s01-000015<-3"}},
		{10, workload.Shard{Index: 1, Count: 3}, []string{"s01-000001", "s01-000004", "s01-000007", "s01-000010<-1", "s01-000013<-4"}},
		{10, workload.Shard{Index: 2, Count: 3}, []string{"s01-000002", "s01-000005", "s01-000008", "s01-000011<-2"}},
		{2, workload.Shard{Index: 3, Count: 4}, []string{"s01-000003<-1", "s01-000007<-1"}},
	}
	for _, tc := range cases {
		pool := make([]workload.SessionPlan, tc.pool)
		for i := range pool {
			pool[i].ID = fmt.Sprintf("s01-%06d", i)
		}
		s := &stageRun{cfg: &Config{Shard: tc.shard}, pool: &workload.StagePool{Sessions: pool}}
		var got []string
		for range tc.want {
			p := s.nextSession()
			id := p.conversationID()
			if p.plan != &pool[p.index] {
				t.Fatalf("pool %d, shard %+v: index %d is not the plan taken", tc.pool, tc.shard, p.index)
			}
			if p.reused {
				id += fmt.Sprintf("<-%d", p.index)
			}
			got = append(got, id)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("pool %d, shard %+v (-want +got):\n%s", tc.pool, tc.shard, diff)
		}
	}
}
