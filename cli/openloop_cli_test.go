package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/mock"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// TestOpenLoopExamplesRun: the README's request_rate and replay examples run against the bundled
// mock in seconds; their stages are what the files say, and the exit code agrees with the replay's
// own verdict on its pace (on a loaded machine the client may fall behind: then exit 1, and say so).
func TestOpenLoopExamplesRun(t *testing.T) {
	t.Run("request-rate", func(t *testing.T) {
		out := t.TempDir()
		code, stdout, stderr := plload(t, "run", "scenarios/request-rate.yaml", "--out", out, "--quiet")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		type view struct {
			Mode, Name, Arrival string
			CV                  float64
			Rate                resultfiles.StageRate
			InFlight            bool
		}
		var got []view
		dir := onlyRun(t, out)
		stages := readStages(t, dir)
		for _, st := range stages {
			got = append(got, view{st.Mode, st.Name, st.Arrival, st.CV, *st.Rate, st.Summary.InFlight.Max >= 1 && st.Summary.InFlight.Mean > 0})
		}
		want := []view{
			{workload.ModeRequestRate, "steady", workload.ArrivalGamma, 2, resultfiles.StageRate{From: 20, To: 20}, true},
			{workload.ModeRequestRate, "ramp", workload.ArrivalGamma, 2, resultfiles.StageRate{From: 10, To: 40, Over: "2s"}, true},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("stages (-want +got):\n%s", diff)
		}
		// plload report on the records with the scenario computes the stage again, the same way.
		code, stdout, stderr = plload(t, "report", "--records", filepath.Join(dir, "stage_02", "profile_export.jsonl"),
			"--scenario", "scenarios/request-rate.yaml", "--stage", "2")
		row := "| 02 | ramp: 10→40 req/s over 2s gamma cv 2 ≤ 200 |"
		tok := fmt.Sprintf("| %.1f |", stages[1].Summary.Throughput.OutTokPerSec)
		if code != 0 || !strings.Contains(stdout, row) || !strings.Contains(stdout, tok) {
			t.Errorf("report --records: exit %d, want rows with %q and %q:\n%s\n%s", code, row, tok, stdout, stderr)
		}
	})
	t.Run("replay-mooncake", func(t *testing.T) {
		out := t.TempDir()
		code, stdout, stderr := plload(t, "run", "scenarios/replay-mooncake.yaml", "--out", out, "--quiet")
		stages := readStages(t, onlyRun(t, out))
		if len(stages) != 1 || stages[0].Mode != workload.ModeReplay || stages[0].TimeScale != 0.5 {
			t.Fatalf("stages: %+v", stages)
		}
		// The trace's reuse is shown beside the cache hit, with the cache's size as the mock's own
		// /metrics says it (vLLM's cache_config_info), not a number plload assumed.
		if st := stages[0]; st.TraceBlockReuse == nil || st.Server == nil || !st.Server.CacheTokens.OK || st.Server.CacheTokens.V != 500000 ||
			st.ServerCacheTokens == nil || *st.ServerCacheTokens != 500000 {
			t.Errorf("trace reuse %v, server %+v, server_cache_tokens %v: want the reuse and the mock's 500000 tokens read from its metrics",
				st.TraceBlockReuse, st.Server, st.ServerCacheTokens)
		}
		sum := stages[0].Summary
		if !sum.ReplayValid.OK || sum.SendLag.N != 40 {
			t.Fatalf("replay_valid %+v, send lag over %d requests (want all 40 of the trace)", sum.ReplayValid, sum.SendLag.N)
		}
		failed := strings.Contains(stderr, "client could not keep the trace's pace")
		switch {
		case sum.ReplayValid.V && code != 0:
			t.Fatalf("a valid replay exited %d\n%s\n%s", code, stdout, stderr)
		case !sum.ReplayValid.V && (code != 1 || !failed):
			t.Fatalf("an invalid replay (%s) exited %d without saying so\n%s", sum.ReplayInvalidReason, code, stderr)
		case !sum.ReplayValid.V:
			t.Logf("this machine could not keep the trace's pace: %s", sum.ReplayInvalidReason)
		}
	})
}

