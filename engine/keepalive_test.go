package engine

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plload/plload/mock"
)

// idleCloser is a server that drops a kept-alive connection the moment a chat request arrives on it
// after at least minIdle of quiet — what uvicorn or llama.cpp do when their keep-alive timeout and the
// client's next request cross. Every other request gets a short streamed answer. With every, it drops
// each such request, not only the first; with retriesToo it also drops a request it saw before (a
// retry, by X-Request-ID); with afterHeaders it sends the response headers before closing.
type idleCloser struct {
	minIdle                         time.Duration
	every, retriesToo, afterHeaders bool
	mu                              sync.Mutex
	dropped                         int
	attempts                        map[string]int // by X-Request-ID
}

type connKey struct{}

type connState struct {
	mu      sync.Mutex
	lastEnd time.Time
}

func (c *idleCloser) start(t *testing.T) string {
	c.attempts = map[string]int{}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := r.Context().Value(connKey{}).(*connState)
		defer func() { st.mu.Lock(); st.lastEnd = time.Now(); st.mu.Unlock() }()
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"object":"list","data":[]}`)
			return
		}
		st.mu.Lock()
		idle := time.Since(st.lastEnd)
		reused := !st.lastEnd.IsZero()
		st.mu.Unlock()
		c.mu.Lock()
		id := r.Header.Get("X-Request-ID")
		c.attempts[id]++
		drop := reused && idle >= c.minIdle && (c.dropped == 0 || c.every) || c.retriesToo && c.attempts[id] > 1
		if drop {
			c.dropped++
		}
		c.mu.Unlock()
		if drop {
			if c.afterHeaders {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				http.NewResponseController(w).Flush()
			}
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []string{`{"choices":[{"delta":{"content":"Hello"}}]}`, `{"choices":[{"delta":{"content":" there"},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2}}`, `[DONE]`} {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			http.NewResponseController(w).Flush()
		}
	}))
	ts.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, &connState{})
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL + "/v1"
}

func runKeepAlive(t *testing.T, base, think string) (StageResult, []map[string]any, string) {
	t.Helper()
	session := fmt.Sprintf("  turns: 2\n  user_input_tokens: 5\n  max_output_tokens: 2\n  think_time: %s", think)
	text := scenarioYAML(base, session, "  mode: concurrency\n  drain_timeout: 5s\n  stages:\n    - {concurrency: 1, duration: 1500ms}")
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	log, _ := os.ReadFile(filepath.Join(dir, "stage_01", "run.log"))
	return res[0], recs, string(log)
}

// TestClosedKeepAliveIsRetriedOnce: a request that goes out on a reused connection the server has just
// closed — idle or in steady use — and fails before any response byte is sent again, once, at once,
// on a new connection: one request, one record marked retried, no error, and run.log says so. A retry
// that fails too is an error (never a third try); a failure after a response byte is never retried.
func TestClosedKeepAliveIsRetriedOnce(t *testing.T) {
	for _, tc := range []struct {
		name              string
		srv               *idleCloser
		think             string
		retried, failures bool // want retries; want errors
		attemptsPerFailed int
	}{
		{name: "idle connection dropped", srv: &idleCloser{minIdle: time.Second}, think: "1200ms", retried: true},
		{name: "busy connection dropped", srv: &idleCloser{}, think: "10ms", retried: true},
		{name: "the retry fails too", srv: &idleCloser{every: true, retriesToo: true}, think: "10ms", retried: true, failures: true, attemptsPerFailed: 2},
		{name: "dropped after the headers", srv: &idleCloser{every: true, afterHeaders: true}, think: "10ms", failures: true, attemptsPerFailed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.srv.start(t)
			check := leakCheck(t)
			res, recs, log := runKeepAlive(t, base, tc.think)
			check()
			tc.srv.mu.Lock() // the server's handlers may still be finishing
			defer tc.srv.mu.Unlock()
			t.Logf("%+v", res)
			if tc.srv.dropped == 0 || len(recs) != res.Issued || res.Issued < 2 {
				t.Fatalf("dropped %d, %d records, issued %d", tc.srv.dropped, len(recs), res.Issued)
			}
			if (res.Retried > 0) != tc.retried || (res.Errors > 0) != tc.failures {
				t.Fatalf("retried %d, errors %d; want retries %v, errors %v", res.Retried, res.Errors, tc.retried, tc.failures)
			}
			marked := 0
			for _, r := range recs {
				md := r["metadata"].(map[string]any)
				if md["retried"] == true {
					marked++
				}
				if r["error"] != nil {
					if !tc.failures {
						t.Fatalf("a record with an error: %v", r)
					}
					if n := tc.srv.attempts[md["x_request_id"].(string)]; n != tc.attemptsPerFailed {
						t.Fatalf("a failed request was sent %d times, want %d: %v", n, tc.attemptsPerFailed, r)
					}
				}
			}
			if marked != res.Retried {
				t.Fatalf("%d records marked retried, stage counted %d", marked, res.Retried)
			}
			if tc.retried && !strings.Contains(log, "sent a request again on a new connection") {
				t.Fatalf("run.log does not say a request was retried:\n%s", log)
			}
		})
	}
}

// TestConnectionsAreKeptAlive: against the real mock, every turn of a session goes out on a kept-alive
// connection — a stage at concurrency 3 opens a handful of connections for dozens of requests, so no
// turn waits for a TCP (or TLS) handshake. The answer's body must be read to its end for Go to keep the
// connection: closing it right after [DONE], before the chunked terminator arrives, throws it away.
func TestConnectionsAreKeptAlive(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.TPS = 5*time.Millisecond, 1000
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(func() { ts.Close(); srv.Stop() })
	text := scenarioYAML(ts.URL+"/v1", shortSessions, "  mode: concurrency\n  drain_timeout: 2s\n  stages:\n    - {concurrency: 3, duration: 1s}")
	res, _, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests over %d connections", res[0].Issued, conns.Load())
	// Concurrency 3 and the RTT probe's, plus a margin of one request in 20 for a terminator that a
	// loaded machine delays past the drain limit. Closing after [DONE] opened one for every 5 (19 for 93).
	if limit := int64(3 + 1 + res[0].Issued/20); res[0].Issued < 20 || conns.Load() > limit {
		t.Fatalf("%d requests opened %d connections (at most %d expected)", res[0].Issued, conns.Load(), limit)
	}
}
