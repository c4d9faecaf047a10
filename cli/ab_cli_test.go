package cli

import (
	"context"
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

	"github.com/plload/plload/ab"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/resultfiles"
)

// abMock is the real mock on loopback serving model "m": TTFT ttft with ±20 % jitter drawn from seed;
// tune changes anything else.
func abMock(t *testing.T, ttft time.Duration, seed uint64, tune ...func(*mock.Config)) string {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.Model, cfg.TTFT, cfg.TPS, cfg.Jitter, cfg.Seed = "m", ttft, 400, 0.2, seed
	for _, f := range tune {
		f(&cfg)
	}
	m, err := mock.Start(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m.BaseURL()
}

// abStage is the A/B tests' stage: 16 sessions for 3 s, about 600 requests a side on the mock.
const abStage = "{concurrency: 16, warmup: 300ms, duration: 3s}"

// abScenario is a short closed-loop scenario with the given stages (its target is replaced by
// --target).
func abScenario(t *testing.T, seed int, stages ...string) string {
	t.Helper()
	text := fmt.Sprintf(`name: ab
seed: %d
target: {base_url: http://127.0.0.1:1/v1, model: m, timeout: 10s, server_metrics_url: "off"}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
session: {turns: {min: 3, max: 5}, user_input_tokens: {min: 5, max: 15}, max_output_tokens: 8, think_time: {min: 5ms, max: 20ms}}
load:
  mode: concurrency
  drain_timeout: 5s
  abort_after: 1s
  session_pool_factor: 40
  stages: [%s]
slo: {ttft_p95: 1s, tpot: {p99: 100ms}, error_rate_max: 0.05}
`, seed, strings.Join(stages, ", "))
	path := filepath.Join(t.TempDir(), "ab.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// abRun runs plload ab and returns its exit code, output and results directory ("" when none).
func abRun(t *testing.T, args ...string) (code int, stdout, stderr, dir string) {
	t.Helper()
	out := t.TempDir()
	code, stdout, stderr = plload(t, append(append([]string{"ab"}, args...), "--out", out)...)
	if dirs, _ := filepath.Glob(filepath.Join(out, "ab-ab-*")); len(dirs) == 1 {
		dir = dirs[0]
	}
	return code, stdout, stderr, dir
}

func readAB(t *testing.T, dir string) resultfiles.AB {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "ab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res resultfiles.AB
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("ab.json: %v", err)
	}
	return res
}

func abMetric(res resultfiles.AB, stage int, name string) resultfiles.ABMetric {
	for _, m := range res.Metrics {
		if m.Stage == stage && m.Name == name {
			return m
		}
	}
	return resultfiles.ABMetric{Name: name + " (missing)"}
}

// TestABBadInputSendsNothing: a --target or --model that is not what is accepted exits 2, names the
// flag and what it accepts, and sends nothing (the counting mock saw no request) and writes nothing.
func TestABBadInputSendsNothing(t *testing.T) {
	base, chats := countingMock(t)
	scenario := abScenario(t, 1, abStage)
	good := "A=" + base
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"one target", []string{scenario, "--target", good}, []string{"--target given 1 time(s)", "exactly two"}},
		{"three targets", []string{scenario, "--target", good, "--target", "B=" + base, "--target", "C=" + base}, []string{"--target given 3 time(s)"}},
		{"no name", []string{scenario, "--target", good, "--target", base}, []string{"not NAME=URL", "accepted"}},
		{"empty name", []string{scenario, "--target", good, "--target", "=" + base}, []string{"not NAME=URL"}},
		{"empty URL", []string{scenario, "--target", good, "--target", "B="}, []string{"not NAME=URL"}},
		{"not http", []string{scenario, "--target", good, "--target", "B=ftp://127.0.0.1/v1"}, []string{"is not an http:// or https:// URL", "accepted"}},
		{"a path for a name", []string{scenario, "--target", good, "--target", "../B=" + base}, []string{"names its results directory", "accepted"}},
		{"the comparison's file for a name", []string{scenario, "--target", good, "--target", "AB.json=" + base}, []string{`the name "AB.json" is a file of the A/B's results (ab.json, ab.md)`, "accepted: any other name"}},
		{"same name twice", []string{scenario, "--target", good, "--target", "a=" + base}, []string{`the name "a" is given twice`, "two different names"}},
		{"model for no target", []string{scenario, "--target", good, "--target", "B=" + base, "--model", "C=x"}, []string{`--model "C=x"`, "accepted: A or B"}},
		{"model without =", []string{scenario, "--target", good, "--target", "B=" + base, "--model", "x"}, []string{"not NAME=MODEL"}},
		{"no scenario", []string{"--target", good, "--target", "B=" + base}, []string{"expected one argument, the scenario file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr, dir := abRun(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s%s", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if dir != "" {
				t.Errorf("a results directory was made: %s", dir)
			}
		})
	}
	if n := chats.Load(); n != 0 {
		t.Fatalf("bad input sent %d chat requests", n)
	}
}

