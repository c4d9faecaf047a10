package mock

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// holdRequests sends n requests that hold their slots (the mock's TTFT is an hour) until the
// returned cancel.
func holdRequests(t *testing.T, m *Running, n int) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	body := chatBody(t, []map[string]string{{"role": "user", "content": "hold"}}, nil)
	for range n {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "POST", m.BaseURL()+"/chat/completions", strings.NewReader(string(body)))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body) // until cancel: closing the body would end the request
				resp.Body.Close()
			}
		}()
	}
	return cancel
}

func slotState(t *testing.T, m *Running) string {
	return fmt.Sprintf("running %v, waiting %v", metricValue(t, m, "vllm:num_requests_running"), metricValue(t, m, "vllm:num_requests_waiting"))
}

// TestScaleUpOpensSlots: with 1 slot scaling to 3 after 300 ms, five held requests run one at a time
// until the scale and three at a time after it; the scale happens ScaleAfter after the first
// request. Catches slots that never open, open at start, or open on a clock started at New.
func TestScaleUpOpensSlots(t *testing.T) {
	const after = 300 * time.Millisecond
	m := start(t, func(c *Config) {
		c.MaxConcurrency, c.ScaleMaxConcurrency, c.ScaleAfter, c.TTFT = 1, 3, after, time.Hour
	})
	if !m.ScaleAt().IsZero() {
		t.Fatal("the scale clock started before any request")
	}
	sent := time.Now()
	holdRequests(t, m, 5)
	waitFor(t, "1 running, 4 waiting", func() bool { return slotState(t, m) == "running 1, waiting 4" })
	if now := time.Now(); now.Before(m.ScaleAt()) {
		if got := slotState(t, m); got != "running 1, waiting 4" {
			t.Fatalf("before the scale: %s", got)
		}
	}
	at := m.ScaleAt()
	if d := at.Sub(sent); d < after || d > after+time.Second {
		t.Errorf("the scale is %s after the first request was sent, want %s (+ the request's trip)", d, after)
	}
	waitFor(t, "3 running, 2 waiting after the scale", func() bool { return slotState(t, m) == "running 3, waiting 2" })
	if time.Now().Before(at) {
		t.Error("3 requests ran before the scale")
	}
}

// TestScaleDownClosesSlots: 3 slots scaling to 1 take the slots as running requests free them; new
// requests then run one at a time. Catches a scale down that drops running requests, or never closes.
func TestScaleDownClosesSlots(t *testing.T) {
	m := start(t, func(c *Config) {
		c.MaxConcurrency, c.ScaleMaxConcurrency, c.ScaleAfter, c.TTFT = 3, 1, 100*time.Millisecond, time.Hour
	})
	cancel := holdRequests(t, m, 3)
	waitFor(t, "3 running", func() bool { return slotState(t, m) == "running 3, waiting 0" })
	// The change made, not only its time passed: requests sent between the two would take the
	// slots the scale down is about to close.
	waitFor(t, "the scale", m.Scaled)
	if got := slotState(t, m); got != "running 3, waiting 0" {
		t.Fatalf("a scale down stopped running requests: %s", got)
	}
	cancel()
	waitFor(t, "the held requests gone", func() bool { return slotState(t, m) == "running 0, waiting 0" })
	holdRequests(t, m, 2)
	waitFor(t, "1 running, 1 waiting", func() bool { return slotState(t, m) == "running 1, waiting 1" })
}

// TestScaleConfigRefused: each bad combination names its flag and what is accepted.
func TestScaleConfigRefused(t *testing.T) {
	cases := []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"scale without slots", func(c *Config) { c.ScaleMaxConcurrency, c.ScaleAfter = 4, time.Second }, "--scale-max-concurrency 4 without --max-concurrency"},
		{"scale without a moment", func(c *Config) { c.MaxConcurrency, c.ScaleMaxConcurrency = 1, 4 }, "--scale-after 0s: accepted: a duration > 0"},
		{"a moment without slots to go to", func(c *Config) { c.MaxConcurrency, c.ScaleAfter = 1, time.Second }, "--scale-after 1s without --scale-max-concurrency"},
		{"negative slots", func(c *Config) { c.MaxConcurrency, c.ScaleMaxConcurrency, c.ScaleAfter = 1, -1, time.Second }, "--scale-max-concurrency -1: accepted: 0"},
		{"negative moment", func(c *Config) { c.MaxConcurrency, c.ScaleMaxConcurrency, c.ScaleAfter = 1, 2, -time.Second }, "--scale-after -1s"},
		{"too many slots", func(c *Config) { c.MaxConcurrency, c.ScaleMaxConcurrency, c.ScaleAfter = 1, 2_000_000, time.Second }, "at most 1000000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.set(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want it to say %q", err, c.want)
			}
		})
	}
}
