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
)

// TestSearchAndABCheckTheResultsDirFirst: plload search and plload ab, like plload run, refuse a
// results directory they cannot make with exit 2 before any request — the preflight included.
// Catches: search and ab preflighting each target (and starting a search) before making their
// results directories, so an unwritable --out still sent traffic.
func TestSearchAndABCheckTheResultsDirFirst(t *testing.T) {
	var seen atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		http.Error(w, "this test's server must see no request", http.StatusTeapot)
	}))
	defer ts.Close()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	if err := os.WriteFile(file, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(tmp, "s.yaml")
	text := "name: rd\nseed: 1\ntarget: {base_url: " + ts.URL + "/v1, model: m, timeout: 10s, server_metrics_url: \"off\"}\n" +
		"personas: {count: 2, system_prompt_tokens: {min: 10, max: 20}}\n" +
		"session: {turns: {min: 1, max: 1}, user_input_tokens: {min: 5, max: 10}, max_output_tokens: {min: 20, max: 40}, think_time: {min: 0s, max: 0s}}\n" +
		"load: {mode: concurrency, stages: [{concurrency: 2, warmup: 0s, duration: 2s}]}\n" +
		"slo: {ttft_p95: 1s}\n"
	if err := os.WriteFile(scenario, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(file, "results")
	for _, args := range [][]string{
		{"plload", "search", scenario, "--out", base, "--max", "4"},
		{"plload", "ab", scenario, "--target", "a=" + ts.URL + "/v1", "--target", "b=" + ts.URL + "/v1", "--out", base},
	} {
		t.Run(args[1], func(t *testing.T) {
			seen.Store(0)
			var out, errOut bytes.Buffer
			code := Run(context.Background(), args, &out, &errOut)
			if code != exitBadInput || !strings.Contains(errOut.String(), "results directory "+base) || seen.Load() != 0 {
				t.Errorf("exit %d with %d request(s) sent; want %d naming the results directory and nothing sent:\n%s%s", code, seen.Load(), exitBadInput, out.String(), errOut.String())
			}
		})
	}
}
