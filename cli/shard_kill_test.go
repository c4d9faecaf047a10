package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plload/plload/cluster"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// killScenario is two stages on the real mock; each shard writes its first records to disk (the
// writer's 256 KiB buffer) within about a second of stage 1's start.
const killScenario = `name: kill
seed: 18
target: {base_url: "http://%s/v1", model: plload-mock, timeout: 30s}
personas: {count: 10, system_prompt_tokens: {min: 50, max: 200}}
session: {turns: {min: 2, max: 4}, user_input_tokens: {min: 10, max: 40}, max_output_tokens: {min: 8, max: 24}, think_time: {min: 10ms, max: 50ms}}
load:
  mode: concurrency
  drain_timeout: 10s
  stages: [{concurrency: 30, warmup: 1s, duration: 5s}, {concurrency: 30, warmup: 1s, duration: 3s}]
slo: {ttft_p95: 10s, error_rate: 0.5}
`

// waitFor polls cond until it holds or the bound passes (a condition with a deadline, not a sleep
// standing in for one).
func waitFor(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(bound)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %v", what, bound)
		}
	}
}

// waitExit waits for a process within bound and returns its exit code (-1: killed by a signal).
func waitExit(t *testing.T, p *exec.Cmd, bound time.Duration, name string, log *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%s: %v", name, err)
		}
		return p.ProcessState.ExitCode()
	case <-time.After(bound):
		_ = p.Process.Kill()
		<-done
		t.Fatalf("%s did not exit within %v:\n%s", name, bound, log.String())
		return 0
	}
}