// TestOpenFilesCheckCountsMaxInFlight: a request_rate stage holds up to load.max_in_flight
// connections; one set above the machine's open-file limit is refused before traffic, naming the
// key; the default cap (nobody chose it) over the limit is only a warning.
func TestOpenFilesCheckCountsMaxInFlight(t *testing.T) {
	bin := buildBinary(t)
	dead := "http://" + deadAddr(t) + "/v1"
	for _, tc := range []struct {
		name, extra string
		want        []string
	}{
		{"set above the limit", "  max_in_flight: 500\n", []string{"load.max_in_flight", "500 open connections need about 564 file descriptors", "may open 200", "nothing was sent"}},
		{"the default", "", []string{"warning: load.max_in_flight: the default cap of 1000", "the run goes on", "connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "name: wide\ntarget: {base_url: " + dead + ", model: m}\npersonas: {count: 1, system_prompt_tokens: 5}\n" +
				"session: {user_input_tokens: 5, max_output_tokens: 5}\nload:\n  mode: request_rate\n" + tc.extra +
				"  stages:\n    - {rate: 5, duration: 1s}\n"
			path := filepath.Join(t.TempDir(), "wide.yaml")
			os.WriteFile(path, []byte(text), 0o644)
			out := t.TempDir()
			msg, err := exec.Command("sh", "-c", `ulimit -n 200 && exec "$0" run "$1" --out "$2"`, bin, path, out).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("%v\n%s", err, msg)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(msg), want) {
					t.Errorf("the output lacks %q:\n%s", want, msg)
				}
			}
		})
	}
}

// TestOpenFilesCheckArrivalRateThinkingSessions: an arrival_rate stage's max_concurrency counts
// sessions, and a session holds a connection only while its turn streams. Sessions that think 20–40 s
// between turns need a few connections at once: max_concurrency over the limit is a warning and the
// run goes on, and succeeds; sessions that never think, arriving fast, need one each, and are refused
// before traffic.
func TestOpenFilesCheckArrivalRateThinkingSessions(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct {
		name, rate, think string
		code              int
		want              []string
	}{
		{"thinking", "20", "{min: 20s, max: 40s}", 0, []string{"wide.yaml:8:", "warning: load.stages[0].max_concurrency", "500 open connections need about 1064 file descriptors",
			"about 2 are expected at once", "the run goes on", "too many open files"}},
		{"not thinking", "2000", "0s", 2, []string{"wide.yaml:8:", "load.stages[0].max_concurrency", "about 500 are expected at once", "twice that must fit", "nothing was sent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "name: wide\ntarget: {base_url: mock, model: m, mock: {ttft: 50ms, tps: 200}}\npersonas: {count: 1, system_prompt_tokens: 5}\n" +
				"session: {turns: 4, user_input_tokens: 5, max_output_tokens: 5, think_time: " + tc.think + "}\nload:\n  mode: arrival_rate\n" +
				"  stages:\n    - {sessions_per_sec: " + tc.rate + ", max_concurrency: 500, duration: 1s}\n"
			path := filepath.Join(t.TempDir(), "wide.yaml")
			os.WriteFile(path, []byte(text), 0o644)
			out := t.TempDir()
			msg, err := exec.Command("sh", "-c", `ulimit -n 200 && exec "$0" run "$1" --out "$2"`, bin, path, out).CombinedOutput()
			code := 0
			if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, msg)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(msg), want) {
					t.Errorf("the output lacks %q:\n%s", want, msg)
				}
			}
		})
	}
}

// TestCacheShortOfTheTraceIsAStageWarning: replaying a trace against a server whose prefix cache is
// far smaller than the trace's working set, the cache hit falls short of the trace's own block reuse;
// the warning that says so, with the cache's size as the server's /metrics says it, is in stage.json
// and report.md, not only on the terminal.
func TestCacheShortOfTheTraceIsAStageWarning(t *testing.T) {
	base := abMock(t, 50*time.Millisecond, 1, func(c *mock.Config) { c.TPS, c.Jitter, c.CacheCapacity = 1000, 0, 3000 })
	trace, err := filepath.Abs("scenarios/data/mooncake.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	text := "name: small-cache\nseed: 1\ntarget: {base_url: " + base + ", model: m, timeout: 5s}\n" +
		"workload: {trace: {file: " + trace + ", format: mooncake, block_tokens: 512}}\n" +
		"load:\n  mode: replay\n  time_scale: 0.5\n  max_in_flight: 100\n  drain_timeout: 5s\n  stages:\n    - {warmup: 0s, duration: 4s}\n"
	path := filepath.Join(t.TempDir(), "small-cache.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", path, "--out", out, "--quiet", "--no-preflight")
	dir := onlyRun(t, out)
	stages := readStages(t, dir)
	if len(stages) != 1 {
		t.Fatalf("exit %d, %d stages\n%s\n%s", code, len(stages), stdout, stderr)
	}
	want := fmt.Sprintf("the server's prefix cache (%d tokens) is likely smaller than the trace's working set", 3000/16*16)
	warnings := strings.Join(stages[0].Summary.Warnings, "\n")
	if !strings.Contains(warnings, "against the trace's block reuse") || !strings.Contains(warnings, want) {
		t.Errorf("stage.json's warnings lack %q:\n%s", want, warnings)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "report.md")); !strings.Contains(string(md), want) {
		t.Errorf("report.md lacks %q", want)
	}
}
