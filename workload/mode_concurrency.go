package workload

import (
	"fmt"
	"math"
)

// ModeConcurrency keeps a fixed number of sessions open (closed loop): each stage's concurrency
// sessions start at once, and each slot starts the pool's next session as soon as its last ends.
const ModeConcurrency = "concurrency"

func init() {
	registerMode(&LoadMode{
		Name:  ModeConcurrency,
		order: 0,
		Knob: &Knob{Name: "concurrency", Unit: "sessions",
			Of:   func(st Stage) float64 { return float64(st.Concurrency) },
			With: func(st Stage, v float64) Stage { st.Concurrency = int(v); return st }},
		stageKeys:  []string{"name", "concurrency", "duration", "warmup", "sessions", "requests"},
		checkStage: concurrencyStage,
		estimate:   concurrencyEstimate,
		poolSize:   closedPool,
		describe:   func(_ LoadPlan, st Stage) string { return fmt.Sprintf("concurrency %d", st.Concurrency) },
		text:       concurrencyText,
		rises:      func(prev *Stage, st Stage) bool { return prev != nil && st.Concurrency > prev.Concurrency },
		atOnce: func(_ *Scenario, st Stage) (streams, sessions float64) {
			return float64(st.Concurrency), float64(st.Concurrency) // they all start at once
		},
		openCap: func(l LoadPlan, i int) (int, string) {
			return l.Stages[i].Concurrency, fmt.Sprintf("load.stages[%d].concurrency", i)
		},
	})
}

func concurrencyStage(c *checker, p string, st Stage) {
	if c.require(p+".concurrency", "the number of sessions kept open, ≥ 1") && st.Concurrency < 1 {
		c.errorf(p+".concurrency", "found %d; accepted: a whole number ≥ 1", st.Concurrency)
	}
}

// concurrencyEstimate: every slot runs sessions back to back over warmup + duration, each session
// its turns and the think times between them.
func concurrencyEstimate(s *Scenario, st Stage, e *Estimate) {
	turns, think, span := s.ExpectedTurns(), s.Session.ThinkTime.MeanSeconds(), (st.Warmup.D() + st.Duration.D()).Seconds()
	c := float64(st.Concurrency)
	e.SessionsNeeded = c * (1 + span/e.SessionSeconds)
	e.Requests = c * span / (e.TurnSeconds + think*(turns-1)/turns)
	e.capRequests(st)
}

// closedPool is concurrency × session_pool_factor: each slot goes through several sessions.
func closedPool(s *Scenario, st Stage) int {
	return max(1, int(math.Ceil(float64(st.Concurrency)*s.Load.SessionPoolFactor)))
}

func concurrencyText(l StageLoad) string {
	if l.Concurrency == 0 {
		return "n/a"
	}
	return fmt.Sprintf("c=%d", l.Concurrency)
}
