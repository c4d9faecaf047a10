package engine

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/plload/plload/workload"
)

// Schedule is when an open-loop stage sends: the intended send offsets from the stage's origin, in
// order, all below Span. It is computed before any traffic (from the seed, or the trace's times), so
// two runs of a scenario send at the same offsets, and the records' intended_start_ns can be checked
// against it. A Schedule is a value: the dispatcher reads it and never changes it.
type Schedule struct {
	Offsets []time.Duration
	Span    time.Duration
}

// Len is the number of arrivals.
func (s Schedule) Len() int { return len(s.Offsets) }

// RequestSchedule draws a request_rate stage's arrivals over [0, span) from rng.
//
// The arrival process is first drawn at unit rate in "operational time" u: the first arrival at u = 0
// (the stage's origin, so t0 can be read back from the records), then gaps g with E[g] = 1:
//
//   - poisson: g ~ Exp(1) (CV 1);
//   - gamma: g ~ Gamma(k, 1/k) with shape k = 1/cv², so E[g] = 1 and CV[g] = cv;
//   - constant: g = 1.
//
// Real time is t = Λ⁻¹(u), where Λ(t) = ∫₀ᵗ λ(s) ds is the cumulative rate. For a constant rate λ
// that is t = u/λ: gaps of mean 1/λ with the process's CV unchanged. For a ramp λ(t) = a + (b−a)·t/T
// up to T, then b, Λ(t) = a·t + (b−a)·t²/(2T) for t ≤ T (solved for t in closed form) and
// Λ(T) + b·(t−T) after, so the expected count in any window is the integral of the ramp over it:
// the mapping is exact, not a rate changed in steps.
func RequestSchedule(rate workload.Rate, arrival string, cv float64, span time.Duration, rng *rand.Rand) Schedule {
	inv := newRateInverse(rate)
	gap := unitGaps(arrival, cv, rng)
	expected := rate.Mean(span) * span.Seconds()
	out := make([]time.Duration, 0, int(expected+4*math.Sqrt(expected+1)*max(1, cv))+1)
	for u := 0.0; ; u += gap() {
		t := inv.at(u)
		if !(t < span.Seconds()) { // also ends on +Inf
			break
		}
		out = append(out, time.Duration(t*float64(time.Second)))
	}
	return Schedule{Offsets: out, Span: span}
}

// ReplaySchedule is a replay stage's schedule: each session's first request at its trace time ×
// time_scale from the stage's origin (workload puts it in SessionPlan.At, sessions in time order).
// Sessions due at or after span are left out.
func ReplaySchedule(sessions []workload.SessionPlan, span time.Duration) Schedule {
	out := make([]time.Duration, 0, len(sessions))
	for _, sp := range sessions {
		if sp.At >= span {
			break
		}
		out = append(out, max(0, sp.At))
	}
	return Schedule{Offsets: out, Span: span}
}

// unitGaps returns a generator of inter-arrival gaps of mean 1 for the arrival process.
func unitGaps(arrival string, cv float64, rng *rand.Rand) func() float64 {
	switch arrival {
	case workload.ArrivalConstant:
		return func() float64 { return 1 }
	case workload.ArrivalGamma:
		k := 1 / (cv * cv)
		return func() float64 { return workload.GammaDraw(rng, k) / k }
	default:
		return rng.ExpFloat64
	}
}

// rateInverse is Λ⁻¹ for a constant rate or a linear ramp that then holds (see RequestSchedule).
type rateInverse struct {
	from, to float64 // requests/s
	over     float64 // ramp length, s (0: constant)
	knee     float64 // Λ(over): the arrivals expected during the ramp
}

func newRateInverse(r workload.Rate) rateInverse {
	if !r.IsRamp() {
		return rateInverse{to: r.To}
	}
	T := r.Over.D().Seconds()
	return rateInverse{from: r.From, to: r.To, over: T, knee: (r.From + r.To) / 2 * T}
}

// at is the real time, in seconds from the origin, at which the cumulative rate reaches u.
func (r rateInverse) at(u float64) float64 {
	if u <= 0 {
		return 0
	}
	if u < r.knee {
		// a·t² + b·t − u = 0 with a = (to−from)/(2T), b = from; the root written as 2u/(b + √(b²+4au))
		// stays exact when a → 0 and when b = 0.
		a, b := (r.to-r.from)/(2*r.over), r.from
		return 2 * u / (b + math.Sqrt(max(0, b*b+4*a*u)))
	}
	if r.to <= 0 {
		return math.Inf(1)
	}
	return r.over + (u-r.knee)/r.to
}