// TestABFindsATenPercentSlowerTTFT is issue 22's done-when: B's TTFT is 10 % over A's (55 vs 50 ms,
// ±20 % jitter each), and ab reports B worse with an interval wholly above 0. ab.json's values are
// the numbers of each side's own stage.json, each side is a normal results directory, both got the
// same dataset, and ab.md holds the table printed. With PLLOAD_LONG=1, 20 seeded runs (about 100 s):
//
//	PLLOAD_LONG=1 go test ./cli -run ABFindsATenPercent -v -count 1
func TestABFindsATenPercentSlowerTTFT(t *testing.T) {
	a, b := abMock(t, 50*time.Millisecond, 1), abMock(t, 55*time.Millisecond, 2)
	// Twice abStage's requests: a 10 % step in a p95 is about 5 ms, and 600 requests a side on a
	// machine busy with other packages' tests gave an interval of ±5 ms (CI, 2026-12-06).
	code, stdout, stderr, dir := abRun(t, abScenario(t, 4, "{concurrency: 16, warmup: 300ms, duration: 6s}"), "--target", "A="+a, "--target", "B="+b)
	if code != 0 || dir == "" {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	res := readAB(t, dir)
	var missed []string
	for _, name := range []string{"ttft_p50_ms", "ttft_p95_ms"} {
		m := abMetric(res, 1, name)
		t.Logf("%s: A %.2f B %.2f diff %+.2f ms, 95 %% interval %v, %s", name, m.A.V, m.B.V, m.Diff.V, m.CI, m.Verdict)
		if m.Verdict != ab.Worse || m.CI == nil || m.CI[0] <= 0 {
			missed = append(missed, fmt.Sprintf("%s: %+v, want worse with an interval above 0", name, m))
		}
	}
	// A strained client widens the intervals (CI's -race run on a busy VM: scheduler latency p99
	// 10 ms, a p95 interval of -1.2 … +9.4 ms), and ab then says so in its last line.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if last := lines[len(lines)-1]; len(missed) > 0 && strings.HasPrefix(last, "A/B: undecided") && strings.Contains(last, "strained") {
		t.Skipf("busy: the client was strained, so B's slower TTFT was not decided: %s\n%s", strings.Join(missed, "; "), last)
	}
	for _, m := range missed {
		t.Errorf("%s\n%s", m, stdout)
	}
	if !res.SameDataset || len(res.Targets) != 2 || res.Targets[0].Name != "A" || res.Targets[1].URL != b {
		t.Errorf("targets %+v, same dataset %v", res.Targets, res.SameDataset)
	}
	for i, side := range []string{"A", "B"} {
		stages := readStages(t, filepath.Join(dir, side))
		if len(stages) != 1 {
			t.Fatalf("%s: %d stage.json, want 1", side, len(stages))
		}
		m := abMetric(res, 1, "ttft_p50_ms")
		v := []float64{m.A.V, m.B.V}[i]
		if got := stages[0].Summary.TTFT.P50; got != v {
			t.Errorf("%s: ab.json ttft_p50_ms %v, its stage.json %v", side, v, got)
		}
		if got := stages[0].Summary.Throughput.OutTokPerSec; got != []float64{abMetric(res, 1, "out_tok_per_sec").A.V, abMetric(res, 1, "out_tok_per_sec").B.V}[i] {
			t.Errorf("%s: out_tok_per_sec differs from its stage.json's %v", side, got)
		}
		if _, err := os.Stat(filepath.Join(dir, side, "report.json")); err != nil {
			t.Error(err)
		}
	}
	// The same window: each stage started on both at one instant.
	sa, sb := readStages(t, filepath.Join(dir, "A"))[0], readStages(t, filepath.Join(dir, "B"))[0]
	if d := time.Duration(sa.Summary.Window.T0Ns - sb.Summary.Window.T0Ns).Abs(); d > 20*time.Millisecond {
		t.Errorf("the windows start %v apart", d)
	}
	for _, name := range []string{"out_chars_per_sec", "tpoc_p50_ms", "tpot_p99_ms", "error_rate"} {
		if m := abMetric(res, 1, name); m.Verdict == ab.Unknown || !m.A.OK {
			t.Errorf("%s: %+v", name, m)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "ab.md"))
	if err != nil || !strings.Contains(stdout, string(md)) || !strings.Contains(string(md), "| ttft_p50_ms |") || !strings.Contains(string(md), "B worse") {
		t.Errorf("ab.md (%v) is not the table printed:\n%s\nstdout:\n%s", err, md, stdout)
	}
	if os.Getenv("PLLOAD_LONG") != "1" {
		return
	}
	// PLLOAD_LONG=1: 19 more seeds (scenario and mocks), each must find B worse at p50 and p95.
	caught := 1
	for i := 1; i < 20; i++ {
		a, b := abMock(t, 50*time.Millisecond, uint64(300+i)), abMock(t, 55*time.Millisecond, uint64(400+i))
		code, stdout, stderr, dir := abRun(t, abScenario(t, 40+i, abStage), "--target", "A="+a, "--target", "B="+b)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s%s", i, code, stdout, stderr)
		}
		res := readAB(t, dir)
		p50, p95 := abMetric(res, 1, "ttft_p50_ms"), abMetric(res, 1, "ttft_p95_ms")
		t.Logf("run %d: ttft_p50 %+.2f ms %v %s; ttft_p95 %+.2f ms %v %s", i, p50.Diff.V, *p50.CI, p50.Verdict, p95.Diff.V, *p95.CI, p95.Verdict)
		if p50.Verdict == ab.Worse && p95.Verdict == ab.Worse {
			caught++
		}
	}
	t.Logf("B worse at p50 and p95 in %d of 20 runs", caught)
	if caught != 20 {
		t.Fatalf("B worse at p50 and p95 in %d of 20 runs, want 20", caught)
	}
}

