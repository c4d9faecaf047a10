package workload

import "time"

// Matrix is the scenario's `matrix:` block: what `plload matrix` reads to build the standard benchmark matrix
// (docs/measurement.md) from this scenario. Every key is optional; `plload run` ignores the block.
type Matrix struct {
	// MeanRate and PeakRate are the traffic's mean and peak rate, in the unit of a request_rate
	// stage's rate: requests/s, or sessions/s when sessions have several turns. Part B runs at
	// mean, peak and 1.3 × peak; part D ramps from mean to 1.3 × peak. Without them plload matrix
	// reads the rates from the comments `plload fit` writes.
	MeanRate float64 `yaml:"mean_rate,omitempty"`
	PeakRate float64 `yaml:"peak_rate,omitempty"`
	// MaxConcurrency is the top of part A's closed-loop ladder (1, 2, 4, … doubling up to it);
	// 0: the scenario's largest concurrency.
	MaxConcurrency int `yaml:"max_concurrency,omitempty"`
	// Ramp and Hold shape part D: the rate rises from mean to 1.3 × peak over Ramp, then holds for
	// Hold; 0: DefaultMatrixRamp and DefaultMatrixHold.
	Ramp Duration `yaml:"ramp,omitempty"`
	Hold Duration `yaml:"hold,omitempty"`
}

// Part D's ramp and hold when the scenario does not set them: a morning ramp.
const (
	DefaultMatrixRamp = 2 * time.Minute
	DefaultMatrixHold = 3 * time.Minute
)

// RampOrDefault is matrix.ramp, or DefaultMatrixRamp when it is not set (m may be nil).
func (m *Matrix) RampOrDefault() time.Duration {
	if m == nil || m.Ramp <= 0 {
		return DefaultMatrixRamp
	}
	return m.Ramp.D()
}

// HoldOrDefault is matrix.hold, or DefaultMatrixHold when it is not set (m may be nil).
func (m *Matrix) HoldOrDefault() time.Duration {
	if m == nil || m.Hold <= 0 {
		return DefaultMatrixHold
	}
	return m.Hold.D()
}

// matrixRules checks the matrix: block; each message names the key and what is accepted.
func (c *checker) matrixRules() {
	m := c.s.Matrix
	if m == nil {
		return
	}
	const unit = "requests/s (sessions/s when sessions have several turns), as a request_rate stage's rate"
	for _, k := range []struct {
		key string
		v   float64
	}{{"mean_rate", m.MeanRate}, {"peak_rate", m.PeakRate}} {
		if c.s.has("matrix."+k.key) && !(k.v > 0) {
			c.errorf("matrix."+k.key, "found %g; accepted: a rate > 0 in %s", k.v, unit)
		}
	}
	switch {
	case c.s.has("matrix.mean_rate") && !c.s.has("matrix.peak_rate"):
		c.errorf("matrix.mean_rate", "set without matrix.peak_rate; accepted: both, such as matrix: {mean_rate: 4, peak_rate: 10}, in %s", unit)
	case c.s.has("matrix.peak_rate") && !c.s.has("matrix.mean_rate"):
		c.errorf("matrix.peak_rate", "set without matrix.mean_rate; accepted: both, such as matrix: {mean_rate: 4, peak_rate: 10}, in %s", unit)
	case m.MeanRate > 0 && m.PeakRate > 0 && m.PeakRate < m.MeanRate:
		c.errorf("matrix.peak_rate", "found %g, below matrix.mean_rate %g; accepted: a peak ≥ the mean", m.PeakRate, m.MeanRate)
	}
	if c.s.has("matrix.max_concurrency") && m.MaxConcurrency < 1 {
		c.errorf("matrix.max_concurrency", "found %d; accepted: the top of part A's concurrency ladder, a whole number ≥ 1", m.MaxConcurrency)
	}
	c.positive("matrix.ramp", m.Ramp)
	c.positive("matrix.hold", m.Hold)
}

// FlatPeakRatio is the peak-to-mean ratio under which traffic has no peak of its own: a peak less
// than 10 % above the mean. A minute of Poisson arrivals at the mean rate already varies by
// ±1/√(60·rate) (±6 % at 5 req/s), and a stage at a rate within 10 % of another loads the server the
// same way within what a stage's own arrivals vary: a peak stage there repeats the mean one and
// costs its minutes. plload fit writes no peak stage then, and plload matrix runs none.
const FlatPeakRatio = 1.1

// FlatPeak reports whether peak is within FlatPeakRatio of mean.
func FlatPeak(mean, peak float64) bool { return peak < FlatPeakRatio*mean }
