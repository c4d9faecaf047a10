package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/plload/plload/mock"
	"github.com/plload/plload/sse"
)

// TestServerClosingAfterEachAnswer: llama.cpp's server closes the connection after every streamed
// answer while still advertising keep-alive. A client that reuses the pooled connection at once finds
// it closed before any response byte; that request is sent again, at once, on a new connection, so
// 2,000 requests at concurrency 1 and at 64 end with no error at all.
func TestServerClosingAfterEachAnswer(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.TPS, cfg.CloseAfterResponse = 0, 10000, true
	m, err := mock.Start(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	for _, conc := range []int{1, 64} {
		t.Run(fmt.Sprint("concurrency ", conc), func(t *testing.T) {
			const want = 2000
			session := "  turns: 50\n  user_input_tokens: 3\n  max_output_tokens: 1\n  think_time: 0s"
			text := scenarioYAML(m.BaseURL(), session, fmt.Sprintf("  mode: concurrency\n  drain_timeout: 5s\n  stages:\n    - {concurrency: %d, duration: 120s}", conc))
			// The stage stops (as interrupted) once the mock has answered want requests: the test is
			// bounded in count, and in time by the stage's duration.
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var answered atomic.Int64
			res, dir, err := runScenarioConfig(t, ctx, text, func(c *Config) {
				c.OnTokenEvent = func(sse.Event) {
					if answered.Add(1) == want {
						stop()
					}
				}
			})
			if err != nil && err != ErrInterrupted {
				t.Fatal(err)
			}
			r := res[0]
			t.Logf("%d requests, %d ok, %d errors, %d retried, %d cancelled", r.Issued, r.OK, r.Errors, r.Retried, r.Cancelled)
			retried := 0
			for _, rec := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
				if md := rec["metadata"].(map[string]any); md["retried"] == true {
					retried++
				}
				if e, ok := rec["error"].(map[string]any); ok && rec["metadata"].(map[string]any)["was_cancelled"] != true {
					t.Errorf("error record: %v", e)
				}
			}
			if r.OK < want-conc || r.Errors != 0 {
				t.Fatalf("%d ok (want ≥ %d), %d errors (want 0)", r.OK, want-conc, r.Errors)
			}
			if retried != r.Retried {
				t.Fatalf("%d records say retried, the stage counted %d", retried, r.Retried)
			}
		})
	}
}
