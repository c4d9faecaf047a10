package workload

import (
	"fmt"
	"math"
)

// ModeArrivalRate starts sessions at Poisson arrival times, sessions_per_sec on average, at most
// max_concurrency of them open at once: later arrivals wait for a slot, their start lag recorded.
const ModeArrivalRate = "arrival_rate"

func init() {
	registerMode(&LoadMode{
		Name:         ModeArrivalRate,
		order:        1,
		OpenLoop:     true,
		Scheduled:    true,
		SessionSlots: true,
		Knob: &Knob{Name: "rate", Unit: "sessions/s",
			Of:   func(st Stage) float64 { return st.SessionsPerSec },
			With: func(st Stage, v float64) Stage { st.SessionsPerSec = v; return st }},
		stageKeys:  []string{"name", "sessions_per_sec", "max_concurrency", "duration", "warmup", "sessions", "requests"},
		checkStage: arrivalRateStage,
		estimate:   arrivalRateEstimate,
		poolSize: func(_ *Scenario, st Stage) int {
			return arrivalPool(st.SessionsPerSec*(st.Warmup.D()+st.Duration.D()).Seconds(), 1, st)
		},
		describe: func(_ LoadPlan, st Stage) string {
			return fmt.Sprintf("%g sessions/s (max %d open)", st.SessionsPerSec, st.MaxConcurrency)
		},
		text: func(l StageLoad) string {
			if l.SessionsPerSec <= 0 {
				return "n/a"
			}
			return fmt.Sprintf("%s sess/s%s", oneDecimal(l.SessionsPerSec), capText(l.MaxConcurrency))
		},
		rises:  func(prev *Stage, st Stage) bool { return prev != nil && st.SessionsPerSec > prev.SessionsPerSec },
		atOnce: arrivalRateAtOnce,
		openCap: func(l LoadPlan, i int) (int, string) {
			return l.Stages[i].MaxConcurrency, fmt.Sprintf("load.stages[%d].max_concurrency", i)
		},
	})
}

func arrivalRateStage(c *checker, p string, st Stage) {
	if c.require(p+".sessions_per_sec", "the mean session arrival rate, > 0") && st.SessionsPerSec <= 0 {
		c.errorf(p+".sessions_per_sec", "found %g; accepted: a rate > 0", st.SessionsPerSec)
	}
	if c.require(p+".max_concurrency", "the most sessions open at once, ≥ 1") && st.MaxConcurrency < 1 {
		c.errorf(p+".max_concurrency", "found %d; accepted: a whole number ≥ 1", st.MaxConcurrency)
	}
}

// arrivalRateEstimate: Poisson arrivals (mean + 3σ sessions), and Little's law for the sessions
// open at once, capped at max_concurrency; a session holds a request only while its turn streams.
func arrivalRateEstimate(s *Scenario, st Stage, e *Estimate) {
	turns, think, span := s.ExpectedTurns(), s.Session.ThinkTime.MeanSeconds(), (st.Warmup.D() + st.Duration.D()).Seconds()
	arrivals := st.SessionsPerSec * span
	e.SessionsNeeded = arrivals + 3*math.Sqrt(arrivals) // Poisson: mean + 3σ
	// Little's law caps the sessions open at once at max_concurrency.
	open := math.Min(st.SessionsPerSec*e.SessionSeconds, float64(st.MaxConcurrency))
	e.Requests = open * span / (e.TurnSeconds + think*(turns-1)/turns)
	e.InFlight = math.Min(e.Requests/max(span, 1e-9)*e.TurnSeconds, open)
	e.capRequests(st)
	e.capSessions(s, st)
}

// arrivalRateAtOnce: the expected requests in flight (a session that thinks between turns streams
// nothing), and the open sessions (Little's law, capped by max_concurrency).
func arrivalRateAtOnce(s *Scenario, st Stage) (streams, sessions float64) {
	e := s.EstimateStage(st)
	n := st.SessionsPerSec * e.SessionSeconds
	if st.MaxConcurrency > 0 {
		n = math.Min(n, float64(st.MaxConcurrency))
	}
	return e.InFlight, n
}
