package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plload/plload/cluster"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/resultfiles"
)

// TestMergeOfRealShards runs three real shards (plload run --shard i/3) and the coordinator against
// one mock, merges them, and checks the merge against its own records and the shards: nothing lost
// (every record of every shard, each in its shard's residue class), the shards' windows the same
// instants after clock correction, and the numbers those of the merged records by the metrics code.
func TestMergeOfRealShards(t *testing.T) {
	const n = 3
	cfg := mock.DefaultConfig()
	cfg.Model, cfg.TTFT, cfg.TPS = "plload-mock", 4*time.Millisecond, 500
	m, err := mock.Start(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	coord, err := cluster.Start(ctx, cluster.ServeOptions{Listen: "127.0.0.1:0", Shards: n, JoinTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	path := filepath.Join(base, "shards.yaml")
	os.WriteFile(path, fmt.Appendf(nil, `name: shards
seed: 5
target: {base_url: %q, model: plload-mock, timeout: 10s}
personas: {count: 3, system_prompt_tokens: {min: 20, max: 40}}
session: {turns: {min: 2, max: 4}, user_input_tokens: {min: 5, max: 15}, max_output_tokens: {min: 4, max: 10}, think_time: {min: 5ms, max: 20ms}}
load:
  mode: concurrency
  drain_timeout: 5s
  session_pool_factor: 40
  stages: [{concurrency: 9, warmup: 200ms, duration: 800ms}]
slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}
`, m.BaseURL()), 0o644)
	var wg sync.WaitGroup
	codes, logs := make([]int, n), make([]bytes.Buffer, n)
	for i := range n {
		wg.Go(func() {
			codes[i] = Run(ctx, []string{"plload", "run", path, "--shard", fmt.Sprintf("%d/%d", i, n), "--coordinator", coord.Addr(),
				"--out", filepath.Join(base, fmt.Sprint(i)), "--quiet"}, &logs[i], &logs[i])
		})
	}
	wg.Wait()
	var dirs []string
	for i := range n {
		if codes[i] != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, codes[i], logs[i].String())
		}
		found, _ := filepath.Glob(filepath.Join(base, fmt.Sprint(i), "shards-*"))
		dirs = append(dirs, found...)
	}
	if err := coord.Wait(); err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	out := filepath.Join(base, "merged")
	if code, stdout, stderr := plload(t, append(append([]string{"merge"}, dirs...), "--out", out)...); code != 0 {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	merged, err := resultfiles.ReadStage(filepath.Join(out, "stage_01", "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkShardsAddUp(t, dirs, merged)
	checkNearOneProcess(t, path, merged)
	// The GPUs every shard read (the mock's exporter, found by auto) are the lowest shard's readings
	// in the merge, in coordinator time: a 0.8 s window gives no energy, which a note says.
	gpuLines, _ := os.ReadFile(filepath.Join(out, "stage_01", "gpu_metrics.jsonl"))
	if g := merged.GPU; g == nil || len(g.GPUs) != 1 || g.EnergyJ.OK || !strings.Contains(g.Note, "shorter than 2.0 s") ||
		!strings.HasSuffix(g.GPUs[0].Source, "/dcgm/metrics") || len(gpuLines) == 0 {
		t.Errorf("merged gpu %+v; gpu_metrics.jsonl %d bytes", g, len(gpuLines))
	}
	// The merged numbers are the merged records' by the metrics code, on the merged window.
	in := metrics.StageInput{Warmup: 200 * time.Millisecond, Duration: 800 * time.Millisecond, NeverStarted: -1,
		T0Ns: metrics.Some(merged.Summary.Window.T0Ns), SLO: merged.SLO, Cost: merged.Cost.CostInputs}
	again, err := metrics.SummarizeFile(filepath.Join(out, "stage_01", "profile_export.jsonl"), in, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(again, merged.Summary, cmpopts.EquateApprox(1e-9, 1e-9), cmpopts.IgnoreFields(metrics.StageSummary{}, "Warnings"), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("merged summary vs its records (-records +stage.json):\n%s", d)
	}
}

// checkShardsAddUp: every record of every shard is in the merge once, each shard ran only its
// ordinals, and the shards' t0 are the same instant, the merged t0 (the first issue) within 5 ms after it.
func checkShardsAddUp(t *testing.T, dirs []string, merged *resultfiles.StageReport) {
	t.Helper()
	ids := map[string]bool{}
	total, issued := 0, 0
	var t0s []int64
	var firstIssue int64
	for i, d := range dirs {
		st, err := resultfiles.ReadStage(filepath.Join(d, "stage_01", "stage.json"))
		if err != nil {
			t.Fatal(err)
		}
		raw := readJSONMap(t, filepath.Join(d, "stage_01", "stage.json"))
		off := mustInt(t, raw["shard"].(map[string]any)["clock_offset_ns"])
		t0s = append(t0s, st.Summary.Window.T0Ns+off)
		issued += st.Engine.Issued
		f, _ := os.Open(filepath.Join(d, "stage_01", "profile_export.jsonl"))
		metrics.ReadRecords(f, func(r *metrics.Record) error {
			total++
			if issue := r.CreditIssuedNs + off; firstIssue == 0 || issue < firstIssue {
				firstIssue = issue
			}
			if ordinalOf(r.ConversationID)%int64(len(dirs)) != int64(i) {
				t.Errorf("shard %d ran %s", i, r.ConversationID)
			}
			ids[r.XRequestID] = true
			return nil
		})
		f.Close()
	}
	if merged.Summary.Requests.Total != total || merged.Engine.Issued != issued || total != issued || len(ids) != total {
		t.Errorf("merged %d records (engine %d), shards wrote %d (issued %d, %d distinct ids)", merged.Summary.Requests.Total, merged.Engine.Issued, total, issued, len(ids))
	}
	// Each shard's t0 is the barrier's instant, the same on every shard; the merged t0 is the first
	// issue over the shards' records after clock correction (docs/deployment.md), never before the barrier.
	if d := spread(t0s); d > 5*time.Millisecond {
		t.Errorf("the shards' t0 are %v apart (want one instant to 5 ms): %v", d, t0s)
	}
	if got := merged.Summary.Window.T0Ns; got != firstIssue || got < slices.Min(t0s) {
		t.Errorf("merged t0 %d; want the shards' first issue %d, at or after their t0 %v", got, firstIssue, t0s)
	}
}

// checkNearOneProcess runs the same scenario as one process on the same mock: the merged run's
// load and latency are that run's within noise (loose bounds: a loaded 2-core box).
func checkNearOneProcess(t *testing.T, scenario string, merged *resultfiles.StageReport) {
	t.Helper()
	out := t.TempDir()
	if code, stdout, stderr := plload(t, "run", scenario, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("one process: exit %d\n%s%s", code, stdout, stderr)
	}
	found, _ := filepath.Glob(filepath.Join(out, "shards-*", "stage_01", "stage.json"))
	one, err := resultfiles.ReadStage(found[0])
	if err != nil {
		t.Fatal(err)
	}
	a, b := merged.Summary, one.Summary
	if r := a.Throughput.ReqPerSec / b.Throughput.ReqPerSec; r < 0.6 || r > 1.6 {
		t.Errorf("merged %.1f req/s, one process %.1f: not within noise", a.Throughput.ReqPerSec, b.Throughput.ReqPerSec)
	}
	if a.Active.Max != b.Active.Max {
		t.Errorf("merged active sessions max %d, one process %d: the shards' caps should add up to the scenario's", a.Active.Max, b.Active.Max)
	}
	if d := a.TTFT.P50 - b.TTFT.P50; d < -5 || d > 5 {
		t.Errorf("merged TTFT p50 %.2f ms, one process %.2f ms", a.TTFT.P50, b.TTFT.P50)
	}
}
