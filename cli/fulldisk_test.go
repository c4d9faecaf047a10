package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plload/plload/mock"
)

// TestFullDiskStopsTheRun: plload under a file size limit (bash's ulimit -f, RLIMIT_FSIZE: the
// kernel refuses a write past it with EFBIG, as a full disk refuses one with ENOSPC). The first
// refused write stops the stage at once (the target sees far fewer requests than the stage's
// count), the records that were written are kept under profile_export.jsonl, stage.json and the
// report say the stage failed and how many records were lost, plload report reads the directory,
// and the run exits 1 naming the cause and the file.
func TestFullDiskStopsTheRun(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash to set the file size limit (ulimit -f) of a child process")
	}
	cfg := mock.DefaultConfig()
	cfg.Model, cfg.TTFT, cfg.TPS, cfg.Seed = "m", time.Millisecond, 5000, 1
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var completions atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			completions.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()

	const count = 20000
	base := t.TempDir()
	path := filepath.Join(base, "full.yaml")
	scenario := "name: full\nseed: 1\ntarget: {base_url: " + ts.URL + "/v1, model: m, timeout: 10s, server_metrics_url: \"off\"}\n" +
		"output: {record_requests: true}\n" +
		"personas: {count: 2, system_prompt_tokens: {min: 10, max: 20}}\n" +
		"session: {turns: {min: 1, max: 2}, user_input_tokens: {min: 5, max: 10}, max_output_tokens: {min: 20, max: 40}, think_time: {min: 0s, max: 0s}}\n" +
		"load: {mode: concurrency, stages: [{concurrency: 4, warmup: 0s, duration: 10m, requests: 20000}]}\n"
	if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(base, "out")
	// 200 KiB a file (ulimit counts 1024-byte blocks): the scenario and dataset fit, a few hundred
	// records fit, the stage's 20000 do not.
	cmd := exec.Command(bash, "-c", `ulimit -f 200 && exec "$0" "$@"`, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLLOAD_CLI_ARGS="+strings.Join([]string{"run", path, "--out", out, "--quiet"}, "\n"))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	code := waitExit(t, cmd, 2*time.Minute, "plload run", &log)
	text := log.String()
	t.Logf("exit %d, %d chat requests reached the target\n%s", code, completions.Load(), text)

	if code != exitFailed {
		t.Errorf("exit %d, want %d: a run that lost records must not pass", code, exitFailed)
	}
	if sent := completions.Load(); sent == 0 || sent > count/4 {
		t.Errorf("the target saw %d of the stage's %d requests; want the stage stopped at the first refused write", sent, count)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "full-*"))
	if len(dirs) != 1 {
		t.Fatalf("results directories %v", dirs)
	}
	stage := filepath.Join(dirs[0], "stage_01")
	records := filepath.Join(stage, "profile_export.jsonl")
	for _, want := range []string{"file too large", records, "records were lost", "FAILED"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(text, "(0 ok") {
		t.Error("the stage line counts no success")
	}
	if _, err := os.Stat(records + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("%s.tmp is left (%v): the records kept must be under the name readers look for", records, err)
	}
	data, err := os.ReadFile(records)
	if err != nil {
		t.Fatalf("the records written are gone: %v", err)
	}
	kept := bytes.Count(data, []byte("\n"))
	if kept == 0 || len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("records file: %d lines, %d bytes, not ending in a whole line", kept, len(data))
	}
	st, err := os.ReadFile(filepath.Join(stage, "stage.json"))
	if err != nil {
		t.Fatalf("stage.json (small enough to fit) was not written: %v", err)
	}
	if !strings.Contains(string(st), "records could not be written") {
		t.Errorf("stage.json does not say the stage failed for its records:\n%.2000s", st)
	}
	rcode, rout, rerr := plload(t, "report", dirs[0])
	if rcode != 0 {
		t.Fatalf("plload report on the run: exit %d\n%s%s", rcode, rout, rerr)
	}
}
