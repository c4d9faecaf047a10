package selftest

import (
	"context"
	"testing"
	"time"

	"github.com/plload/plload/timingtier"
)

// TestSelfTestOverHTTP2: the ladder runs over h2c and over TLS (auto, so HTTP/2 by ALPN) against the
// in-process mock, measures the known delay from the mock's send stamps as over HTTP/1.1, and its
// four streams share one connection. Whether this machine meets the default ±1 ms bound on each
// protocol is the timing tier's claim.
func TestSelfTestOverHTTP2(t *testing.T) {
	for _, tc := range []struct {
		name, http, wantProto string
		tls                   bool
		wantConns             int
	}{
		{"HTTP/1.1", "1.1", "HTTP/1.1", false, 4},
		{"h2c", "2", "HTTP/2.0", false, 1},
		{"TLS auto", "auto", "HTTP/2.0", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Ladder: []int{4}, TTFT: 30 * time.Millisecond, ITL: 10 * time.Millisecond, Tokens: 10,
				Warmup: 200 * time.Millisecond, Duration: time.Second, Bound: time.Second, InProcess: true, HTTP: tc.http, TLS: tc.tls}
			steps, err := Run(context.Background(), cfg)
			if err != nil || len(steps) != 1 {
				t.Fatalf("%v %+v", err, steps)
			}
			s := steps[0]
			if !s.Pass || s.Errors != 0 || s.ClientDelay == nil || s.ClientDelay.N == 0 || s.Protocol != tc.wantProto {
				t.Fatalf("step %+v", s)
			}
			if s.Connections < tc.wantConns || tc.wantProto == "HTTP/2.0" && s.Connections != 1 {
				t.Fatalf("%d connections carried 4 streams over %s", s.Connections, s.Protocol)
			}
			// Generous: the right quantities are measured, not this machine's speed.
			if s.TTFT.P50Ms < 30 || s.TTFT.P50Ms > 60 || s.Gap.P50Ms < 8 || s.Gap.P50Ms > 15 {
				t.Fatalf("measured TTFT p50 %.3f ms, gap p50 %.3f ms for a 30 ms / 10 ms schedule", s.TTFT.P50Ms, s.Gap.P50Ms)
			}
			t.Log(StepLine(s))
			if timingtier.Judge(t, tc.name+": client delay p99 within the default ±1 ms bound") && s.ClientDelay.AbsErrP99Ms > 1 && len(s.Strain) == 0 {
				t.Errorf("%s: client delay p99 %.3f ms > 1 ms on a calm client", tc.name, s.ClientDelay.AbsErrP99Ms)
			}
		})
	}
}
