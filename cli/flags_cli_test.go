package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// countingMock is the real mock on loopback, serving model "m", behind a handler that counts the
// chat requests that reach it: a test of "nothing was sent" reads the count.
func countingMock(t *testing.T) (baseURL string, chats *atomic.Int64) {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.Model = "m"
	cfg.TTFT, cfg.TPS = 0, 2000
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	chats = &atomic.Int64{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			chats.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Stop(); ts.Close() })
	return ts.URL + "/v1", chats
}

// onlyRun is the one results directory under out.
func onlyRun(t *testing.T, out string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(dirs) != 1 {
		t.Fatalf("results under %s: %v, want one run", out, dirs)
	}
	return dirs[0]
}

func readStages(t *testing.T, dir string) []*resultfiles.StageReport {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "stage_*", "stage.json"))
	var out []*resultfiles.StageReport
	for _, p := range paths {
		st, err := resultfiles.ReadStage(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

// TestRunFromFlagsAlone is issue 16's done-when command, shortened: a request-rate run from flags
// alone against the mock prints the table and exits 0 with no SLO and no price (N/A, not a
// failure); its scenario.resolved.yaml runs again to the same workload (dataset sha256) and writes
// the same resolved scenario.
func TestRunFromFlagsAlone(t *testing.T) {
	base, chats := countingMock(t)
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", "--base-url", base, "--model", "m", "--request-rate", "20", "--duration", "2s",
		"--warmup", "200ms", "--isl", "16", "--osl", "8", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"| stage | load |", "20 req/s poisson", "TTFT", "SLO was set", "cost N/A", "report: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"no SLO flag (--slo-ttft-p95, --slo-tpot-p99, --slo-error-rate)", "no --gpu-hourly-usd"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if chats.Load() < 20 {
		t.Errorf("the mock saw %d chat requests, want about 44 (20 req/s for 2.2 s)", chats.Load())
	}
	first := onlyRun(t, out)
	resolved := filepath.Join(first, "scenario.resolved.yaml")
	sc, issues := workload.Load(resolved, workload.LoadOptions{})
	if issues.Err() != nil {
		t.Fatalf("%s does not load: %v", resolved, issues.Err())
	}
	if sc.Load.Mode != workload.ModeRequestRate || len(sc.Load.Stages) != 1 || sc.Load.Stages[0].Rate.To != 20 || sc.Target.BaseURL != base {
		t.Errorf("resolved scenario: mode %q, stages %+v, base_url %q", sc.Load.Mode, sc.Load.Stages, sc.Target.BaseURL)
	}
	if rep, _ := os.ReadFile(filepath.Join(first, "report.md")); !strings.Contains(string(rep), "plload run "+resolved) {
		t.Errorf("report.md's Reproduce does not run %s", resolved)
	}

	again := t.TempDir()
	if code, stdout, stderr := plload(t, "run", resolved, "--out", again, "--quiet"); code != 0 {
		t.Fatalf("rerun of %s: exit %d\n%s\n%s", resolved, code, stdout, stderr)
	}
	second := onlyRun(t, again)
	a, b := readStages(t, first), readStages(t, second)
	if len(a) != 1 || len(b) != 1 || a[0].DatasetSHA256 != b[0].DatasetSHA256 {
		t.Fatalf("the rerun is a different workload: %d and %d stages", len(a), len(b))
	}
	r1, _ := os.ReadFile(resolved)
	r2, _ := os.ReadFile(filepath.Join(second, "scenario.resolved.yaml"))
	if diff := cmp.Diff(string(r1), string(r2)); diff != "" {
		t.Errorf("the rerun resolved a different scenario (-first +rerun):\n%s", diff)
	}
}

// TestRunFlagListsMakeStages: a list flag is one stage per value, in order, and a session pool
// sized so single-turn sessions do not run dry.
func TestRunFlagListsMakeStages(t *testing.T) {
	base, _ := countingMock(t)
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", "--base-url", base, "--model", "m", "--concurrency", "1,4", "--duration", "700ms",
		"--warmup", "0s", "--isl", "16", "--osl", "4", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var got []int
	for _, st := range readStages(t, onlyRun(t, out)) {
		if st.Mode != workload.ModeConcurrency || st.Duration != "700ms" || st.Warmup != "0s" {
			t.Errorf("stage %d: mode %q, warmup %s, duration %s", st.Stage, st.Mode, st.Warmup, st.Duration)
		}
		got = append(got, st.Concurrency)
	}
	if diff := cmp.Diff([]int{1, 4}, got); diff != "" {
		t.Errorf("stages' concurrency (-want +got):\n%s", diff)
	}
	// The mock here is faster than the estimate assumes for a real server, so sessions are reused;
	// each request's nonce keeps the repeats off the prefix cache, and the report does not cry wolf.
	if strings.Contains(stdout, "dataset reuse") || strings.Contains(stderr, "is likely to run dry") {
		t.Errorf("a flags-only run warned of its session pool:\n%s\n%s", stdout, stderr)
	}
}

// TestFlagsOverrideTheScenarioFile: with a file, a flag replaces its key (a list flag the stages and
// the mode, with the keys of the old mode dropped; --slo-ttft-p95 the old ttft_p95) and everything
// else of the file stays.
func TestFlagsOverrideTheScenarioFile(t *testing.T) {
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", "cli/testdata/tiny.yaml", "--request-rate", "8,12", "--duration", "600ms", "--warmup", "0s",
		"--osl", "3", "--slo-ttft-p95", "2s", "--gpu-hourly-usd", "4", "--endpoint", "completions", "--http", "1.1", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyRun(t, out)
	if !strings.HasPrefix(filepath.Base(dir), "tiny-") {
		t.Errorf("results directory %s: the file's name was not kept", dir)
	}
	sc, issues := workload.Load(filepath.Join(dir, "scenario.resolved.yaml"), workload.LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	type view struct {
		Mode       string
		Rates      []float64
		Durations  []string
		MaxOutput  workload.Dist
		SLO        []workload.SLOLimit
		Price      float64
		Seed       uint64
		Personas   int
		SecretMask string
		Endpoint   string
		HTTP       string
	}
	got := view{Mode: sc.Load.Mode, MaxOutput: sc.Session.MaxOutputTokens, SLO: sc.SLO.LatencyLimits(), Price: *sc.Cost.GPUHourlyUSD,
		Seed: sc.Seed, Personas: sc.Personas.Count, SecretMask: sc.Target.Headers["X-Api-Key"], Endpoint: sc.Target.Endpoint, HTTP: sc.Target.HTTP}
	for _, st := range sc.Load.Stages {
		got.Rates = append(got.Rates, st.Rate.To)
		got.Durations = append(got.Durations, st.Warmup.String()+"+"+st.Duration.String())
	}
	want := view{Mode: workload.ModeRequestRate, Rates: []float64{8, 12}, Durations: []string{"0s+600ms", "0s+600ms"},
		MaxOutput: withLimit(workload.Constant(3), 1e6), SLO: []workload.SLOLimit{{Metric: "ttft", Stat: "p95", Limit: 2e9}, {Metric: "itl", Stat: "p95", Limit: 100e6}},
		Price: 4, Seed: 9, Personas: 2, SecretMask: workload.Masked, Endpoint: "completions", HTTP: "1.1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scenario after the flags (-want +got):\n%s", diff)
	}
}

// TestBadFlagsExitTwoBeforeTraffic: a bad flag value exits 2 with the flag, the key it set and what
// is accepted, and not one request reaches the server.
func TestBadFlagsExitTwoBeforeTraffic(t *testing.T) {
	base, chats := countingMock(t)
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	good := []string{"--base-url", base, "--model", "m"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"concurrency 0", append(good, "--concurrency", "1,0"), []string{`--concurrency "1,0": load.stages[1].concurrency: found 0; accepted: a whole number ≥ 1`}},
		{"empty list item", append(good, "--concurrency", "1,,4"), []string{`--concurrency "1,,4": an empty value`, "accepted: one value or a comma-separated list"}},
		{"rate not a number", append(good, "--request-rate", "fast"), []string{`--request-rate "fast": load.stages[0].rate: found "fast"; accepted: requests per second`}},
		{"rate infinite", append(good, "--request-rate", "inf"), []string{`--request-rate "inf": inf (vllm bench's "all at once") is not a rate; accepted: requests per second`, "--concurrency N"}},
		{"both load flags", append(good, "--concurrency", "2", "--request-rate", "5"), []string{"--concurrency and --request-rate: both set; accepted: one of them"}},
		{"no load flag", good, []string{"the flags --concurrency N[,N...] or --request-rate R[,R...];"}},
		{"no model", []string{"--base-url", base, "--concurrency", "1"}, []string{"the flags --model M;"}},
		{"duration", append(good, "--concurrency", "1", "--duration", "10"), []string{`--duration "10": load.stages[0].duration: found "10"; accepted: a duration with a unit`}},
		{"isl", append(good, "--concurrency", "1", "--isl", "0"), []string{`--isl "0": session.user_input_tokens.value: found 0; accepted: a whole number ≥ 1`}},
		{"isl with dataset", append(good, "--concurrency", "1", "--isl", "8", "--dataset", "scenarios/data/prompts.jsonl"), []string{"--isl with --dataset", "accepted: one of them"}},
		{"dataset format", append(good, "--concurrency", "1", "--dataset", "scenarios/data/prompts.jsonl", "--dataset-format", "csv"), []string{`--dataset-format "csv": workload.dataset.format: found "csv"; accepted: prompts, openai, sharegpt, aiperf`}},
		{"slo", append(good, "--request-rate", "5", "--slo-tpot-p99", "-5ms"), []string{`--slo-tpot-p99 "-5ms": slo.tpot.p99`}},
		{"price", append(good, "--request-rate", "5", "--gpu-hourly-usd", "-1"), []string{`--gpu-hourly-usd "-1": cost.gpu_hourly_usd: found -1; accepted: a price ≥ 0`}},
		{"base url", []string{"--base-url", "127.0.0.1:8000", "--model", "m", "--concurrency", "1"}, []string{`--base-url "127.0.0.1:8000": target.base_url: found "127.0.0.1:8000"; accepted: an http:// or https:// URL`}},
		{"over a file", []string{"cli/testdata/tiny.yaml", "--concurrency", "0"}, []string{`--concurrency "0": load.stages[0].concurrency: found 0`}},
		{"two files", []string{"cli/testdata/tiny.yaml", "cli/testdata/tiny.yaml", "--concurrency", "1"}, []string{"expected at most one argument"}},
		{"vllm's flag", append(good, "--request-rate", "5", "--max-concurrency", "8"), []string{"--max-concurrency is a flag of vllm bench serve, not of plload run; in plload: --concurrency N", "--max-in-flight N"}},
		{"vllm's burstiness", append(good, "--request-rate", "5", "--burstiness", "0.5"), []string{"--burstiness is a flag of vllm bench serve, not of plload run; in plload: --arrival gamma --cv C, where C = 1/√B"}},
		{"cv without gamma", append(good, "--request-rate", "5", "--cv", "2"), []string{`--cv "2": load.cv: cv is the burstiness of arrival: gamma`}},
		{"max in flight 0", append(good, "--request-rate", "5", "--max-in-flight", "0"), []string{`--max-in-flight "0": load.max_in_flight: found 0; accepted: a whole number ≥ 1`}},
		{"error rate", append(good, "--request-rate", "5", "--slo-error-rate", "5%"), []string{`--slo-error-rate "5%": slo.error_rate`, "1% is 0.01"}},
		{"endpoint", append(good, "--concurrency", "1", "--endpoint", "chat/completions"), []string{`--endpoint "chat/completions": target.endpoint: found "chat/completions"; accepted: chat, completions`}},
		{"vllm's endpoint path", append(good, "--concurrency", "1", "--endpoint", "/v1/completions"), []string{`--endpoint "/v1/completions": a path, as vllm bench serve's --endpoint takes; accepted: the API's name, here completions (POST …/v1/completions)`}},
		{"http", append(good, "--concurrency", "1", "--http", "3"), []string{`--http "3": target.http: found "3"; accepted: auto, 1.1, 2`}},
		{"osl on embeddings", append(good, "--concurrency", "1", "--endpoint", "embeddings", "--osl", "5"), []string{"--osl with endpoint embeddings, whose requests generate nothing", "accepted: --isl"}},
		{"ignore-eos on rerank", append(good, "--concurrency", "1", "--endpoint", "rerank", "--ignore-eos"), []string{"--ignore-eos with endpoint rerank"}},
		{"ttft slo on embeddings", append(good, "--concurrency", "1", "--endpoint", "embeddings", "--slo-ttft-p95", "1s"), []string{`--slo-ttft-p95 "1s": slo.ttft.p95: target.endpoint embeddings answers in one piece`, "accepted: e2e"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chats.Store(0) // each case on its own count
			out := t.TempDir()
			code, stdout, stderr := plload(t, append(append([]string{"run"}, tc.args...), "--out", out)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, stdout, stderr)
			}
			for _, want := range append(tc.want, "nothing was sent") {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if n := chats.Load(); n != 0 {
				t.Fatalf("%d requests reached the server", n)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("files were written: %v", entries)
			}
		})
	}
}