// TestABIdenticalTargetsAreTheSame is the other half of the done-when: two mocks with one config
// (their jitter drawn from different seeds, as two replicas' noise is their own) show no significant
// difference in any metric. The done-when allows one run in 20 to differ (a 95 % interval is wrong
// once in 20 by design; a difference of 1 % of the mock's chunk gap between two in-process mocks was
// seen 3 times in 40): by default 2 of 3 seeded runs must show none, which fails by chance about once
// in 150 CI runs instead of once in 10 for 2 of 2. The 20 seeded runs of the done-when (≥ 19 with no
// difference, about 100 s) with PLLOAD_LONG=1:
//
//	PLLOAD_LONG=1 go test ./cli -run ABIdenticalTargets -v -count 1
func TestABIdenticalTargetsAreTheSame(t *testing.T) {
	runs, need := 3, 2
	if os.Getenv("PLLOAD_LONG") == "1" {
		runs, need = 20, 19
	}
	same := 0
	for i := range runs {
		a, b := abMock(t, 50*time.Millisecond, uint64(100+i)), abMock(t, 50*time.Millisecond, uint64(200+i))
		code, stdout, stderr, dir := abRun(t, abScenario(t, 10+i, abStage), "--target", "A="+a, "--target", "B="+b)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s%s", i, code, stdout, stderr)
		}
		var differ []string
		for _, m := range readAB(t, dir).Metrics {
			if m.Verdict != ab.Same {
				differ = append(differ, fmt.Sprintf("%s %s (%+.3g, %v)", m.Name, m.Verdict, m.Diff.V, m.CI))
			}
		}
		if len(differ) == 0 {
			same++
		} else {
			t.Logf("run %d: %s", i, strings.Join(differ, "; "))
		}
	}
	t.Logf("no significant difference in %d of %d runs", same, runs)
	if same < need {
		t.Fatalf("no significant difference in %d of %d runs, want ≥ %d", same, runs, need)
	}
}