// TestShardKilledMidStage: the mock, the coordinator and 3 shards of a 2-stage run as separate
// processes; shard 1 is SIGKILLed during stage 1, once its first records are on disk. The
// coordinator notices its connection drop and lets the others run both stages at once (its join
// timeout is a minute: they are not released by it), then exits 1 naming shard 1 and its stage; the
// survivors' results are whole. merge refuses the killed shard naming it, and with --allow-partial
// merges it and names it in merge.json.
func TestShardKilledMidStage(t *testing.T) {
	const shards, victim = 3, 1
	mockAddr, coordAddr, base := freeLoopbackAddr(t), freeLoopbackAddr(t), t.TempDir()
	var mockLog, coordLog bytes.Buffer
	plloadProcess(t, &mockLog, "mockserver", "--addr", mockAddr, "--ttft", "10ms", "--tps", "500")
	path := filepath.Join(base, "kill.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, killScenario, mockAddr), 0o644); err != nil {
		t.Fatal(err)
	}
	coord := plloadProcess(t, &coordLog, "coordinate", "--shards", fmt.Sprint(shards), "--listen", coordAddr, "--join-timeout", "60s")
	logs := make([]bytes.Buffer, shards)
	procs := make([]*exec.Cmd, shards)
	for i := range shards {
		procs[i] = plloadProcess(t, &logs[i], "run", path, "--shard", fmt.Sprintf("%d/%d", i, shards), "--coordinator", coordAddr,
			"--out", filepath.Join(base, "shards"), "--quiet", "--no-preflight", "--join-timeout", "60s")
	}
	victimDir := func() string {
		dirs, _ := filepath.Glob(filepath.Join(base, "shards", fmt.Sprintf("kill-*-shard%dof%d", victim, shards)))
		if len(dirs) != 1 {
			return ""
		}
		return dirs[0]
	}
	// Records reach the disk during the stage under the name the writer renames at its end.
	waitFor(t, 60*time.Second, "shard 1's first records on disk", func() bool {
		d := victimDir()
		info, err := os.Stat(filepath.Join(d, "stage_01", "profile_export.jsonl"+metrics.WritingSuffix))
		return d != "" && err == nil && info.Size() > 0
	})
	killedAt := time.Now()
	if err := procs[victim].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, procs[victim], 10*time.Second, "the killed shard", &logs[victim])
	for i := range shards {
		if i == victim {
			continue
		}
		if code := waitExit(t, procs[i], 60*time.Second, fmt.Sprintf("shard %d", i), &logs[i]); code != 0 {
			t.Errorf("shard %d exited %d; want 0 (its own results are whole):\n%s", i, code, logs[i].String())
		}
		if !strings.Contains(logs[i].String(), "shard(s) [1] of this run were lost") {
			t.Errorf("shard %d's output does not say shard 1 was lost:\n%s", i, logs[i].String())
		}
	}
	// Stage 1's rest (~5 s) and stage 2 (4 s) with drains; the minute's join timeout never came into it.
	if took := time.Since(killedAt); took > 45*time.Second {
		t.Errorf("the survivors finished %v after the kill; want them released at once, not by the 60 s join timeout", took)
	}
	if code := waitExit(t, coord, 20*time.Second, "the coordinator", &coordLog); code != exitFailed ||
		!strings.Contains(coordLog.String(), "shard 1 lost during stage 1: its connection to the coordinator dropped") {
		t.Errorf("coordinator: exit %d; want 1 naming shard 1 lost during stage 1:\n%s", code, coordLog.String())
	}
	var dirs []string
	for i := range shards {
		d, _ := filepath.Glob(filepath.Join(base, "shards", fmt.Sprintf("kill-*-shard%dof%d", i, shards)))
		if len(d) != 1 {
			t.Fatalf("shard %d's results: %v", i, d)
		}
		dirs = append(dirs, d[0])
		if i == victim {
			continue
		}
		for _, stage := range []string{"stage_01", "stage_02"} {
			st, err := resultfiles.ReadStage(filepath.Join(d[0], stage, "stage.json"))
			if err != nil {
				t.Fatalf("survivor %d: %v", i, err)
			}
			if st.Partial || st.Engine.Issued == 0 || st.Engine.Issued != st.Summary.Requests.Total {
				t.Errorf("survivor %d %s: partial %v, %d issued, %d records; want whole", i, stage, st.Partial, st.Engine.Issued, st.Summary.Requests.Total)
			}
		}
	}
	out := filepath.Join(base, "merged")
	code, stdout, stderr := plload(t, append(append([]string{"merge"}, dirs...), "--out", out)...)
	if code != exitBadInput || !strings.Contains(stderr, "shard 1/3: no report.json (the shard did not finish)") || !strings.Contains(stderr, "--allow-partial") {
		t.Errorf("merge without --allow-partial: exit %d; want 2 naming shard 1 and why\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = plload(t, append(append([]string{"merge"}, dirs...), "--out", out, "--allow-partial")...)
	// Exit 1 is right here: every merged stage is partial (shard 1 is missing from it), so none is
	// the headline one that meets the SLO.
	if code != exitFailed || !strings.Contains(stdout, "warning: shard 1/3: no report.json") || !strings.Contains(stdout, "shard 1/3 is partial in this stage") {
		t.Fatalf("merge --allow-partial: exit %d; want 1 (every stage partial) with warnings naming shard 1\n%s%s", code, stdout, stderr)
	}
	// Stage 1's merged records are the survivors' and every whole line the killed shard left in the
	// file it was still writing: none of its measured requests is dropped.
	want := 0
	for i, d := range dirs {
		name := "profile_export.jsonl"
		if i == victim {
			name += metrics.WritingSuffix
		}
		n := countLines(t, filepath.Join(d, "stage_01", name))
		if i == victim && n == 0 {
			t.Fatalf("the killed shard left no records in %s", name)
		}
		want += n
	}
	if got := countLines(t, filepath.Join(out, "stage_01", "profile_export.jsonl")); got != want {
		t.Errorf("merged stage 1 has %d records; want %d (the survivors' and the killed shard's whole lines)", got, want)
	}
	data, err := os.ReadFile(filepath.Join(out, "merge.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man cluster.MergeManifest
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	for _, s := range man.Shards {
		if partial := s.Problem != ""; partial != (s.Index == victim) || s.Dir == "" {
			t.Errorf("merge.json shard %d: dir %q, problem %q; want only shard 1 partial", s.Index, s.Dir, s.Problem)
		}
	}
}
