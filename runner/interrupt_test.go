package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// interruptChildEnv, set in a child process of this test binary, is the moment the child waits at
// for its parent's SIGINT ("start" or "report"); interruptScenarioEnv and interruptOutEnv name its
// scenario and results base.
const (
	interruptChildEnv    = "PLLOAD_TEST_INTERRUPT_AT"
	interruptScenarioEnv = "PLLOAD_TEST_INTERRUPT_SCENARIO"
	interruptOutEnv      = "PLLOAD_TEST_INTERRUPT_OUT"
)

// TestInterruptChild is the child's body, run only in the child. It starts as main does
// (CatchSignals first) and prints a line at the moment its parent sends SIGINT at:
//   - start: "caught", then it waits for a line on stdin before the run: the signal comes before
//     any handler of a command is installed (the scenario still loading, in plload);
//   - report: "rendering" from the renderer, called once the stages ended and report.json was
//     written; the renderer returns once the run's handler said it is stopping.
func TestInterruptChild(t *testing.T) {
	at := os.Getenv(interruptChildEnv)
	if at == "" {
		t.Skip("the child of TestInterruptAtEveryMoment")
	}
	CatchSignals(os.Stderr)
	if at == "start" {
		fmt.Println("caught")
		bufio.NewReader(os.Stdin).ReadString('\n') // the parent never writes: only the signal ends this
	}
	sc, issues := workload.Load(os.Getenv(interruptScenarioEnv), workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The renderer returns once the run's handler has said it is stopping: the signal reached the
	// run, not only this test.
	stopping := make(chan struct{})
	stderr := &watchWriter{w: os.Stderr, want: "stopping", seen: stopping}
	var rendered bool
	render := func(string, *workload.Scenario, *resultfiles.Report) error {
		if rendered {
			return nil
		}
		rendered = true
		fmt.Println("rendering")
		select {
		case <-stopping:
			return nil
		case <-time.After(time.Minute):
			return errors.New("no SIGINT came within a minute")
		}
	}
	_, err := Run(context.Background(), sc, Options{Base: os.Getenv(interruptOutEnv), Quiet: true, Preflight: true, Tool: "plload test", Render: render},
		io.Discard, stderr)
	code := 0
	var ee *Error
	switch {
	case errors.As(err, &ee):
		code = int(ee.Code)
		fmt.Fprintln(os.Stderr, "plload:", err)
	case err != nil:
		code = 1
		fmt.Fprintln(os.Stderr, "plload:", err)
	}
	os.Exit(code)
}

// TestInterruptAtEveryMoment: SIGINT at a moment where no stage runs is still plload's interrupt —
// exit 130, said on stderr —: before any command's handler exists (the process used to die by the
// signal's default action), and while the report is written after the last stage (the run used to
// exit 0 with report.json's interrupted: false). The child says when it is at the moment; no sleeps.
func TestInterruptAtEveryMoment(t *testing.T) {
	tests := []struct {
		at, line, stderr string
		report           bool // report.json exists and says interrupted: true
	}{
		{at: "start", line: "caught", stderr: "interrupt: interrupted"},
		{at: "report", line: "rendering", stderr: "the stages have ended", report: true},
	}
	for _, tt := range tests {
		t.Run(tt.at, func(t *testing.T) {
			base := t.TempDir()
			path := filepath.Join(base, "sig.yaml")
			scenario := "name: sig\nseed: 1\ntarget: {base_url: mock, mock: {ttft: 1ms, tps: 2000}, timeout: 10s, server_metrics_url: \"off\"}\n" +
				"personas: {count: 2, system_prompt_tokens: {min: 10, max: 20}}\n" +
				"session: {turns: {min: 1, max: 2}, user_input_tokens: {min: 5, max: 10}, max_output_tokens: {min: 4, max: 8}, think_time: {min: 0s, max: 0s}}\n" +
				"load: {mode: concurrency, stages: [{concurrency: 2, warmup: 0s, duration: 1m, requests: 6}]}\n"
			if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(base, "out")
			cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), interruptChildEnv+"="+tt.at, interruptScenarioEnv+"="+path, interruptOutEnv+"="+out)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			deadline := time.After(time.Minute)
		wait:
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("the child ended before %q:\n%s", tt.line, stderr.String())
					}
					if l == tt.line {
						break wait
					}
				case <-deadline:
					t.Fatalf("no %q from the child within a minute:\n%s", tt.line, stderr.String())
				}
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			go func() {
				for range lines { // the rest of the child's stdout
				}
			}()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatalf("the child still runs a minute after SIGINT:\n%s", stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != int(Interrupted) || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d (%v), want %d with %q on stderr:\n%s", code, cmd.ProcessState, Interrupted, tt.stderr, stderr.String())
			}
			runs, _ := filepath.Glob(filepath.Join(out, "sig-*", "report.json"))
			if !tt.report {
				if len(runs) > 0 {
					t.Errorf("a report was written: %v", runs)
				}
				return
			}
			if len(runs) != 1 {
				t.Fatalf("report.json: %v", runs)
			}
			data, err := os.ReadFile(runs[0])
			if err != nil {
				t.Fatal(err)
			}
			var rep struct{ Interrupted bool }
			if err := json.Unmarshal(data, &rep); err != nil || !rep.Interrupted {
				t.Errorf("report.json: interrupted %v (%v), want true", rep.Interrupted, err)
			}
		})
	}
}

// watchWriter passes writes on to w and closes seen once they hold want.
type watchWriter struct {
	mu   sync.Mutex
	w    io.Writer
	want string
	seen chan struct{}
	text strings.Builder
}

func (ww *watchWriter) Write(p []byte) (int, error) {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	if !strings.Contains(ww.text.String(), ww.want) {
		ww.text.Write(p)
		if strings.Contains(ww.text.String(), ww.want) {
			close(ww.seen)
		}
	}
	return ww.w.Write(p)
}
