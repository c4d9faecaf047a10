package workload

import (
	"fmt"
	"time"
)

// Rate is a request_rate stage's rate in requests/s: a constant (`rate: 20`, From == To, Over 0) or
// a linear ramp (`rate: {from: 10, to: 50, over: 2m}`) that runs From → To over Over and then holds
// To until the stage's duration ends.
type Rate struct {
	From float64  `yaml:"from"`
	To   float64  `yaml:"to"`
	Over Duration `yaml:"over"`
}

// ConstantRate is a rate that does not change.
func ConstantRate(r float64) Rate { return Rate{From: r, To: r} }

// IsRamp reports whether the rate changes over the stage.
func (r Rate) IsRamp() bool { return r.Over > 0 && r.From != r.To }

// At is the intended rate t after the stage's origin (warmup included).
func (r Rate) At(t time.Duration) float64 {
	if !r.IsRamp() || t >= r.Over.D() {
		return r.To
	}
	if t <= 0 {
		return r.From
	}
	return r.From + (r.To-r.From)*float64(t)/float64(r.Over.D())
}

// Mean is the mean rate over a window of length d from the origin (the ramp, then the hold).
func (r Rate) Mean(d time.Duration) float64 {
	if d <= 0 || !r.IsRamp() {
		return r.To
	}
	over := min(d, r.Over.D())
	ramped := (r.From + r.At(over)) / 2 * over.Seconds()
	held := r.To * (d - over).Seconds()
	return (ramped + held) / d.Seconds()
}

// String prints the rate as a scenario writes it.
func (r Rate) String() string {
	if !r.IsRamp() {
		return fmt.Sprintf("%g req/s", r.To)
	}
	return fmt.Sprintf("%g→%g req/s over %s", r.From, r.To, r.Over)
}

// MarshalYAML writes a number for a constant rate, else the ramp mapping.
func (r Rate) MarshalYAML() (any, error) {
	if !r.IsRamp() {
		return r.To, nil
	}
	return map[string]any{"from": r.From, "to": r.To, "over": r.Over.String()}, nil
}