// TestBadFileLinesSurviveTheFlags: with flags over a file, an error in a key the flags did not touch
// keeps the file's own line and column.
func TestBadFileLinesSurviveTheFlags(t *testing.T) {
	data, _ := os.ReadFile("cli/testdata/tiny.yaml")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(string(data), "count: 2", "count: 0", 1)), 0o644)
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	code, _, stderr := plload(t, "run", bad, "--request-rate", "5", "--out", t.TempDir())
	if code != 2 || !strings.Contains(stderr, bad+":11:10: personas.count: found 0") {
		t.Fatalf("exit %d, want 2 with the file's line:\n%s", code, stderr)
	}
}

// TestRunFromFlagsAtADeadPort: a flags-only run at a port where nothing listens stops at the
// preflight, before any stage or file, with the URL and the cause.
func TestRunFromFlagsAtADeadPort(t *testing.T) {
	dead := "http://" + deadAddr(t) + "/v1"
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", "--base-url", dead, "--model", "m", "--request-rate", "20", "--duration", "2s", "--out", out)
	if code == 0 {
		t.Fatalf("exit 0 at a dead port\n%s\n%s", stdout, stderr)
	}
	for _, want := range []string{dead + "/chat/completions", "connection refused", "preflight"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("files were written: %v", entries)
	}
}

