package cli

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plload/plload/cluster"
	"github.com/plload/plload/workload"
)

// TestInterruptWhileWaitingForCoordinator: Ctrl+C (SIGINT) while a shard waits for the others — at
// the join, or at stage 1's barrier — is the run's interrupt: exit 130 and a message saying where it
// waited, not exit 1 as a failed barrier. The shard is a separate process; the coordinator and the
// other shard (which never comes) are this test.
func TestInterruptWhileWaitingForCoordinator(t *testing.T) {
	tests := []struct {
		name string
		// joinOther: the test joins as shard 1, so shard 0 goes past the join to stage 1's barrier.
		joinOther bool
		want      string
	}{
		{name: "at the join", want: "interrupted while waiting for the coordinator"},
		{name: "at stage 1's barrier", joinOther: true, want: "interrupted while waiting for the coordinator at stage 1's barrier"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			path := filepath.Join(base, "wait.yaml")
			scenario := "name: wait\nseed: 1\ntarget: {base_url: mock, mock: {ttft: 10ms, tps: 500}, timeout: 10s}\n" +
				"personas: {count: 2, system_prompt_tokens: {min: 10, max: 20}}\n" +
				"session: {turns: {min: 1, max: 2}, user_input_tokens: {min: 5, max: 10}, max_output_tokens: {min: 4, max: 8}, think_time: {min: 10ms, max: 20ms}}\n" +
				"load: {mode: concurrency, stages: [{concurrency: 2, warmup: 0s, duration: 2s}]}\n"
			if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
				t.Fatal(err)
			}
			var coordLog syncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			c, err := cluster.Start(ctx, cluster.ServeOptions{Listen: "127.0.0.1:0", Shards: 2, JoinTimeout: time.Minute,
				Log: slog.New(slog.NewTextHandler(&coordLog, nil))})
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			t.Cleanup(func() { cancel(); c.Wait() })
			var out syncBuffer
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "PLLOAD_CLI_ARGS="+strings.Join([]string{"run", path, "--shard", "0/2", "--coordinator", c.Addr(),
				"--out", filepath.Join(base, "out"), "--quiet", "--join-timeout", "1m"}, "\n"))
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			if tt.joinOther {
				sha, err := cluster.ScenarioSHA(mustScenario(t, path))
				if err != nil {
					t.Fatal(err)
				}
				m, err := cluster.Join(ctx, cluster.JoinOptions{Addr: c.Addr(), Shard: workload.Shard{Index: 1, Count: 2}, ScenarioSHA: sha, Timeout: time.Minute})
				if err != nil {
					t.Fatalf("joining as shard 1: %v\n%s", err, out.String())
				}
				t.Cleanup(func() { m.Close() })
				// Shard 0 makes stage 1's directory just before its barrier (then waits there: shard 1 never comes).
				waitFor(t, 30*time.Second, "shard 0 at stage 1", func() bool {
					d, _ := filepath.Glob(filepath.Join(base, "out", "wait-*-shard0of2", "stage_01", "dataset.jsonl"))
					return len(d) == 1
				})
			} else {
				waitFor(t, 30*time.Second, "shard 0 joined", func() bool { return strings.Contains(coordLog.String(), `msg="shard joined" index=0`) })
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("shard 0 still running 30 s after SIGINT:\n%s", out.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(out.String(), tt.want) {
				t.Errorf("exit %d; want %d with %q:\n%s", code, exitInterrupted, tt.want, out.String())
			}
		})
	}
}
