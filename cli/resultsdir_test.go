package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plload/plload/mock"
)

// TestResultsDirCheckedBeforeAnyTraffic: a results directory plload cannot write, or one without
// room for the run's expected records, is refused with exit 2 naming the directory, and the target
// never sees a request — not even the preflight — and no run directory is left behind.
func TestResultsDirCheckedBeforeAnyTraffic(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.Model, cfg.TTFT, cfg.TPS, cfg.Seed = "m", time.Millisecond, 5000, 1
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int64
	var stopRun atomic.Pointer[context.CancelFunc]
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if c := stopRun.Load(); c != nil && strings.HasSuffix(r.URL.Path, "/chat/completions") {
			(*c)() // a run that got past the check would send for hours: one request is proof enough
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()

	scenario := func(duration string) string {
		return "name: rd\nseed: 1\ntarget: {base_url: " + ts.URL + "/v1, model: m, timeout: 10s, server_metrics_url: \"off\"}\n" +
			"personas: {count: 2, system_prompt_tokens: {min: 10, max: 20}}\n" +
			"session: {turns: {min: 1, max: 2}, user_input_tokens: {min: 5, max: 10}, max_output_tokens: {min: 20, max: 40}, think_time: {min: 0s, max: 0s}}\n" +
			"load: {mode: concurrency, stages: [{concurrency: 64, warmup: 0s, duration: " + duration + "}]}\n"
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	if err := os.WriteFile(file, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(tmp, "read-only")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, base, duration, want string
		skip                       string
	}{
		{name: "under a regular file", base: filepath.Join(file, "results"), duration: "2s", want: "results directory " + filepath.Join(file, "results") + ": mkdir: not a directory"},
		{name: "read-only directory", base: readOnly, duration: "2s", want: "results directory " + readOnly + " is not writable: open: permission denied",
			skip: map[bool]string{true: "running as root, whom a 0555 directory does not stop (the regular-file case covers the refusal)"}[os.Geteuid() == 0]},
		// 64 sessions for 100000 hours: terabytes of records, more than any test machine's disk has free.
		{name: "no room for the records", base: filepath.Join(tmp, "small"), duration: "100000h", want: "free, and the run needs about"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			path := filepath.Join(tmp, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(scenario(tt.duration)), 0o644); err != nil {
				t.Fatal(err)
			}
			seen.Store(0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stopRun.Store(&cancel)
			var out, errOut bytes.Buffer
			code := Run(ctx, []string{"plload", "run", path, "--out", tt.base, "--quiet"}, &out, &errOut)
			if code != exitBadInput || !strings.Contains(errOut.String(), tt.want) || !strings.Contains(errOut.String(), "nothing was sent") {
				t.Errorf("exit %d, want %d with %q and \"nothing was sent\":\n%s%s", code, exitBadInput, tt.want, out.String(), errOut.String())
			}
			if n := seen.Load(); n != 0 {
				t.Errorf("the target saw %d request(s) before the results directory was refused", n)
			}
			if runs, _ := filepath.Glob(filepath.Join(tt.base, "rd-*")); len(runs) > 0 {
				t.Errorf("run directories left behind: %v", runs)
			}
		})
	}
}
