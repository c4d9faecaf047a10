package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plload/plload/cluster"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// shardScenario is a two-stage concurrency scenario against base (a URL, or mock).
func shardScenario(t *testing.T, base string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sh.yaml")
	text := `name: sh
seed: 3
target: {base_url: ` + base + `, model: m, mock: {ttft: 5ms, tps: 500}, timeout: 5s}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
session:
  turns: {min: 1, max: 2}
  user_input_tokens: {min: 5, max: 15}
  max_output_tokens: {min: 5, max: 10}
  think_time: {min: 5ms, max: 10ms}
load:
  mode: concurrency
  drain_timeout: 5s
  stages:
    - {concurrency: 5, warmup: 100ms, duration: 400ms}
    - {concurrency: 7, duration: 400ms}
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestShardFlagsRefused: a bad --shard (or a shard flag without what it needs) exits 2 naming the
// flag, and nothing reaches the target — no connection is even opened — and no results directory
// is made.
func TestShardFlagsRefused(t *testing.T) {
	for _, env := range []string{"JOB_COMPLETION_INDEX", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PLLOAD_NO_TOKEN"} {
		t.Setenv(env, "")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	scenario := shardScenario(t, "http://"+ln.Addr().String()+"/v1")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "3/3"}, "--shard 3/3"},
		{[]string{"--shard", "-1/2"}, "--shard -1/2"},
		{[]string{"--shard", "0/0"}, "--shard 0/0"},
		{[]string{"--shard", "one/2"}, `--shard "one/2"`},
		{[]string{"--shard", "auto"}, "--shard auto: none of"},
		{[]string{"--shard", "0/2", "--shards", "3"}, "--shards is 3"},
		{[]string{"--shard", "auto", "--shards", "0"}, "--shards 0"},
		{[]string{"--coordinator", "127.0.0.1:1"}, "--coordinator 127.0.0.1:1 without --shard"},
		{[]string{"--shard", "0/2", "--token-env", "PLLOAD_NO_TOKEN"}, "--token-env without --coordinator"},
		{[]string{"--shard", "0/2", "--coordinator", "127.0.0.1:1", "--token-env", "PLLOAD_NO_TOKEN"}, "--token-env PLLOAD_NO_TOKEN"},
		{[]string{"--shard", "0/2", "--coordinator", "127.0.0.1:1", "--join-timeout", "0s"}, "--join-timeout"},
	}
	for _, tc := range cases {
		out := t.TempDir()
		code, _, stderr := plload(t, append([]string{"run", scenario, "--out", out, "--quiet"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tc.args, code, tc.want, stderr)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			t.Errorf("%v: files were created: %v", tc.args, entries)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections reached the target", n)
	}
}

// TestShardedRunWithCoordinator: three shards of a scenario against one coordinator each write
// their own results directory (named by shard, so one volume holds them all), whose stage.json and
// report.json carry the shard block with the measured clock offset; every shard's stages start at
// the coordinator's one instant (t0 within 2 ms on one machine), and the shards' conversations are
// disjoint residues of the pool.
func TestShardedRunWithCoordinator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	coord, err := cluster.Start(ctx, cluster.ServeOptions{Listen: "127.0.0.1:0", Shards: 3, JoinTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	scenario, out := shardScenario(t, "mock"), t.TempDir()
	var wg sync.WaitGroup
	results := make([]string, 3)
	for i := range 3 {
		wg.Go(func() {
			code, stdout, stderr := plload(t, "run", scenario, "--out", out, "--quiet", "--shard", []string{"0/3", "1/3", "2/3"}[i], "--coordinator", coord.Addr())
			if code != 0 {
				results[i] = stdout + stderr
			}
		})
	}
	wg.Wait()
	for i, r := range results {
		if r != "" {
			t.Fatalf("shard %d/3 failed:\n%s", i, r)
		}
	}
	type block struct {
		Index, Count        int
		ClockOffsetNs       int64 `json:"clock_offset_ns"`
		OffsetUncertaintyNs int64 `json:"offset_uncertainty_ns"`
	}
	var t0 [2][3]int64
	seen := map[string]int{}
	for i := range 3 {
		dirs, _ := filepath.Glob(filepath.Join(out, "sh-*-shard"+[]string{"0", "1", "2"}[i]+"of3"))
		if len(dirs) != 1 {
			t.Fatalf("shard %d/3: results dirs %v", i, dirs)
		}
		var rep struct{ Shard *block }
		readJSON(t, filepath.Join(dirs[0], "report.json"), &rep)
		validateSchemas(t, dirs[0])
		for stage := range 2 {
			var st struct {
				Shard   *block
				Summary struct {
					Window struct {
						T0Ns int64 `json:"t0_ns"`
					}
				}
			}
			readJSON(t, filepath.Join(dirs[0], "stage_0"+[]string{"1", "2"}[stage], "stage.json"), &st)
			if st.Shard == nil || rep.Shard == nil || st.Shard.Index != i || st.Shard.Count != 3 || st.Shard.OffsetUncertaintyNs <= 0 || cmp.Diff(st.Shard, rep.Shard) != "" {
				t.Fatalf("shard %d/3 stage %d: shard block %+v, report.json's %+v", i, stage+1, st.Shard, rep.Shard)
			}
			t0[stage][i] = st.Summary.Window.T0Ns
			data, _ := os.ReadFile(filepath.Join(dirs[0], "stage_0"+[]string{"1", "2"}[stage], "sessions.jsonl"))
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var s struct {
					ConversationID string `json:"conversation_id"`
				}
				json.Unmarshal([]byte(line), &s)
				_, ord, _ := strings.Cut(s.ConversationID, "-")
				if j, err := strconv.Atoi(ord); err != nil || j%3 != i {
					t.Fatalf("shard %d/3 ran %q: not its residue", i, s.ConversationID)
				}
				if other, ok := seen[s.ConversationID]; ok && other != i {
					t.Fatalf("%s ran on shards %d and %d", s.ConversationID, other, i)
				}
				seen[s.ConversationID] = i
			}
		}
	}
	for stage, ts := range t0 {
		for i := range ts {
			if d := time.Duration(ts[i] - ts[0]); d < -2*time.Millisecond || d > 2*time.Millisecond {
				t.Errorf("stage %d: shard %d's t0 is %v from shard 0's", stage+1, i, d)
			}
		}
	}
}

// validateSchemas checks a results directory's report.json and stage_01/stage.json against
// resultfiles/schema (the shard block included).
func validateSchemas(t *testing.T, dir string) {
	t.Helper()
	c := jsonschema.NewCompiler()
	const base = "https://github.com/plload/plload/resultfiles/schema/"
	for _, name := range []string{"report.schema.json", "stage.schema.json"} {
		f, err := os.Open(filepath.Join("resultfiles", "schema", name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil || c.AddResource(base+name, doc) != nil {
			t.Fatalf("resultfiles/schema/%s: %v", name, err)
		}
	}
	for file, schema := range map[string]string{"report.json": "report.schema.json", "stage_01/stage.json": "stage.schema.json"} {
		sch, err := c.Compile(base + schema)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(doc); err != nil {
			t.Errorf("%s does not match %s: %v", file, schema, err)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestShardZeroCoordinates: `run --coordinate` on shard 0 is the coordinator too (no separate
// plload coordinate), whichever shard starts first; both shards finish, their stages start
// together, and --coordinate anywhere but shard 0 is refused.
func TestShardZeroCoordinates(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	scenario, out := shardScenario(t, "mock"), t.TempDir()
	var wg sync.WaitGroup
	results := make([]string, 2)
	for i, args := range [][]string{{"--shard", "1/2", "--coordinator", addr}, {"--shard", "0/2", "--coordinator", addr, "--coordinate"}} {
		wg.Go(func() {
			code, stdout, stderr := plload(t, append([]string{"run", scenario, "--out", out, "--quiet"}, args...)...)
			if code != 0 {
				results[i] = fmt.Sprintf("exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
	wg.Wait()
	for i, r := range results {
		if r != "" {
			t.Fatalf("shard run %d failed:\n%s", i, r)
		}
	}
	var t0 []int64
	for _, i := range []string{"0", "1"} {
		dirs, _ := filepath.Glob(filepath.Join(out, "sh-*-shard"+i+"of2"))
		if len(dirs) != 1 {
			t.Fatalf("shard %s/2: results dirs %v", i, dirs)
		}
		var st struct {
			Summary struct {
				Window struct {
					T0Ns int64 `json:"t0_ns"`
				}
			}
		}
		readJSON(t, filepath.Join(dirs[0], "stage_01", "stage.json"), &st)
		t0 = append(t0, st.Summary.Window.T0Ns)
	}
	if d := time.Duration(t0[0] - t0[1]).Abs(); d > 5*time.Millisecond {
		t.Errorf("the shards' stage 1 started %v apart", d)
	}
	code, _, stderr := plload(t, "run", scenario, "--out", t.TempDir(), "--shard", "1/2", "--coordinator", addr, "--coordinate")
	if code != 2 || !strings.Contains(stderr, "accepted: --coordinate on shard 0") {
		t.Errorf("--coordinate on shard 1: exit %d\n%s", code, stderr)
	}
}
