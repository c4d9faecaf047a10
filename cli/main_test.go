package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plload/plload/workload"
)

// plload runs the CLI in-process and returns its exit code, stdout and stderr.
func plload(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), append([]string{"plload"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateSmoke(t *testing.T) {
	code, out, errOut := plload(t, "validate", "scenarios/smoke.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	sc, issues := workload.Load("scenarios/smoke.yaml", workload.LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: smoke", "base_url: mock", "stage  load", "E[turns]", "concurrency 2", "concurrency 4",
		w.Stages[0].SHA256, w.Stages[1].SHA256, "no warnings"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateBadScenario(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\ntarget: {base_url: mock}\npersonas: {count: 0, system_prompt_tokens: 10}\n"), 0o644)
	code, out, errOut := plload(t, "validate", bad)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if out != "" {
		t.Fatalf("a bad scenario printed a resolved scenario:\n%s", out)
	}
	for _, want := range []string{bad + ":3:19: personas.count: found 0", bad + ":1:1: session: required but missing; accepted: a mapping with turns, user_input_tokens, max_output_tokens, think_time", "load: required but missing", "nothing was sent"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"validate"}, 2, "expected one argument"},
		{[]string{"validate", "no/such/file.yaml"}, 2, "cannot read the scenario file"},
		{[]string{"validate", "--nope", "x"}, 2, "validate: unknown flag --nope; see plload validate --help"},
		{[]string{"mockserver", "--tps", "0"}, 2, "--tps 0: accepted: tokens per second"},
		{[]string{"mockserver", "--error-rate", "0.7", "--cut-rate", "0.5"}, 2, "add up to 1.2"},
		{[]string{"mockserver", "extra"}, 2, "takes no arguments"},
		{[]string{"selftest", "--ladder", "1,x"}, 2, "accepted: positive whole numbers"},
		{[]string{"selftest", "--tokens", "1"}, 2, "--tokens ≥ 2"},
		{[]string{"report", "results/x"}, 2, "no stage_NN/stage.json"},
		{[]string{"report"}, 2, "expected one or more results directories"},
		{[]string{"report", "--records", "no/such.jsonl"}, 2, "no such file"},
		{[]string{"run", "no/such.yaml"}, 2, "cannot read the scenario file"},
		{[]string{"version"}, 0, ""},
		{[]string{"report", "--records", "metrics/testdata/aiperf_profile_export.jsonl", "--ttft-p95", "100ms", "--itl-p95", "30ms", "--gpu-hourly-usd", "2"}, 0, "**Headline**: stage 01:"},
	}
	for _, tc := range cases {
		code, out, errOut := plload(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("plload %v: exit %d (want %d), output lacks %q:\n%s%s", tc.args, code, tc.code, tc.want, out, errOut)
		}
	}
	_, out, _ := plload(t, "version")
	if !strings.HasPrefix(out, "plload ") || !strings.Contains(out, "go1.") {
		t.Errorf("version output: %q", out)
	}
}

// syncBuffer is a bytes.Buffer safe to write from the command and read from the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runMockserver starts `plload mockserver args…` in-process and waits for its "listening on" line;
// it returns the URL it names, its standard output, and stop, which interrupts it and fails the test
// unless it exits 0 within 10 s.
func runMockserver(t *testing.T, args ...string) (url string, out *syncBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out = &syncBuffer{}
	var errOut syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, append([]string{"plload", "mockserver", "--addr", "127.0.0.1:0"}, args...), out, &errOut)
	}()
	for deadline := time.Now().Add(10 * time.Second); url == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("mockserver did not say where it listens: %q %q", out.String(), errOut.String())
		}
		if _, rest, ok := strings.Cut(out.String(), "listening on "); ok && strings.Contains(rest, "\n") {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	return url, out, func() {
		t.Helper()
		cancel()
		select {
		case c := <-code:
			if c != 0 {
				t.Fatalf("exit %d after a stop signal: %s", c, errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("mockserver did not stop")
		}
	}
}

func TestMockserverServesAndStops(t *testing.T) {
	url, _, stop := runMockserver(t, "--model", "cli-model")
	resp, err := http.Get(url + "/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "cli-model") {
		t.Fatalf("/v1/models: %s", body)
	}
	// A second mock on the same port is refused with exit 2.
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/v1")
	if c, _, e := plload(t, "mockserver", "--addr", host); c != 2 || !strings.Contains(e, "another server using the port") {
		t.Fatalf("busy port: exit %d: %s", c, e)
	}
	stop()
}

func TestRunWritesResults(t *testing.T) {
	t.Setenv("PLLOAD_TINY_KEY", "sk-SENTINEL-0001")
	t.Setenv("PLLOAD_TINY_SECRET", "hdr-SENTINEL-0002")
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", "cli/testdata/tiny.yaml", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "tiny-*"))
	if len(dirs) != 1 {
		t.Fatalf("results dirs: %v", dirs)
	}
	for _, f := range []string{"scenario.resolved.yaml", "report.json", "report.md", "report.html", "charts/latency_throughput.svg", "charts/latency_throughput.png", "stage_01/stage.json", "stage_01/dataset.jsonl", "stage_01/profile_export.jsonl", "stage_01/sessions.jsonl", "stage_01/run.log"} {
		if _, err := os.Stat(filepath.Join(dirs[0], f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if !strings.Contains(stdout, "stage 01/01 done:") || !strings.Contains(stdout, "0 errors") {
		t.Errorf("no stage summary line:\n%s", stdout)
	}
	if !strings.Contains(stdout, "**Headline**: stage 01:") || !strings.Contains(stdout, "| stage | load | active sess |") {
		t.Errorf("no headline and table at the end:\n%s", stdout)
	}
	// plload report reads stage.json alone: it works after the records are gone.
	os.Remove(filepath.Join(dirs[0], "stage_01", "profile_export.jsonl"))
	code, out2, errOut := plload(t, "report", dirs[0], dirs[0], "--handoff", filepath.Join(out, "handoff.md"))
	if code != 0 || !strings.Contains(out2, "| run | stage |") || strings.Contains(out2, "workload differs") {
		t.Fatalf("report: exit %d\n%s%s", code, out2, errOut)
	}
	if data, err := os.ReadFile(filepath.Join(out, "handoff.md")); err != nil || !strings.Contains(string(data), "## Re-measure") {
		t.Fatalf("handoff: %v\n%s", err, data)
	}
	filepath.WalkDir(dirs[0], func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(path); bytes.Contains(data, []byte("SENTINEL")) {
				t.Errorf("%s holds a secret", path)
			}
		}
		return nil
	})
	if strings.Contains(stdout+stderr, "SENTINEL") {
		t.Error("a secret was printed")
	}
}

func TestRunRefusesBeforeTraffic(t *testing.T) {
	out := t.TempDir()
	// The API key variable is unset: an error at run, nothing created.
	code, _, stderr := plload(t, "run", "cli/testdata/tiny.yaml", "--out", out)
	if code != 2 || !strings.Contains(stderr, "PLLOAD_TINY_KEY is not set") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("files were created: %v", entries)
	}
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	blocker := filepath.Join(out, "file")
	os.WriteFile(blocker, nil, 0o644)
	code, _, stderr = plload(t, "run", "cli/testdata/tiny.yaml", "--out", filepath.Join(blocker, "sub"))
	if code != 2 || !strings.Contains(stderr, "results directory") {
		t.Fatalf("unwritable results dir: exit %d: %s", code, stderr)
	}
}

// TestInterruptExits130 runs plload as a child process and interrupts it mid-stage.
func TestInterruptExits130(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	scenario := filepath.Join(t.TempDir(), "long.yaml")
	data, _ := os.ReadFile("cli/testdata/tiny.yaml")
	long := strings.Replace(string(data), "duration: 800ms}", "duration: 60s}\n    - {concurrency: 2, duration: 60s}", 1)
	os.WriteFile(scenario, []byte(long), 0o644)
	out := t.TempDir()
	cmd := exec.Command(bin, "run", scenario, "--out", out)
	cmd.Env = append(os.Environ(), "PLLOAD_TINY_KEY=k", "PLLOAD_TINY_SECRET=s")
	var stdout syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), "stage starting") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the run did not start: %s", stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // mid-stage, with requests in flight
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v\n%s", err, stdout.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "tiny-*", "stage_01", "profile_export.jsonl"))
	if len(dirs) != 1 || !strings.Contains(stdout.String(), "PARTIAL") {
		t.Fatalf("no partial stage: %v\n%s", dirs, stdout.String())
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(dirs[0])), "stage_02")); !os.IsNotExist(err) {
		t.Fatal("stage 2 ran after the interrupt")
	}
}

