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
	"testing"
	"time"

	"github.com/plload/plload/mock"
)

// TestPreparedBurstFindsConnectionsOpen: a replay's burst of 8 requests at one instant, prepared
// ahead, finds its connections already open — the pool dialed them while the arrivals waited — so
// the server accepted them well before the first request came; with the pool left to dial when due
// (Config.NoConnAhead), they are accepted as the requests go.
func TestPreparedBurstFindsConnectionsOpen(t *testing.T) {
	const burst = 8
	var trace strings.Builder
	// The trace's clock starts at its first row: a lone request, so the burst is due 400 ms in.
	trace.WriteString(`{"timestamp": 0, "input_length": 8, "output_length": 2, "hash_ids": [100]}` + "\n")
	for i := range burst {
		fmt.Fprintf(&trace, `{"timestamp": 400, "input_length": 8, "output_length": 2, "hash_ids": [%d]}`+"\n", i)
	}
	path := filepath.Join(t.TempDir(), "burst.jsonl")
	if err := os.WriteFile(path, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.TPS = time.Millisecond, 1000
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ahead := range []bool{true, false} {
		t.Run(fmt.Sprintf("ahead=%v", ahead), func(t *testing.T) {
			var mu sync.Mutex
			var accepted []time.Time
			var chats []time.Time
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/chat/completions") {
					mu.Lock()
					chats = append(chats, time.Now())
					mu.Unlock()
				}
				srv.ServeHTTP(w, r)
			}))
			ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					mu.Lock()
					accepted = append(accepted, time.Now())
					mu.Unlock()
				}
			}
			ts.Start()
			defer ts.Close()
			text := scenarioYAML(ts.URL+"/v1", "  think_time: 0s",
				"  mode: replay\n  max_in_flight: 100\n  stages:\n    - {warmup: 0s, duration: 1s}")
			text = withSource(text, fmt.Sprintf("workload:\n  trace: {file: %s, format: mooncake, block_tokens: 16}\n", path))
			text = strings.Replace(text, "slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}", "", 1)
			res, _, err := runScenarioConfig(t, context.Background(), text, func(c *Config) {
				c.NoConnAhead = !ahead
				c.Getenv = func(k string) string {
					if k == HTTPClientEnv {
						return "" // the HTTP/1.1 client, whose pool opens connections ahead
					}
					return testEnv(k)
				}
			})
			if err != nil || res[0].OK != burst+1 {
				t.Fatalf("err %v, %d of %d answered", err, res[0].OK, burst+1)
			}
			mu.Lock()
			defer mu.Unlock()
			burstAt := chats[1] // the lone request came first, 400 ms before
			early := 0          // accepted at least 20 ms before the burst's first request arrived
			for _, at := range accepted {
				if burstAt.Sub(at) >= 20*time.Millisecond {
					early++
				}
			}
			// The lone request's connection, and the RTT probe's, are open before the burst either way.
			if ahead && early < burst {
				t.Errorf("%d of %d connections opened well before the burst, want all %d opened ahead", early, len(accepted), burst)
			}
			if !ahead && early > 2 {
				t.Errorf("%d connections opened well before the burst with the pool left to dial when due", early)
			}
		})
	}
}
