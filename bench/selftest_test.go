package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSelfTestInProcess climbs a tiny ladder against the in-process mock: it must measure the known
// delay (TTFT ≈ 30 ms, gaps ≈ 10 ms) and report the client's own delay from the mock's send times.
func TestSelfTestInProcess(t *testing.T) {
	cfg := Config{Ladder: []int{1, 4}, TTFT: 30 * time.Millisecond, ITL: 10 * time.Millisecond, Tokens: 10,
		Warmup: 200 * time.Millisecond, Duration: time.Second, Bound: time.Second, InProcess: true}
	steps, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 {
		t.Fatalf("%d steps", len(steps))
	}
	for _, s := range steps {
		if !s.Pass || s.Errors != 0 || s.ClientDelay == nil || s.ClientDelay.N == 0 || s.MockLateness == nil {
			t.Fatalf("step %+v", s)
		}
		// Generous bounds: this checks that the right quantities are measured, not this machine's speed.
		if s.TTFT.P50Ms < 30 || s.TTFT.P50Ms > 60 || s.Gap.P50Ms < 8 || s.Gap.P50Ms > 15 {
			t.Fatalf("measured TTFT p50 %.3f ms, gap p50 %.3f ms for a 30 ms / 10 ms schedule", s.TTFT.P50Ms, s.Gap.P50Ms)
		}
		if s.ClientDelay.P50Ms < 0 || s.ClientDelay.P50Ms > 50 {
			t.Fatalf("client delay p50 %.3f ms", s.ClientDelay.P50Ms)
		}
	}
	if c := Conclusion(steps, cfg.Bound); !strings.Contains(c, "up to 4 concurrent streams") {
		t.Fatalf("conclusion %q", c)
	}
	// A bound no machine meets fails every step, and the conclusion says so.
	cfg.Ladder, cfg.Bound = []int{1}, time.Nanosecond
	steps, err = Run(context.Background(), cfg)
	if err != nil || steps[0].Pass || !strings.Contains(Conclusion(steps, cfg.Bound), "does not measure within ±1ns") {
		t.Fatalf("%v %+v", err, steps)
	}
}
