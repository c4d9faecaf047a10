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

// idleCloser is a server that, once, drops a kept-alive connection the moment a chat request
// arrives on it after at least minIdle of quiet — what uvicorn or llama.cpp do when their keep-alive
// timeout and the client's next request cross. Every other request gets a short streamed answer.
type idleCloser struct {
	minIdle time.Duration
	mu      sync.Mutex
	dropped int
}

type connKey struct{}

type connState struct {
	mu      sync.Mutex
	lastEnd time.Time
}

func (c *idleCloser) start(t *testing.T) string {
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
		drop := reused && idle >= c.minIdle && c.dropped == 0
		if drop {
			c.dropped++
		}
		c.mu.Unlock()
		if drop {
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

// TestStaleKeepAliveIsRetriedOnce: a request that goes out on a connection idle for over a second
// just as the server drops it is sent again, once, on a new connection — one request, one record, no
// error, and run.log says so. The same drop on a connection in steady use is the server's fault and
// is recorded as an error.
func TestStaleKeepAliveIsRetriedOnce(t *testing.T) {
	srv := &idleCloser{minIdle: time.Second}
	base := srv.start(t)
	check := leakCheck(t)
	res, recs, log := runKeepAlive(t, base, "1200ms")
	check()
	if srv.dropped != 1 || res.Retried != 1 || res.Errors != 0 || len(recs) != res.Issued || res.Issued < 2 {
		t.Fatalf("dropped %d, result %+v, %d records", srv.dropped, res, len(recs))
	}
	if !strings.Contains(log, "retried a request once") || !strings.Contains(log, "stale_connection_retries=1") {
		t.Fatalf("run.log:\n%s", log)
	}
	for _, r := range recs {
		if r["error"] != nil {
			t.Fatalf("a record with an error: %v", r)
		}
	}

	busy := &idleCloser{minIdle: 0}
	res, recs, _ = runKeepAlive(t, busy.start(t), "10ms")
	if busy.dropped != 1 || res.Retried != 0 || res.Errors != 1 || len(recs) != res.Issued {
		t.Fatalf("a drop on a busy connection: dropped %d, result %+v", busy.dropped, res)
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