// TestRunHelpShowsAnExampleFirst: run --help opens with runnable examples (a flags-only one among
// them) and says what concurrency counts.
func TestRunHelpShowsAnExampleFirst(t *testing.T) {
	code, out, _ := plload(t, "run", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	usage, _, _ := strings.Cut(strings.SplitN(out, "USAGE:\n", 2)[1], "DESCRIPTION:")
	if !strings.Contains(usage, "plload run --base-url http://127.0.0.1:8000/v1 --model M --request-rate 20") {
		t.Errorf("USAGE lacks the flags-only example:\n%s", usage)
	}
	for _, want := range []string{"counts open sessions", "thinking between turns holds no", "in flight (mean and max)", "--max-concurrency", "--slo-tpot-p99", "--dataset-format"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
}

func withLimit(d workload.Dist, limit float64) workload.Dist {
	d.Limit = limit
	return d
}

// TestDatasetFlagOverAFile: --dataset is a path from the working directory, not from the scenario
// file's folder, and it replaces the file's synthetic shape without a warning for each unused key.
func TestDatasetFlagOverAFile(t *testing.T) {
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", "cli/testdata/tiny.yaml", "--dataset", "scenarios/data/prompts.jsonl", "--dataset-format", "prompts",
		"--osl", "4", "--duration", "500ms", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "ignored with workload.dataset") {
		t.Errorf("the synthetic keys the dataset replaced were left in:\n%s", stderr)
	}
	sc, issues := workload.Load(filepath.Join(onlyRun(t, out), "scenario.resolved.yaml"), workload.LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	abs, _ := filepath.Abs("scenarios/data/prompts.jsonl")
	if d := sc.Workload.Dataset; d == nil || d.File != abs || d.Format != "prompts" || d.OutputTokens.Dist == nil || d.OutputTokens.Dist.Value != 4 {
		t.Errorf("workload.dataset: %+v, want %s, prompts, output_tokens 4", d, abs)
	}
}

// TestValidateTakesTheRunFlags: validate shows the scenario the flags make, as run would run it,
// and refuses a bad flag as run does; it never sends anything.
func TestValidateTakesTheRunFlags(t *testing.T) {
	base, chats := countingMock(t)
	code, stdout, stderr := plload(t, "validate", "--base-url", base, "--model", "m", "--request-rate", "20,40", "--duration", "5s")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"mode: request_rate", "{rate: 20.0, duration: 5s, warmup: 10s}", "{rate: 40.0, duration: 5s, warmup: 10s}", "base_url: " + base, "\n02 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("validate output lacks %q:\n%s", want, stdout)
		}
	}
	code, _, stderr = plload(t, "validate", "cli/testdata/tiny.yaml", "--request-rate", "0")
	if code != 2 || !strings.Contains(stderr, `--request-rate "0": load.stages[0].rate: found 0`) {
		t.Errorf("validate with a bad flag: exit %d\n%s", code, stderr)
	}
	if n := chats.Load(); n != 0 {
		t.Errorf("validate sent %d requests", n)
	}
}

