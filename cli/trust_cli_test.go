package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plload/plload/mock"
	"github.com/plload/plload/resultfiles"
)

// trustScenario is a small two-stage scenario against target (a YAML mapping body, indented).
func trustScenario(t *testing.T, target, slo string) string {
	t.Helper()
	if slo == "" {
		slo = "{ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.05}"
	}
	text := fmt.Sprintf(`name: trust
seed: 3
target:
%s
  timeout: 5s
personas: {count: 2, system_prompt_tokens: 20}
session: {turns: 2, user_input_tokens: 5, max_output_tokens: 4, think_time: 10ms}
load:
  mode: concurrency
  drain_timeout: 5s
  abort_after: 1s
  stages:
    - {concurrency: 4, duration: 1500ms}
    - {concurrency: 8, duration: 1500ms}
slo: %s
cost: {gpu_hourly_usd: 1}
`, target, slo)
	path := filepath.Join(t.TempDir(), "trust.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestPreflightStopsAWrongTarget: before any stage, one streamed request checks the target; a dead
// port, a URL without /v1, a server that wants a key or does not speak SSE stops the run with exit 2,
// the URL, the cause and the fix, and nothing is written.
func TestPreflightStopsAWrongTarget(t *testing.T) {
	m, err := mock.Start(mock.DefaultConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"invalid api key"}`, http.StatusUnauthorized)
	}))
	defer locked.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"message":{"content":"OK"}}]}`)
	}))
	defer plain.Close()
	private := httptest.NewTLSServer(http.NotFoundHandler()) // a certificate no system CA signed
	defer private.Close()
	private.Config.ErrorLog = log.New(io.Discard, "", 0)
	dead := "http://" + deadAddr(t) + "/v1"
	for _, tc := range []struct {
		name, base string
		want       []string
	}{
		{"nothing listening", dead, []string{dead + "/chat/completions", "connection refused", "is the server running"}},
		{"no /v1", "http://" + m.Addr(), []string{"HTTP 404", "usually ends in /v1", "http://" + m.Addr() + "/v1"}},
		{"wants a key", locked.URL + "/v1", []string{"HTTP 401", "invalid api key", "target.api_key_env"}},
		{"not SSE", plain.URL + "/v1", []string{"application/json", "Server-Sent Events"}},
		{"private CA", private.URL + "/v1", []string{"TLS with", "certificate", "target.tls.ca_file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			scenario := trustScenario(t, "  base_url: "+tc.base+"\n  model: m", "")
			code, stdout, stderr := plload(t, "run", scenario, "--out", out, "--quiet")
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, stdout, stderr)
			}
			for _, want := range append(tc.want, "preflight", "no stage was started", "--no-preflight") {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("files were written: %v", entries)
			}
		})
	}
}

// TestBadHTTPClientChoiceIsRefused: PLLOAD_HTTP_CLIENT set to what plload does not have stops the
// run before any stage, naming the variable and what it accepts, with exit 2 (it once ran a stage of
// nothing and ended on a missing records file); with --no-preflight the first stage fails, and the
// run's error says why.
func TestBadHTTPClientChoiceIsRefused(t *testing.T) {
	t.Setenv("PLLOAD_HTTP_CLIENT", "fasthttp")
	code, out, errOut := plload(t, "run", "scenarios/smoke.yaml", "--out", t.TempDir())
	want := `PLLOAD_HTTP_CLIENT="fasthttp": accepted are net/http, h1-blocking`
	if code != 2 || !strings.Contains(errOut, want) || strings.Contains(out, "stage 01/02 done") {
		t.Fatalf("exit %d, want 2 with %q before any stage\nstdout:\n%s\nstderr:\n%s", code, want, out, errOut)
	}
	code, _, errOut = plload(t, "run", "scenarios/smoke.yaml", "--out", t.TempDir(), "--no-preflight")
	if code != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("--no-preflight: exit %d, want 1 with %q\nstderr:\n%s", code, want, errOut)
	}
}

// TestDeadTargetWithoutPreflight: --no-preflight against a dead port: the first stage stops after
// load.abort_after as failed, the later one never starts, the terminal says why (errors by kind with
// the first message), stage.json lists the outage, and the exit code is 1.
func TestDeadTargetWithoutPreflight(t *testing.T) {
	out := t.TempDir()
	scenario := trustScenario(t, "  base_url: http://"+deadAddr(t)+"/v1\n  model: m\n  server_metrics_url: \"off\"", "")
	code, stdout, stderr := plload(t, "run", scenario, "--out", out, "--quiet", "--no-preflight")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"stage 01/02 FAILED", "errors: refused ×", "(first: cannot connect to", "STOPPED: target unreachable since", "outage "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"FAILED (exit 1)", "stage 01 failed: target unreachable", "the 1 later stage(s) were skipped", "network RTT not measured"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stdout, "stage 02/02") || strings.Contains(stdout+stderr, "injector may be") {
		t.Errorf("a second stage ran, or the client was blamed:\n%s\n%s", stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "trust-*"))
	if len(dirs) != 1 {
		t.Fatalf("results: %v", dirs)
	}
	st, err := resultfiles.ReadStage(filepath.Join(dirs[0], "stage_01", "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Engine.Aborted == "" || len(st.Engine.Outages) != 1 || st.Engine.Outages[0].Kind != "refused" || st.Engine.Outages[0].Requests == 0 {
		t.Fatalf("engine block: %+v", st.Engine)
	}
}

// TestExitCodeSaysWhatHappened: exit 1 when every request failed, or when no stage met the SLO;
// exit 0 when a stage met it (README, "Exit codes").
func TestExitCodeSaysWhatHappened(t *testing.T) {
	for _, tc := range []struct {
		name, target, slo string
		code              int
		want              string
	}{
		{"every request fails", "  base_url: mock\n  mock: {ttft: 5ms, tps: 1000, error_rate: 1}", "", 1, "no request in its window succeeded"},
		{"the SLO fails everywhere", "  base_url: mock\n  mock: {ttft: 300ms, tps: 1000}", "{ttft_p95: 100ms, itl_p95: 100ms, error_rate_max: 0.05}", 1, "no stage met the SLO"},
		{"a stage meets the SLO", "  base_url: mock\n  mock: {ttft: 5ms, tps: 1000}", "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := plload(t, "run", trustScenario(t, tc.target, tc.slo), "--out", t.TempDir(), "--quiet")
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d (want %d), stderr should say %q:\n%s\n%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}

// TestStageJSONCountsRetries: against a mock that closes every connection after its answer (as
// llama.cpp does), no request fails and stage.json counts the ones sent again.
func TestStageJSONCountsRetries(t *testing.T) {
	out := t.TempDir()
	scenario := trustScenario(t, "  base_url: mock\n  mock: {ttft: 1ms, tps: 5000, close_after_response: true}", "")
	code, stdout, stderr := plload(t, "run", scenario, "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "trust-*", "stage_0*", "stage.json"))
	retried := 0
	for _, p := range dirs {
		data, _ := os.ReadFile(p)
		var st struct {
			Engine struct {
				Retried int `json:"retried_requests"`
			} `json:"engine"`
			Summary struct {
				Requests struct{ Errors int } `json:"requests"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		if st.Summary.Requests.Errors != 0 {
			t.Fatalf("%s: %d errors", p, st.Summary.Requests.Errors)
		}
		retried += st.Engine.Retried
	}
	t.Logf("%d requests retried over %d stages", retried, len(dirs))
	if len(dirs) != 2 {
		t.Fatalf("stage.json files: %v", dirs)
	}
}
