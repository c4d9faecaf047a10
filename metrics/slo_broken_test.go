package metrics

import "testing"

// TestSLOBroken: the limits a stage broke, each with its value and limit, and nothing for a limit
// met or unknown.
func TestSLOBroken(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	b := func(x bool) *bool { return &x }
	r := SLOResult{Verdict: SLOFail, Checks: []SLOCheck{
		{Name: "ttft_p95_ms", Limit: 500, Value: v(320), Pass: b(true)},
		{Name: "itl_p95_ms", Limit: 50, Value: v(122.4), Pass: b(false)},
		{Name: "tpot_p99_ms", Limit: 50},
		{Name: "error_rate", Limit: 0.01, Value: v(0.032), Pass: b(false)},
	}}
	if got, want := r.Broken(), "ITL p95 122 ms > 50 ms, error rate 3.2 % > 1 %"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := (SLOResult{Verdict: SLOPass}).Broken(); got != "" {
		t.Errorf("a pass broke %q", got)
	}
}