// TestABDeadTargetIsASideFailure: a dead B stops the A/B with exit 1 and the flag that named it.
// With the preflight, before any stage (A saw only its own preflight request, nothing is written);
// without it, B's first stage stops after load.abort_after, and A's second stage never starts.
func TestABDeadTargetIsASideFailure(t *testing.T) {
	base, chats := countingMock(t)
	dead := "http://" + deadAddr(t) + "/v1"
	short := "{concurrency: 4, warmup: 0s, duration: 2s}"
	scenario := abScenario(t, 2, short, short)
	code, stdout, stderr, dir := abRun(t, scenario, "--target", "A="+base, "--target", "B="+dead)
	if code != 1 || !strings.Contains(stderr, "--target B="+dead) || !strings.Contains(stderr, "nothing was sent to either target") || dir != "" {
		t.Fatalf("preflight: exit %d, dir %q\n%s%s", code, dir, stdout, stderr)
	}
	if n := chats.Load(); n != 1 {
		t.Fatalf("A got %d chat requests, want only its preflight's", n)
	}
	code, stdout, stderr, dir = abRun(t, scenario, "--target", "A="+base, "--target", "B="+dead, "--no-preflight")
	if code != 1 || dir == "" || !strings.Contains(stderr, "a side failed") || !strings.Contains(stderr, "B: stage failed") {
		t.Fatalf("no preflight: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "\n  A:") {
		t.Errorf("A is blamed for B's failure:\n%s", stderr)
	}
	if st := readStages(t, filepath.Join(dir, "A")); len(st) != 1 {
		t.Errorf("A ran %d stages after B failed its first, want 1", len(st))
	}
	if bs := readStages(t, filepath.Join(dir, "B")); len(bs) != 1 || bs[0].Engine.Aborted == "" {
		t.Errorf("B's stage is not marked as stopped: %+v", bs)
	}
}

// TestABExampleScenarioValidates: the README's A/B scenario is valid as it stands.
func TestABExampleScenarioValidates(t *testing.T) {
	if code, _, stderr := plload(t, "validate", "scenarios/ab.yaml"); code != 0 {
		t.Fatalf("validate scenarios/ab.yaml: exit %d\n%s", code, stderr)
	}
}

// TestABCountsRateLimitsApart: a B that answers 30 % of requests with HTTP 429 is not "slower": its
// latencies are its successes' (the numbers of its stage.json), the 429s are counted apart and
// named in a note, the error rate shows them, and the A/B still exits 0 (it ran; B is not down).
func TestABCountsRateLimitsApart(t *testing.T) {
	a := abMock(t, 50*time.Millisecond, 1)
	b := abMock(t, 50*time.Millisecond, 2, func(c *mock.Config) { c.RateLimitRate, c.RetryAfter = 0.3, 0 })
	code, stdout, stderr, dir := abRun(t, abScenario(t, 5, abStage), "--target", "A="+a, "--target", "B="+b)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	res := readAB(t, dir)
	var cb resultfiles.ABCounts
	for _, c := range res.Requests {
		if c.Target == "B" {
			cb = c.ABCounts
		}
	}
	if cb.RateLimited == 0 || cb.RateLimited != cb.Errors || cb.Succeeded+cb.Errors+cb.Cancelled != cb.InWindow {
		t.Fatalf("B's counts %+v: want its 429s counted, and as its only errors", cb)
	}
	bs := readStages(t, filepath.Join(dir, "B"))[0]
	if m := abMetric(res, 1, "ttft_p50_ms"); m.B.V != bs.Summary.TTFT.P50 {
		t.Errorf("B's ttft_p50_ms %v is not its successes' (stage.json %v)", m.B.V, bs.Summary.TTFT.P50)
	}
	if m := abMetric(res, 1, "error_rate"); m.Verdict != ab.Worse {
		t.Errorf("error_rate %+v: 30 %% 429s are errors", m)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "ab.md"))
	for _, want := range []string{fmt.Sprintf("| HTTP 429 (rate limited) | 0 | %d |", cb.RateLimited), "B answered", "HTTP 429 (rate limited): they are errors, not latency"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("ab.md lacks %q:\n%s", want, md)
		}
	}
}

// TestABInterruptExits130: SIGINT while both targets run ends both stages as partial, still writes
// the comparison of what ran, and exits 130.
func TestABInterruptExits130(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	a, b := abMock(t, 50*time.Millisecond, 1), abMock(t, 50*time.Millisecond, 2)
	out := t.TempDir()
	cmd := exec.Command(bin, "ab", abScenario(t, 6, "{concurrency: 4, duration: 60s}"), "--target", "A="+a, "--target", "B="+b, "--out", out)
	var output syncBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(output.String(), `msg="stage starting" side=A`) || !strings.Contains(output.String(), `msg="stage starting" side=B`) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the stages did not start:\n%s", output.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v\n%s", err, output.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "ab-ab-*"))
	if len(dirs) != 1 {
		t.Fatalf("results: %v\n%s", dirs, output.String())
	}
	for _, side := range []string{"A", "B"} {
		if st := readStages(t, filepath.Join(dirs[0], side)); len(st) != 1 || !st[0].Summary.Partial {
			t.Errorf("%s: its stage is not written as partial", side)
		}
	}
	if res := readAB(t, dirs[0]); len(res.Metrics) == 0 || !strings.Contains(strings.Join(res.Notes, "\n"), "partial") {
		t.Errorf("ab.json of an interrupted A/B: %+v", res)
	}
}