// TestSLOFlagsOnANonStreamedScenario: the SLO flags go through the file's checks, so over a
// target.stream: false scenario --slo-tpot-p99 and --slo-ttft-p95 are refused (exit 2, naming the
// flag, the key and what is accepted) by run and validate alike, before any request: a whole answer
// has no first token, so neither could ever be judged; --slo-error-rate is accepted.
func TestSLOFlagsOnANonStreamedScenario(t *testing.T) {
	const accepted = "a non-streamed run has no TTFT, TTFO, TPOT or ITL (target.stream is false: E2E and tokens come from the whole response, with no first-token time); accepted: limits on e2e, an error rate, or target.stream: true"
	for _, tc := range []struct {
		name string
		args []string
		want string // "": valid
	}{
		{"validate tpot", []string{"validate", "scenarios/batch.yaml", "--slo-tpot-p99", "50ms"}, `--slo-tpot-p99 "50ms": slo.tpot.p99: ` + accepted},
		{"run tpot", []string{"run", "scenarios/batch.yaml", "--slo-tpot-p99", "50ms", "--out", t.TempDir()}, `--slo-tpot-p99 "50ms": slo.tpot.p99: ` + accepted},
		{"validate ttft", []string{"validate", "scenarios/batch.yaml", "--slo-ttft-p95", "500ms"}, `--slo-ttft-p95 "500ms": slo.ttft.p95: ` + accepted},
		{"validate error rate", []string{"validate", "scenarios/batch.yaml", "--slo-error-rate", "0.02"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := plload(t, tc.args...)
			if tc.want == "" {
				if code != 0 {
					t.Fatalf("exit %d\n%s", code, stderr)
				}
				return
			}
			if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "nothing was sent") || strings.Contains(stdout, "stage 01") {
				t.Errorf("exit %d, want 2 with %q\nstdout:\n%s\nstderr:\n%s", code, tc.want, stdout, stderr)
			}
		})
	}
}

