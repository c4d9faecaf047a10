package engine

import (
	"sync/atomic"
	"time"

	"github.com/plload/plload/workload"
)

// A stage may end by count (docs/scenario.md: `requests: N`, in any load mode; load.mode batch always):
// every request, a user turn's or a tool round's, takes one unit of the stage's budget before it
// goes, and the stage stops issuing when the last unit is taken. What is in flight then finishes;
// the window runs to the last answer.

// noTimeEnd stands for the end of a stage that has a count and no duration: far enough that no
// timer fires, near enough that time.Time arithmetic does not overflow.
const noTimeEnd = 100 * 365 * 24 * time.Hour

// requestBudget is this shard's part of the stage's requests (nil: the stage ends by time only).
func (s *stageRun) requestBudget() *atomic.Int64 {
	n := s.pool.Spec.Requests
	if n <= 0 {
		return nil
	}
	var b atomic.Int64
	b.Store(int64(s.split(n, true)))
	return &b
}

// takeRequest takes one request from the budget: false when none is left, and then the caller
// sends nothing and the stage stops issuing. (Stopping when the last unit is taken would stop the
// request that took it, still waiting for its think time or slot on the issuing context.)
func (s *stageRun) takeRequest() bool {
	if s.budget == nil {
		return true
	}
	if s.budget.Add(-1) >= 0 {
		return true
	}
	s.endedByCount.Store(true)
	s.stopIssuing()
	return false
}

// countOnlyDuration is the duration a stage runs for: its own, or without one (a count ends it)
// noTimeEnd.
func countOnlyDuration(spec workload.Stage) time.Duration {
	if spec.Duration.D() == 0 && spec.Requests > 0 {
		return noTimeEnd
	}
	return spec.Duration.D()
}

// countSpan is how long a request_rate schedule must run for a count-ended stage without a
// duration to hold its requests: twice their expected time at the stage's rate, and 10 s more.
func countSpan(spec workload.Stage, rate workload.Rate) time.Duration {
	mean := rate.To
	if rate.IsRamp() {
		mean = (rate.From + rate.To) / 2
	}
	if mean <= 0 {
		return spec.Warmup.D()
	}
	return spec.Warmup.D() + time.Duration(2*float64(spec.Requests)/mean*float64(time.Second)) + 10*time.Second
}
