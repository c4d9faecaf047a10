package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNohupKeepsRunning: a run started under nohup (SIGHUP ignored) goes on when its terminal
// hangs up, and still stops at SIGTERM with exit 130 and a partial stage.
// Catches: plload turning an ignored SIGHUP back on, so a soak started with nohup stopped when the
// user logged out.
func TestNohupKeepsRunning(t *testing.T) {
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("no nohup on this machine")
	}
	bin := buildBinary(t)
	scenario := filepath.Join(t.TempDir(), "long.yaml")
	data, _ := os.ReadFile("cli/testdata/tiny.yaml")
	os.WriteFile(scenario, []byte(strings.Replace(string(data), "duration: 800ms}", "duration: 60s}", 1)), 0o644)
	cmd := exec.Command(nohup, bin, "run", scenario, "--out", t.TempDir())
	cmd.Env = append(os.Environ(), "PLLOAD_TINY_KEY=k", "PLLOAD_TINY_SECRET=s")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), what); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q within 30 s:\n%s", what, out.String())
			}
		}
	}
	waitFor("stage starting")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The hangup must change nothing: the run is still going a while later (60 s stage).
	select {
	case err := <-exited:
		t.Fatalf("SIGHUP under nohup ended the run (%v):\n%s", err, out.String())
	case <-time.After(time.Second):
	}
	cmd.Process.Signal(syscall.SIGTERM)
	var ee *exec.ExitError
	if err := <-exited; !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("SIGTERM: %v, want exit 130:\n%s", err, out.String())
	}
}