func TestSelftestCommand(t *testing.T) {
	code, out, errOut := plload(t, "selftest", "--in-process", "--ladder", "2", "--ttft", "20ms", "--itl", "10ms", "--tokens", "5",
		"--warmup", "100ms", "--duration", "600ms", "--bound", "1s", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var res struct {
		Steps []struct {
			Concurrency int  `json:"concurrency"`
			Pass        bool `json:"pass"`
		} `json:"steps"`
		Conclusion string `json:"conclusion"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Steps) != 1 || !res.Steps[0].Pass ||
		!strings.Contains(res.Conclusion, "up to 2 concurrent streams") {
		t.Fatalf("%v\n%s", err, out)
	}
	code, _, errOut = plload(t, "selftest", "--in-process", "--ladder", "1", "--ttft", "20ms", "--itl", "10ms", "--tokens", "5",
		"--warmup", "100ms", "--duration", "400ms", "--bound", "1ns")
	if code != 1 || !strings.Contains(errOut, "broke the ±1ns bound") {
		t.Fatalf("a broken bound must exit 1: %d %s", code, errOut)
	}
}

func TestRunRefusesAnUnresolvableTarget(t *testing.T) {
	data, _ := os.ReadFile("cli/testdata/tiny.yaml")
	text := strings.Replace(string(data), "base_url: mock\n  mock: {ttft: 5ms, tps: 500}", "base_url: http://no-such-host.invalid:8000/v1\n  model: m", 1)
	path := filepath.Join(t.TempDir(), "unresolvable.yaml")
	os.WriteFile(path, []byte(text), 0o644)
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	out := t.TempDir()
	code, _, stderr := plload(t, "run", path, "--out", out)
	if code != 2 || !strings.Contains(stderr, `cannot resolve host "no-such-host.invalid"`) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("files left behind: %v", entries)
	}
}

// TestRunRefusesAStageOverTheOpenFilesLimit: under a 200-file limit (soft and hard, as `ulimit -n`
// sets them), 100 sessions with the in-process mock need about 264 descriptors: refused before any
// traffic, at the stage's line, with the limit and how to raise it.
func TestRunRefusesAStageOverTheOpenFilesLimit(t *testing.T) {
	bin := buildBinary(t)
	data, _ := os.ReadFile("cli/testdata/tiny.yaml")
	text := strings.Replace(string(data), "{concurrency: 2, warmup: 200ms, duration: 800ms}", "{concurrency: 100, duration: 800ms}", 1)
	path := filepath.Join(t.TempDir(), "wide.yaml")
	os.WriteFile(path, []byte(text), 0o644)
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", `ulimit -n 200 && exec "$0" run "$1" --out "$2"`, bin, path, out)
	cmd.Env = append(os.Environ(), "PLLOAD_TINY_KEY=k", "PLLOAD_TINY_SECRET=s")
	msg, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("%v\n%s", err, msg)
	}
	for _, want := range []string{"wide.yaml:22:", "load.stages[0].concurrency", "100 open connections need about 264 file descriptors", "may open 200 (hard limit 200)", "ulimit -n 264", "nothing was sent"} {
		if !strings.Contains(string(msg), want) {
			t.Errorf("the message lacks %q:\n%s", want, msg)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("files left behind: %v", entries)
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, cmd := range newApp(nil, nil).Commands {
		code, out, _ := plload(t, cmd.Name, "--help")
		if code != 0 || !strings.Contains(out, "USAGE") || !strings.Contains(out, cmd.Usage) {
			t.Errorf("%s --help: exit %d\n%s", cmd.Name, code, out)
		}
	}
	code, out, _ := plload(t, "--help")
	for _, name := range []string{"run", "validate", "mockserver", "selftest", "report", "version"} {
		if code != 0 || !strings.Contains(out, name) {
			t.Errorf("top-level help lacks %s", name)
		}
	}
}

// TestBadScenarioCorpus: every file of testdata/bad is refused by validate and by run with exit 2, at
// the position and with the message its header names, and run leaves nothing behind.
func TestBadScenarioCorpus(t *testing.T) {
	files, _ := filepath.Glob("cli/testdata/bad/*.yaml")
	if len(files) < 15 {
		t.Fatalf("corpus has %d files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, _ := os.ReadFile(f)
			lines := strings.SplitN(string(data), "\n", 3)
			want := strings.TrimPrefix(lines[0], "# want: ")
			at := strings.TrimPrefix(lines[1], "# at: ")
			where := f + ":"
			switch {
			case strings.HasPrefix(at, "="): // a position in the file as it is
				where = f + ":" + at[1:] + ":"
			case at != "": // a position in the scenario below the two header lines
				var line, col int
				fmt.Sscanf(at, "%d:%d", &line, &col)
				where = fmt.Sprintf("%s:%d:%d:", f, line+2, col)
			}
			for _, args := range [][]string{{"validate", f}, {"run", f, "--out", t.TempDir()}} {
				code, out, stderr := plload(t, args...)
				if code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, where) {
					t.Fatalf("plload %s: exit %d, want 2 with %q at %q:\n%s", args[0], code, want, where, stderr)
				}
				if args[0] == "run" {
					if entries, _ := os.ReadDir(args[3]); len(entries) != 0 || out != "" {
						t.Fatalf("run left %v behind and printed %q", entries, out)
					}
				}
			}
		})
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// buildBinary builds plload once per test run, for tests that need a child process.
func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "plload-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "plload")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("build: %v", binErr)
	}
	return binPath
}

// TestInterruptAtRandomMoments sends SIGINT to `plload run` at 20 seeded random moments — in warmup,
// mid-stage, in the drain, between stages, in the second stage — and checks each time: exit 130, a
// partial results directory whose records account for every request, and a report `plload report`
// reads.
func TestInterruptAtRandomMoments(t *testing.T) {
	if testing.Short() {
		t.Skip("20 child runs")
	}
	bin := buildBinary(t)
	data, _ := os.ReadFile("cli/testdata/tiny.yaml")
	text := strings.Replace(string(data), "mock: {ttft: 5ms, tps: 500}", "mock: {ttft: 20ms, tps: 100}", 1)
	text = strings.Replace(text, "drain_timeout: 5s", "drain_timeout: 300ms", 1)
	text = strings.Replace(text, "    - {concurrency: 2, warmup: 200ms, duration: 800ms}",
		"    - {concurrency: 4, warmup: 200ms, duration: 800ms}\n    - {concurrency: 4, duration: 5s}", 1)
	scenario := filepath.Join(t.TempDir(), "interrupt.yaml")
	os.WriteFile(scenario, []byte(text), 0o644)
	rng := rand.New(rand.NewPCG(20, 26))
	for i := range 20 {
		at := time.Duration(rng.IntN(2500)) * time.Millisecond
		out := t.TempDir()
		cmd := exec.Command(bin, "run", scenario, "--out", out)
		cmd.Env = append(os.Environ(), "PLLOAD_TINY_KEY=k", "PLLOAD_TINY_SECRET=s")
		var buf syncBuffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(buf.String(), "stage starting") {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("run %d did not start: %s", i, buf.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(at)
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("run %d, SIGINT %s after the first stage started: %v\n%s", i, at, err, buf.String())
		}
		dirs, _ := filepath.Glob(filepath.Join(out, "tiny-*"))
		if len(dirs) != 1 {
			t.Fatalf("run %d: results %v", i, dirs)
		}
		for _, f := range []string{"report.md", "report.json", "stage_01/stage.json"} {
			if _, err := os.Stat(filepath.Join(dirs[0], f)); err != nil {
				t.Fatalf("run %d (SIGINT at %s): %v\n%s", i, at, err, buf.String())
			}
		}
		stages, _ := filepath.Glob(filepath.Join(dirs[0], "stage_*", "stage.json"))
		for _, sj := range stages {
			var st struct {
				Partial bool `json:"partial"`
				Engine  struct {
					Issued int `json:"issued"`
				} `json:"engine"`
			}
			raw, _ := os.ReadFile(sj)
			json.Unmarshal(raw, &st)
			recs, _ := os.ReadFile(filepath.Join(filepath.Dir(sj), "profile_export.jsonl"))
			if n := bytes.Count(recs, []byte("\n")); n != st.Engine.Issued {
				t.Fatalf("run %d: %s: %d records for %d issued", i, sj, n, st.Engine.Issued)
			}
		}
		if code, _, e := plload(t, "report", dirs[0]); code != 0 {
			t.Fatalf("run %d: plload report: %d %s", i, code, e)
		}
	}
}

// gateScenario is a short mock run: TTFT ttft with ±20 % jitter drawn from mockSeed.
func gateScenario(t *testing.T, ttft string, mockSeed int) string {
	t.Helper()
	text := fmt.Sprintf(`name: gate
seed: 4
target: {base_url: mock, mock: {ttft: %s, tps: 400, jitter: 0.2, seed: %d}, timeout: 10s}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
session: {turns: {min: 3, max: 5}, user_input_tokens: {min: 5, max: 15}, max_output_tokens: 8, think_time: {min: 5ms, max: 20ms}}
load:
  mode: concurrency
  drain_timeout: 5s
  session_pool_factor: 40
  stages: [{concurrency: 8, duration: 1200ms}]
slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}
cost: {gpu_hourly_usd: 1}
`, ttft, mockSeed)
	path := filepath.Join(t.TempDir(), "gate.yaml")
	os.WriteFile(path, []byte(text), 0o644)
	return path
}

func runInto(t *testing.T, scenario string) string {
	t.Helper()
	out := t.TempDir()
	if code, stdout, stderr := plload(t, "run", scenario, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "gate-*"))
	return dirs[0]
}

func TestGateCommand(t *testing.T) {
	base := runInto(t, gateScenario(t, "50ms", 1))
	cand := runInto(t, gateScenario(t, "50ms", 2))
	// The same run against a copy of itself: every change is exactly zero, so the gate passes
	// whatever the machine was doing. (Two real runs on a shared machine may differ for real; the
	// statistics of that are TestRegressionFalseAlarmRate's and, with real runs, TestGateHasNoFalseAlarms'.)
	same := filepath.Join(t.TempDir(), "same")
	if err := os.CopyFS(same, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, out, errOut := plload(t, "gate", "--candidate", same, "--baseline", base, "--check", "slo == PASS", "--check", "ttft_p95 < 500ms", "--junit", junit)
	if code != 0 || !strings.Contains(out, "gate PASSED") || !strings.Contains(out, "ttft_p95 regression: ttft_p95") || !strings.Contains(out, "(+0.0%") {
		t.Fatalf("a run against its copy: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(same, "gate.json")); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(junit); !bytes.Contains(data, []byte("<testsuites>")) {
		t.Fatalf("junit: %s", data)
	}
	// Two real runs: every default check is made and the gate decides (0 or 1), never refuses.
	code, out, errOut = plload(t, "gate", "--candidate", cand, "--baseline", base)
	if code == 2 {
		t.Fatalf("two runs of the same scenario: exit 2\n%s%s", out, errOut)
	}
	for _, m := range []string{"ttft_p95", "itl_p95", "e2e_p95", "out_tok_s"} {
		if !strings.Contains(out, "stage 01 "+m+" regression") {
			t.Errorf("no %s check:\n%s", m, out)
		}
	}
	// Three times the TTFT is caught — or, when this machine starved the client, not decided and
	// said why; never passed.
	slow := runInto(t, gateScenario(t, "150ms", 3))
	code, out, _ = plload(t, "gate", "--candidate", slow, "--baseline", base)
	caught := code == 1 && strings.Contains(out, "FAIL         stage 01 ttft_p95 regression")
	excused := strings.Contains(out, "INCONCLUSIVE stage 01 ttft_p95 regression") && strings.Contains(out, "client was strained")
	if !caught && !excused {
		t.Fatalf("3× TTFT: exit %d\n%s", code, out)
	}
	// A broken threshold fails — or, when this machine starved the client, which can make a latency
	// read over its limit, is not decided and says why (exit 3); never passed.
	code, out, _ = plload(t, "gate", "--candidate", cand, "--check", "ttft_p95 < 30ms")
	broken := code == 1 && strings.Contains(out, "FAIL") && strings.Contains(out, "limit < 30 ms")
	if excused := code == 3 && strings.Contains(out, "limit < 30 ms") && strings.Contains(out, "not decided: the client was strained"); !broken && !excused {
		t.Fatalf("a broken threshold: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"gate", "--candidate", cand, "--check", "ttft_p96 < 1s"},
		{"gate", "--candidate", cand, "--baseline", base, "--max-regression", "ttft_p95=ten"},
		{"gate", "--candidate", t.TempDir(), "--check", "slo == PASS"},
		{"gate", "--candidate", cand},
	} {
		if code, _, e := plload(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, e)
		}
	}
	// A different workload is refused unless asked for.
	other := strings.Replace(gateScenario(t, "50ms", 1), "", "", 1)
	data, _ := os.ReadFile(other)
	os.WriteFile(other, bytes.Replace(data, []byte("seed: 4"), []byte("seed: 5"), 1), 0o644)
	diff := runInto(t, other)
	if code, _, e := plload(t, "gate", "--candidate", diff, "--baseline", base); code != 2 || !strings.Contains(e, "did not measure the same workload") {
		t.Fatalf("different workload: exit %d %s", code, e)
	}
	if code, _, _ := plload(t, "gate", "--candidate", diff, "--baseline", base, "--allow-different-workload"); code == 2 {
		t.Fatal("--allow-different-workload still refused")
	}
}

// TestGateHasNoFalseAlarms: 20 pairs of runs with identical settings (only the mock's jitter seed
// differs) raise no regression at the default tolerances, and a 20 % slower TTFT is flagged every time.
//
// It is a measurement of this machine as much as of the gate (a busy neighbour makes real
// differences between runs), so it runs only when asked:
//
//	PLLOAD_LONG=1 go test ./cli -run GateHasNoFalseAlarms -v -count 1
func TestGateHasNoFalseAlarms(t *testing.T) {
	if os.Getenv("PLLOAD_LONG") != "1" {
		t.Skip("set PLLOAD_LONG=1 to run 60 real runs (about 90 s) on a quiet machine")
	}
	falsePositives, truePositives := 0, 0
	for i := range 20 {
		base := runInto(t, gateScenario(t, "50ms", 100+i))
		same := runInto(t, gateScenario(t, "50ms", 200+i))
		slow := runInto(t, gateScenario(t, "60ms", 300+i))
		if code, out, _ := plload(t, "gate", "--candidate", same, "--baseline", base); code == 1 { // 3 is undecided, not an alarm
			falsePositives++
			t.Logf("pair %d: a false alarm:\n%s", i, out)
		}
		code, out, _ := plload(t, "gate", "--candidate", slow, "--baseline", base)
		if code == 1 && strings.Contains(out, "FAIL         stage 01 ttft_p95 regression") {
			truePositives++
		} else {
			t.Logf("pair %d: the 20%% slower TTFT was not flagged:\n%s", i, out)
		}
	}
	t.Logf("false positives %d/20, true positives %d/20", falsePositives, truePositives)
	if falsePositives != 0 || truePositives != 20 {
		t.Fatalf("false positives %d/20, true positives %d/20", falsePositives, truePositives)
	}
}
