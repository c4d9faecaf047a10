package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// TestMain runs the tests from the repository's root, where a user runs plload (the example scenarios
// and the other packages' testdata are named from there), and lets a test run plload as a process of
// its own: this test binary, re-executed with PLLOAD_CLI_ARGS (the arguments, one per line), is the
// plload command, run in the directory its parent test is in.
func TestMain(m *testing.M) {
	if args := os.Getenv("PLLOAD_CLI_ARGS"); args != "" {
		os.Exit(Run(context.Background(), append([]string{"plload"}, strings.Split(args, "\n")...), os.Stdout, os.Stderr))
	}
	if err := os.Chdir(".."); err != nil {
		fmt.Fprintln(os.Stderr, "cli tests: cannot change to the repository root:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// plloadProcess starts plload with args as a separate process (its own Go runtime, CPU and clock
// reads), writing its output to log.
func plloadProcess(t *testing.T, log *bytes.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLLOAD_CLI_ARGS="+strings.Join(args, "\n"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestShardProofAsProcesses is issue 18's proof on one machine, run on purpose (it is slow):
// PLLOAD_SHARD_PROOF=1 go test ./cli -run ShardProof -v (PLLOAD_SHARD_PROOF_SESSIONS sets the
// sessions open across the shards; 400 by default, 10000 for the full proof). The mock, the
// coordinator and 4 shards are separate processes on loopback. It checks: the shards' stages start
// within 5 ms of each other (their first requests, on the coordinator's clock); nothing is lost (each shard's
// records equal its issued requests, and the merge holds them all); the merged numbers are the metrics
// code's over the merged records; and each shard's injector was not strained.
func TestShardProofAsProcesses(t *testing.T) {
	if os.Getenv("PLLOAD_SHARD_PROOF") == "" {
		t.Skip("slow: set PLLOAD_SHARD_PROOF=1 to run the sharded proof with separate processes")
	}
	const shards = 4
	sessions := 400
	if v, err := strconv.Atoi(os.Getenv("PLLOAD_SHARD_PROOF_SESSIONS")); err == nil && v >= shards {
		sessions = v
	}
	mockAddr, coordAddr, base := freeLoopbackAddr(t), freeLoopbackAddr(t), t.TempDir()
	var mockLog, coordLog bytes.Buffer
	plloadProcess(t, &mockLog, "mockserver", "--addr", mockAddr, "--ttft", "50ms", "--tps", "100")
	path := filepath.Join(base, "proof.yaml")
	os.WriteFile(path, fmt.Appendf(nil, `name: proof
seed: 18
target: {base_url: "http://%s/v1", model: plload-mock, timeout: 30s}
personas: {count: 20, system_prompt_tokens: {min: 50, max: 200}}
session: {turns: {min: 2, max: 4}, user_input_tokens: {min: 10, max: 40}, max_output_tokens: {min: 8, max: 24}, think_time: {min: 200ms, max: 1s}}
load:
  mode: concurrency
  drain_timeout: 20s
  stages: [{concurrency: %d, warmup: 2s, duration: 5s}]
slo: {ttft_p95: 5s, error_rate: 0.01}
`, mockAddr, sessions), 0o644)
	coord := plloadProcess(t, &coordLog, "coordinate", "--shards", strconv.Itoa(shards), "--listen", coordAddr, "--join-timeout", "60s")
	logs := make([]bytes.Buffer, shards)
	procs := make([]*exec.Cmd, shards)
	for i := range shards {
		procs[i] = plloadProcess(t, &logs[i], "run", path, "--shard", fmt.Sprintf("%d/%d", i, shards), "--coordinator", coordAddr,
			"--out", filepath.Join(base, "shards"), "--quiet", "--no-preflight")
	}
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("shard %d/%d: %v\n%s\nmock:\n%s", i, shards, err, logs[i].String(), mockLog.String())
		}
	}
	if err := coord.Wait(); err != nil {
		t.Fatalf("coordinator: %v\n%s", err, coordLog.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(base, "shards", "proof-*-shard*of4"))
	if len(dirs) != shards {
		t.Fatalf("shard results: %v", dirs)
	}
	// Clean injector health and a 5 ms start need a core per process (4 shards, the mock, the
	// coordinator); on fewer the shards take each other's CPU, and the checks rightly say so: then
	// they are reported, not asserted.
	strict := t.Errorf
	if runtime.NumCPU() < shards+2 {
		strict = t.Logf
	}
	var t0s []int64
	records := 0
	for _, d := range dirs {
		st, err := resultfiles.ReadStage(filepath.Join(d, "stage_01", "stage.json"))
		if err != nil {
			t.Fatal(err)
		}
		t0s = append(t0s, firstIssue(t, filepath.Join(d, "stage_01", "profile_export.jsonl"))+st.Shard.ClockOffsetNs)
		if st.Engine.Issued != st.Summary.Requests.Total {
			t.Errorf("shard %d: %d issued, %d records", st.Shard.Index, st.Engine.Issued, st.Summary.Requests.Total)
		}
		if w := st.Injector.Warnings(); len(w) > 0 {
			strict("shard %d's injector was strained (%d cores for %d processes): %v", st.Shard.Index, runtime.NumCPU(), shards+2, w)
		}
		records += st.Summary.Requests.Total
	}
	for _, t0 := range t0s[1:] {
		if d := time.Duration(t0 - t0s[0]).Abs(); d > 5*time.Millisecond {
			strict("the shards' first requests went out %v apart (%v on the coordinator's clock; %d cores for %d processes)", d, t0s, runtime.NumCPU(), shards+2)
		}
	}
	out := filepath.Join(base, "merged")
	if code, stdout, stderr := plload(t, append(append([]string{"merge"}, dirs...), "--out", out)...); code != 0 {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	merged, err := resultfiles.ReadStage(filepath.Join(out, "stage_01", "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	if merged.Summary.Requests.Total != records {
		t.Errorf("merged %d records of the shards' %d", merged.Summary.Requests.Total, records)
	}
	in := resultfiles.StageInput(mustScenario(t, filepath.Join(out, "scenario.resolved.yaml")), 0)
	in.T0Ns = metrics.Some(merged.Summary.Window.T0Ns)
	again, err := metrics.SummarizeFile(filepath.Join(out, "stage_01", "profile_export.jsonl"), in, false)
	if err != nil {
		t.Fatal(err)
	}
	if again.TTFT != merged.Summary.TTFT || again.Throughput.OutTokPerSec != merged.Summary.Throughput.OutTokPerSec || again.ITL != merged.Summary.ITL {
		t.Errorf("merged stage.json differs from its records: TTFT %+v vs %+v, out tok/s %v vs %v", merged.Summary.TTFT, again.TTFT,
			merged.Summary.Throughput.OutTokPerSec, again.Throughput.OutTokPerSec)
	}
	t.Logf("%d sessions over %d shard processes: %d requests, first requests within %v, merged TTFT p50 %.1f ms, out tok/s %.0f",
		sessions, shards, records, spread(t0s), merged.Summary.TTFT.P50, merged.Summary.Throughput.OutTokPerSec)
}

// firstIssue is the earliest credit_issued_ns in a records file: when the shard's stage really began.
func firstIssue(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first := int64(0)
	err = metrics.ReadRecords(f, func(r *metrics.Record) error {
		if first == 0 || r.CreditIssuedNs < first {
			first = r.CreditIssuedNs
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return first
}

func spread(ns []int64) time.Duration {
	lo, hi := ns[0], ns[0]
	for _, v := range ns {
		lo, hi = min(lo, v), max(hi, v)
	}
	return time.Duration(hi - lo)
}

func mustScenario(t *testing.T, path string) *workload.Scenario {
	t.Helper()
	sc, issues := workload.Load(path, workload.LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	return sc
}