// TestFlagStagesOverAFileKeepItsStages: a list flag over a file keeps each file stage's own warmup —
// none when the file's stage has none, never the flags' 10 s default — and switching a request_rate
// file (single-turn by default, no session.turns) to --concurrency keeps it single-turn.
func TestFlagStagesOverAFileKeepItsStages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rr.yaml")
	os.WriteFile(path, []byte(`name: rr
target: {base_url: mock}
personas: {count: 1, system_prompt_tokens: 5}
session: {user_input_tokens: 5, max_output_tokens: 5}
load:
  mode: request_rate
  stages:
    - {rate: 5, warmup: 1s, duration: 2s}
    - {rate: 10, duration: 3s}
`), 0o644)
	code, stdout, stderr := plload(t, "validate", path, "--request-rate", "5,10,20")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"{rate: 5.0, duration: 2s, warmup: 1s}", "{rate: 10.0, duration: 3s, warmup: 0s}", "{rate: 20.0, duration: 3s, warmup: 0s}"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("validate output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = plload(t, "validate", path, "--concurrency", "2,4")
	if code != 0 {
		t.Fatalf("--concurrency over a request_rate file: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "turns: {dist: constant, value: 1}") {
		t.Errorf("the switched scenario is not single-turn:\n%s", stdout)
	}
}

// TestUnjudgedErrorsWarn: a run whose SLO sets latency limits but no error-rate limit, against a
// mock that fails 30 % of requests, says that its errors were not judged (and by how much), and
// --slo-error-rate judges them: exit 1.
func TestUnjudgedErrorsWarn(t *testing.T) {
	args := []string{"run", "--base-url", "mock", "--request-rate", "40", "--duration", "2s", "--warmup", "0s", "--osl", "4", "--slo-ttft-p95", "5s"}
	withErrors := func(extra ...string) []string {
		dir := t.TempDir()
		path := filepath.Join(dir, "e.yaml")
		os.WriteFile(path, []byte("name: e\ntarget:\n  base_url: mock\n  mock: {ttft: 1ms, tps: 2000, error_rate: 0.3}\npersonas: {count: 1, system_prompt_tokens: 5}\nsession: {user_input_tokens: 5, max_output_tokens: 4}\nload: {mode: request_rate, stages: [{rate: 40, duration: 2s}]}\n"), 0o644)
		return append(append([]string{args[0], path}, args[1:]...), append(extra, "--out", dir)...)
	}
	code, stdout, stderr := plload(t, withErrors()...)
	if code != 0 || !strings.Contains(stdout, "of requests failed and the SLO sets no error-rate limit: its SLO PASS judges the successful requests only") {
		t.Errorf("exit %d, want 0 with the unjudged-errors warning\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = plload(t, withErrors("--slo-error-rate", "0.05")...)
	if code != 1 || !strings.Contains(stderr, "is over the SLO's error rate limit 5.00%") {
		t.Errorf("with --slo-error-rate: exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
}

// TestRequestsAndIgnoreEOSFlags: --requests N ends each stage of a flags-only run after N requests,
// all measured (no duration, no warmup), and --ignore-eos asks for exactly --osl tokens, so every
// answer of the mock, which otherwise stops early at a drawn length, is --osl long.
func TestRequestsAndIgnoreEOSFlags(t *testing.T) {
	base, chats := countingMock(t)
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", "--base-url", base, "--model", "m", "--concurrency", "2", "--requests", "12", "--ignore-eos",
		"--isl", "16", "--osl", "9", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyRun(t, out)
	sc, issues := workload.Load(filepath.Join(dir, "scenario.resolved.yaml"), workload.LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	st := sc.Load.Stages[0]
	if st.Requests != 12 || st.Duration != 0 || st.Warmup != 0 || sc.Target.ExtraBody["ignore_eos"] != true {
		t.Errorf("resolved: stage %+v, extra_body %v", st, sc.Target.ExtraBody)
	}
	if n := chats.Load(); n != 12+1 { // and the preflight's one request
		t.Errorf("the mock saw %d chat requests, want 12 and the preflight's", n)
	}
	f, err := os.Open(filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lengths []int
	if err := metrics.ReadRecords(f, func(r *metrics.Record) error { lengths = append(lengths, r.OutputSequenceLength.V); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(lengths) != 12 || slices.ContainsFunc(lengths, func(n int) bool { return n != 9 }) {
		t.Errorf("output lengths %v, want 12 of 9 tokens", lengths)
	}
	// Over a file, --ignore-eos=false drops the file's ignore_eos, and --requests sets every stage's count.
	code, stdout, stderr = plload(t, "validate", "cli/testdata/tiny.yaml", "--requests", "0")
	if code != 2 || !strings.Contains(stderr, `--requests "0": load.stages[0].requests: found 0`) {
		t.Errorf("validate --requests 0: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = plload(t, "validate", "--base-url", "mock", "--concurrency", "1", "--ignore-eos=false", "--requests", "5")
	if code != 0 || strings.Contains(stdout, "ignore_eos") || !strings.Contains(stdout, "requests: 5") {
		t.Errorf("validate --ignore-eos=false: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestMockserverSendTimesHelpTakesNoValue: --send-times is a switch, and its help shows no value
// placeholder (backquoted text in a usage string is one to urfave/cli).
func TestMockserverSendTimesHelpTakesNoValue(t *testing.T) {
	_, stdout, _ := plload(t, "mockserver", "--help")
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "--send-times" && f[1] != "put" {
			t.Errorf("--send-times shows a value: %q", line)
		}
	}
	if !strings.Contains(stdout, "--send-times") {
		t.Errorf("mockserver --help lacks --send-times:\n%s", stdout)
	}
}

// TestRetrievalFromFlags: an embeddings or rerank run from flags alone has no personas or sessions,
// and --isl is each text's length.
func TestRetrievalFromFlags(t *testing.T) {
	for endpoint, key := range map[string]string{"embeddings": "embeddings:\n  input_tokens:\n    dist: constant\n    value: 40", "rerank": "rerank:\n  document_tokens:\n    dist: constant\n    value: 40"} {
		code, stdout, stderr := plload(t, "validate", "--base-url", "mock", "--endpoint", endpoint, "--concurrency", "2", "--isl", "40")
		if code != 0 || !strings.Contains(stdout, key) || strings.Contains(stdout, "personas:") || strings.Contains(stdout, "\nsession:") {
			t.Errorf("%s: exit %d\n%s%s", endpoint, code, stdout, stderr)
		}
	}
}
