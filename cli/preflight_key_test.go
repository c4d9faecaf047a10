package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPreflightSendsTheKey: a server that answers 401 to a request without the API key passes the
// preflight and the stage when target.api_key_env names a set variable: the preflight's request
// carries the key like every request of a stage does.
// Catches: a preflight that read no environment (every authenticated target refused with "the server
// refused the credentials", exit 2, though the key was right).
func TestPreflightSendsTheKey(t *testing.T) {
	const key = "sk-preflight-key-0123"
	t.Setenv("PLLOAD_TEST_PREFLIGHT_KEY", key)
	var with, without atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // /metrics: scraped without the key, as servers serve it
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+key {
			without.Add(1)
			http.Error(w, `{"error":"invalid api key"}`, http.StatusUnauthorized)
			return
		}
		with.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"OK\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer ts.Close()
	code, stdout, stderr := plload(t, "run", "--base-url", ts.URL+"/v1", "--model", "m", "--api-key-env", "PLLOAD_TEST_PREFLIGHT_KEY",
		"--concurrency", "1", "--duration", "1s", "--warmup", "0s", "--osl", "4", "--out", t.TempDir(), "--quiet")
	if code != 0 || strings.Contains(stderr, "preflight") {
		t.Fatalf("exit %d, want 0 with the preflight passed\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if without.Load() != 0 || with.Load() < 2 {
		t.Fatalf("the server saw %d requests with the key and %d without; want every one with it", with.Load(), without.Load())
	}
}
