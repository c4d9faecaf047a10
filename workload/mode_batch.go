package workload

import (
	"fmt"
	"math"
)

// ModeBatch sends each stage's `requests` as fast as the server takes them, with at most
// load.max_in_flight open: the nightly job, judged by its completion time.
const ModeBatch = "batch"

func init() {
	registerMode(&LoadMode{
		Name:       ModeBatch,
		order:      4,
		OpenLoop:   true,
		Job:        true,
		SingleTurn: true,
		loadKeys:   []string{"max_in_flight"},
		// A batch has no warmup: its completion time runs from its first request to its last answer.
		stageKeys: []string{"name", "requests", "duration", "sessions"},
		checkLoad: func(c *checker) { c.maxInFlight() },
		checkStage: func(c *checker, p string, _ Stage) {
			c.require(p+".requests", "the number of requests the batch sends, such as 5000 (at most load.max_in_flight open at once)")
		},
		defaults: func(s *Scenario) { s.maxInFlightDefault() },
		estimate: batchEstimate,
		poolSize: func(_ *Scenario, st Stage) int { return max(1, st.Requests) }, // a session per request
		describe: func(l LoadPlan, st Stage) string {
			return fmt.Sprintf("batch of %d requests (max %d in flight)", st.Requests, l.MaxInFlight)
		},
		text: func(l StageLoad) string { return "batch" + capText(l.MaxInFlight) },
		atOnce: func(s *Scenario, _ Stage) (streams, sessions float64) {
			return float64(s.Load.MaxInFlight), 0
		},
		openCap: func(l LoadPlan, _ int) (int, string) {
			return l.MaxInFlight, "load.max_in_flight"
		},
	})
}

// batchEstimate: the stage sends all its requests, max_in_flight at a time.
func batchEstimate(s *Scenario, st Stage, e *Estimate) {
	if st.Requests <= 0 {
		return
	}
	n := float64(st.Requests)
	e.Requests = n
	e.SessionsNeeded = math.Ceil(n / max(1, s.ExpectedTurns()))
	e.InFlight = math.Min(n, float64(max(1, s.Load.MaxInFlight)))
}

// BatchSeconds is the expected completion time of a stage that sends its requests as fast as the
// server takes them, max_in_flight at a time (on the assumed server speed).
func (s *Scenario) BatchSeconds(st Stage) float64 {
	e := s.EstimateStage(st)
	if e.InFlight <= 0 {
		return 0
	}
	return math.Ceil(e.Requests/e.InFlight) * e.TurnSeconds
}