// TestABSideCutShortIsComparedOverTheSameWindow: when B's server dies mid-stage and B's stage is
// stopped as unreachable, A ran its whole window; the comparison cuts A to the seconds B's window
// ran (from the same start), so the two windows are the same instants — A over its whole window
// against B over its first second compared throughputs of different moments — and a note says so.
func TestABSideCutShortIsComparedOverTheSameWindow(t *testing.T) {
	a := abMock(t, 20*time.Millisecond, 1)
	b, killed := dyingMock(t, 40) // 4 sessions of 3–5 turns: killed a second or so into the window
	scenario := abScenario(t, 3, "{concurrency: 4, warmup: 300ms, duration: 4s}")
	code, stdout, stderr, dir := abRun(t, scenario, "--target", "A="+a, "--target", "B="+b)
	<-killed
	if code != 1 || dir == "" || !strings.Contains(stderr, "B: stage failed") {
		t.Fatalf("exit %d, dir %q\n%s%s", code, dir, stdout, stderr)
	}
	as, bs := readStages(t, filepath.Join(dir, "A")), readStages(t, filepath.Join(dir, "B"))
	if len(as) != 1 || len(bs) != 1 || !bs[0].Summary.Partial || as[0].Summary.Partial {
		t.Fatalf("stages: A %d, B %d (B partial %v)", len(as), len(bs), len(bs) == 1 && bs[0].Summary.Partial)
	}
	wa, wb := as[0].Summary.Window, bs[0].Summary.Window
	end := wa.WNs + (wb.EEffNs - wb.WNs)
	f, err := os.Open(filepath.Join(dir, "A", "stage_01", "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := 0
	metrics.ReadRecords(f, func(r *metrics.Record) error {
		if r.RequestStartNs >= wa.WNs && r.RequestStartNs < end {
			want++
		}
		return nil
	})
	res := readAB(t, dir)
	if len(res.Requests) != 2 || res.Requests[0].Target != "A" || res.Requests[0].InWindow != want || want == as[0].Summary.Requests.InWindow {
		t.Errorf("A's requests compared: %+v; want the %d that started in B's %.2f s (A's whole window held %d)",
			res.Requests, want, float64(wb.EEffNs-wb.WNs)/1e9, as[0].Summary.Requests.InWindow)
	}
	if note := strings.Join(res.Notes, "\n"); !strings.Contains(note, "stage 01: B was cut short after ") {
		t.Errorf("notes lack the cut:\n%s", note)
	}
}

// TestABFailOnWorse: --fail-on worse turns B's verdict into the exit code: a B clearly slower than A
// exits 1 with a last line naming the worse metric and its numbers; a bad value is refused before
// anything is sent. (A client too busy to vouch for B's numbers exits 3, and the test then skips.)
func TestABFailOnWorse(t *testing.T) {
	code, _, stderr, _ := abRun(t, abScenario(t, 4, abStage), "--target", "A=http://127.0.0.1:1/v1", "--target", "B=http://127.0.0.1:1/v1", "--fail-on", "slower")
	if code != 2 || !strings.Contains(stderr, `--fail-on "slower": accepted: worse`) {
		t.Errorf("--fail-on slower: exit %d\n%s", code, stderr)
	}
	a, b := abMock(t, 5*time.Millisecond, 1), abMock(t, 80*time.Millisecond, 2)
	code, stdout, stderr, _ := abRun(t, abScenario(t, 4, "{concurrency: 4, warmup: 100ms, duration: 1500ms}"), "--target", "A="+a, "--target", "B="+b, "--fail-on", "worse")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	if code == 3 && strings.Contains(last, "strained") {
		t.Skipf("busy: the client was strained while it measured B: %s", last)
	}
	if code != 1 || !strings.HasPrefix(last, "A/B: B (B) is worse than A (A): stage 01 ") || !strings.Contains(stderr, "FAILED (exit 1, --fail-on worse): B is worse") {
		t.Errorf("exit %d, last line %q\n%s", code, last, stderr)
	}
}
