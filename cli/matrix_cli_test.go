package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/matrix"
	"github.com/plload/plload/resultfiles"
)

// writeMatrixScenario writes a scenario for plload matrix on the bundled mock into a temp folder.
func writeMatrixScenario(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mx.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// oneDir is the one directory that matches pattern, or a test failure.
func oneDir(t *testing.T, pattern string) string {
	t.Helper()
	dirs, _ := filepath.Glob(pattern)
	if len(dirs) != 1 {
		t.Fatalf("%s: %v, want one directory", pattern, dirs)
	}
	return dirs[0]
}

// mdSection is the body of report.md's section "## name" (up to the next one).
func mdSection(md, name string) string {
	_, rest, _ := strings.Cut(md, "\n## "+name)
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// TestMatrixCommand: plload matrix on the real mock runs A (ladder 1, 2), B (mean, peak, peak +30 %)
// and D (the ramp) as normal results directories with two repeats of A and B, skips C for want of a
// trace, and writes one report in the template order with the spread, the skip as a limitation and
// D's time to absorb.
func TestMatrixCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("a 15 s run")
	}
	scenario := writeMatrixScenario(t, `name: mx
seed: 3
target: {base_url: mock, model: m, mock: {ttft: 20ms, tps: 400, jitter: 0.1}}
personas: {count: 2, system_prompt_tokens: {min: 10, max: 20}}
session: {turns: 1, user_input_tokens: {min: 10, max: 20}, max_output_tokens: {min: 8, max: 12}, think_time: 0s}
load:
  mode: concurrency
  drain_timeout: 5s
  stages:
    - {concurrency: 2, warmup: 200ms, duration: 800ms}
matrix: {mean_rate: 10, peak_rate: 20, ramp: 1s, hold: 1s}
slo: {ttft: {p95: 500ms}, window: 1s}
cost: {gpu_hourly_usd: 2.5}
`)
	out := t.TempDir()
	code, stdout, stderr := plload(t, "matrix", scenario, "--repeats", "2", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := oneDir(t, filepath.Join(out, "mx-matrix-*"))
	for part, stages := range map[string]int{"A": 4, "B": 6, "D": 1} {
		run := oneDir(t, filepath.Join(dir, part, "mx-"+part+"-*"))
		got, err := resultfiles.ReadRun(run)
		if err != nil || len(got) != stages {
			t.Errorf("part %s: %d stages (%v), want %d", part, len(got), err, stages)
		}
		if part == "D" && err == nil && (got[0].Summary.Absorb == nil || got[0].Summary.Absorb.WindowS != 1) {
			t.Errorf("part D's ramp has no time to absorb in 1 s windows: %+v", got[0].Summary.Absorb)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "C")); !os.IsNotExist(err) {
		t.Errorf("part C ran without a trace (%v)", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	var sections []string
	for _, m := range regexp.MustCompile(`(?m)^## (\w+)`).FindAllStringSubmatch(md, -1) {
		sections = append(sections, m[1])
	}
	if diff := cmp.Diff(matrix.Sections, sections); diff != "" {
		t.Errorf("report.md sections (-want +got):\n%s", diff)
	}
	for _, c := range []struct{ section, pattern string }{
		{"Verdict", `meets the SLO \(TTFT p95 ≤ 500ms\) up to peak\+30%: 26 req/s, in 2 of 2 repeats`},
		{"Results", `\| concurrency 2 \| 2 \| 2 of 2 \| \d`},
		{"Results", `\d–\d`}, // some number differs between the repeats: a min–max
		{"Results", `Time to absorb: no window broke a latency limit`},
		{"Limitations", `Part C \(replay of the trace\) did not run: the scenario names no workload.trace`},
		{"Reproduce", `plload matrix \S+mx.yaml --repeats 2 --out `},
	} {
		if !regexp.MustCompile(c.pattern).MatchString(mdSection(md, c.section)) {
			t.Errorf("%s does not match %q:\n%s", c.section, c.pattern, mdSection(md, c.section))
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "<h2>Limitations</h2>") {
		t.Errorf("report.html (%v) lacks the chart or the sections", err)
	}
	if !strings.Contains(stdout, "matrix mx: meets the SLO") || !strings.Contains(stdout, "== part C: replay of the trace: skipped") {
		t.Errorf("the terminal lacks the headline or C's skip:\n%s", stdout)
	}
}

// TestMatrixWithoutRates: a scenario with neither matrix rates nor plload fit's comments is bad
// input: exit 2, the message names matrix.mean_rate and plload fit, and nothing is written.
func TestMatrixWithoutRates(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := plload(t, "matrix", "scenarios/smoke.yaml", "--out", out)
	if code != 2 || !strings.Contains(stderr, "matrix.mean_rate") || !strings.Contains(stderr, "plload fit") || !strings.Contains(stderr, "nothing was sent") {
		t.Errorf("exit %d, stderr:\n%s\nwant 2 naming matrix.mean_rate and plload fit", code, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("bad input wrote %v\n%s", entries, stdout)
	}
	code, _, stderr = plload(t, "matrix", "scenarios/matrix.yaml", "--repeats", "0", "--out", out)
	if code != 2 || !strings.Contains(stderr, "--repeats 0: accepted: 1 to 10") {
		t.Errorf("--repeats 0: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestMatrixDeadTarget: a target that refuses connections is bad input when the preflight finds it
// (exit 2, nothing written); without the preflight, the first part stops as unreachable and the
// later parts are not run against the outage, said in the report (exit 1).
func TestMatrixDeadTarget(t *testing.T) {
	scenario := writeMatrixScenario(t, `name: mx
target: {base_url: http://127.0.0.1:1/v1, model: m, timeout: 2s, server_metrics_url: "off"}
personas: {count: 1, system_prompt_tokens: 10}
session: {turns: 1, user_input_tokens: 10, max_output_tokens: 8, think_time: 0s}
load:
  mode: concurrency
  abort_after: 500ms
  stages:
    - {concurrency: 2, warmup: 0s, duration: 2s}
matrix: {mean_rate: 2, peak_rate: 4}
slo: {ttft: {p95: 1s}}
`)
	out := t.TempDir()
	code, _, stderr := plload(t, "matrix", scenario, "--out", out)
	if entries, _ := os.ReadDir(out); code != 2 || !strings.Contains(stderr, "part A did not run") || !strings.Contains(stderr, "connection refused") || len(entries) != 0 {
		t.Errorf("preflight: exit %d, wrote %v, stderr:\n%s\nwant 2, nothing written", code, entries, stderr)
	}
	code, stdout, stderr := plload(t, "matrix", scenario, "--out", out, "--no-preflight", "--quiet", "--repeats", "1")
	if code != 1 || !strings.Contains(stderr, "part A: stage 01 failed: target unreachable") {
		t.Fatalf("exit %d, want 1 naming part A's unreachable target\n%s\n%s", code, stdout, stderr)
	}
	dir := oneDir(t, filepath.Join(out, "mx-matrix-*"))
	for _, part := range []string{"B", "D"} {
		if _, err := os.Stat(filepath.Join(dir, part)); !os.IsNotExist(err) {
			t.Errorf("part %s ran against a dead target (%v)", part, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if lim := mdSection(string(md), "Limitations"); !strings.Contains(lim, "Part B (open loop at mean, peak and peak +30 %) did not run: part A stopped: target unreachable") {
		t.Errorf("Limitations do not say why B did not run:\n%s", lim)
	}
	if v := mdSection(string(md), "Verdict"); !strings.Contains(v, "part B (open loop) did not run") {
		t.Errorf("Verdict:\n%s", v)
	}
}

// TestMatrixDeadTargetShortStages: without the preflight, a dead target whose stages end before
// load.abort_after (the default 15 s against 2 s stages) is never stopped by the engine; the part
// whose last stage got no answer at all still stops the matrix, and B and D are not run against it.
func TestMatrixDeadTargetShortStages(t *testing.T) {
	scenario := writeMatrixScenario(t, fmt.Sprintf(`name: mx
target: {base_url: http://127.0.0.1:%d/v1, model: m, timeout: 2s, server_metrics_url: "off"}
personas: {count: 1, system_prompt_tokens: 10}
session: {turns: 1, user_input_tokens: 10, max_output_tokens: 8, think_time: 0s}
load:
  mode: concurrency
  stages:
    - {concurrency: 2, warmup: 0s, duration: 1s}
matrix: {mean_rate: 2, peak_rate: 4, ramp: 1s, hold: 1s}
slo: {ttft: {p95: 1s}}
`, freePort(t)))
	out := t.TempDir()
	code, stdout, stderr := plload(t, "matrix", scenario, "--out", out, "--no-preflight", "--quiet", "--repeats", "1")
	if code != 1 || !strings.Contains(stderr, "part A: stage 01 failed") {
		t.Fatalf("exit %d, want 1 naming part A's failed stage\n%s\n%s", code, stdout, stderr)
	}
	dir := oneDir(t, filepath.Join(out, "mx-matrix-*"))
	for _, part := range []string{"B", "D"} {
		if _, err := os.Stat(filepath.Join(dir, part)); !os.IsNotExist(err) {
			t.Errorf("part %s ran against a dead target (%v)", part, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	want := "Part B (open loop at mean, peak and peak +30 %) did not run: part A stopped: the target stopped answering: no request of stage 01 succeeded (refused × "
	if lim := mdSection(string(md), "Limitations"); !strings.Contains(lim, want) {
		t.Errorf("Limitations lack %q:\n%s", want, lim)
	}
}

// TestMatrixReplayMissesTheSLO: with a trace the matrix replays it as part C (its own replay stage,
// time_scale kept); an SLO no stage of any part can meet makes it exit 1 with the report written,
// and so does a stage that failed as plload run decides (errors over slo.error_rate), named by part.
func TestMatrixReplayMissesTheSLO(t *testing.T) {
	if testing.Short() {
		t.Skip("an 8 s run")
	}
	trace, err := filepath.Abs("scenarios/data/mooncake.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	scenario := writeMatrixScenario(t, `name: mx
seed: 3
target: {base_url: mock, model: m, mock: {ttft: 20ms, tps: 4000, error_rate: 0.3, seed: 5}}
workload: {trace: {file: `+trace+`, format: mooncake, block_tokens: 512}}
load:
  mode: replay
  time_scale: 0.5
  drain_timeout: 5s
  stages:
    - {warmup: 0s, duration: 1s}
matrix: {mean_rate: 4, peak_rate: 8, max_concurrency: 1, ramp: 500ms, hold: 500ms}
slo: {ttft: {p95: 1ms}, error_rate: 0.01}
`)
	out := t.TempDir()
	code, stdout, stderr := plload(t, "matrix", scenario, "--repeats", "1", "--out", out, "--quiet", "--no-preflight")
	if code != 1 || !strings.Contains(stderr, "no stage passed the SLO (TTFT p95 ≤ 1ms, error rate ≤ 1%) in any part") || !strings.Contains(stderr, "part C: stage 01 failed: error rate") {
		t.Fatalf("exit %d, want 1 for an SLO missed everywhere\n%s\n%s", code, stdout, stderr)
	}
	dir := oneDir(t, filepath.Join(out, "mx-matrix-*"))
	replay := oneDir(t, filepath.Join(dir, "C", "mx-C-*"))
	stages, err := resultfiles.ReadRun(replay)
	if err != nil || len(stages) != 1 || stages[0].Mode != "replay" || stages[0].TimeScale != 0.5 {
		t.Fatalf("part C: %v %+v, want one replay stage at time_scale 0.5", err, stages)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if verdict := mdSection(string(md), "Verdict"); err != nil || !strings.Contains(verdict, "no open-loop rate met the SLO") || !strings.Contains(verdict, "**Part C failed**: stage 01 failed: error rate") {
		t.Errorf("report.md (%v) verdict:\n%s", err, mdSection(string(md), "Verdict"))
	}
}

// cancelOn is a stdout that cancels the run's context when a line containing mark is written, as
// Ctrl+C would at that moment.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	mark   string
	cancel context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.mark) {
		w.cancel()
	}
	return len(p), nil
}

// TestMatrixInterrupted: stopped in part A's second stage, the matrix keeps A's partial results
// directory, runs no later part, writes the report saying so, and exits 130.
func TestMatrixInterrupted(t *testing.T) {
	scenario := writeMatrixScenario(t, `name: mx
target: {base_url: mock, model: m, mock: {ttft: 20ms, tps: 400}}
personas: {count: 1, system_prompt_tokens: 10}
session: {turns: 1, user_input_tokens: 10, max_output_tokens: 8, think_time: 0s}
load:
  mode: concurrency
  stages:
    - {concurrency: 2, warmup: 0s, duration: 500ms}
matrix: {mean_rate: 2, peak_rate: 4, max_concurrency: 2}
slo: {ttft: {p95: 1s}}
`)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &cancelOn{mark: "stage 01/02 done", cancel: cancel}
	var stderr bytes.Buffer
	code := Run(ctx, []string{"plload", "matrix", scenario, "--out", out, "--quiet", "--repeats", "1"}, stdout, &stderr)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want 130\n%s\n%s", code, stdout.buf.String(), stderr.String())
	}
	dir := oneDir(t, filepath.Join(out, "mx-matrix-*"))
	stages, err := resultfiles.ReadRun(oneDir(t, filepath.Join(dir, "A", "mx-A-*")))
	if err != nil || len(stages) != 2 || !stages[1].Summary.Partial {
		t.Errorf("part A: %v, %d stages, want the second partial", err, len(stages))
	}
	if _, err := os.Stat(filepath.Join(dir, "B")); !os.IsNotExist(err) {
		t.Errorf("part B ran after the interrupt (%v)", err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(mdSection(string(md), "Verdict"), "**Interrupted**") || !strings.Contains(mdSection(string(md), "Results"), "(partial)") {
		t.Errorf("report.md does not say the matrix was interrupted:\n%s", md)
	}
}
