package engine

import (
	"context"
	"sync"
	"time"

	"github.com/plload/plload/workload"
)

// loadModel is how a stage's work is started — one per load.mode, each in its own file: when to
// start sessions (the schedule) is the model's; sending them is runSession's, the same for all.
type loadModel interface {
	// fixedOrigin reports whether the stage's t0 is the schedule's origin (the open-loop modes, whose
	// offsets are measured from it) rather than the first request's issue time.
	fixedOrigin() bool
	// run starts the stage's sessions from origin until issueCtx ends, adding every goroutine it
	// starts to wg, and returns once it starts no more.
	run(l *loadRun)
}

// loadRun is what a model runs with.
type loadRun struct {
	s        *stageRun
	issueCtx context.Context // ends when the stage stops issuing
	reqCtx   context.Context // ends when in-flight requests are cancelled
	wg       *sync.WaitGroup
	origin   time.Time
}

var (
	_ loadModel = concurrencyLoad{}
	_ loadModel = arrivalLoad{}
	_ loadModel = requestRateLoad{}
	_ loadModel = replayLoad{}
)

// newLoadModel is the stage's load model; for request_rate and replay it draws the whole run's
// schedule (and counts the arrivals this shard runs in s.scheduled).
func (s *stageRun) newLoadModel() loadModel {
	l := s.cfg.Scenario.Load
	spec := s.pool.Spec
	span := spec.Warmup.D() + spec.Duration.D()
	switch l.Mode {
	case workload.ModeArrivalRate:
		return arrivalLoad{rate: spec.SessionsPerSec, maxOpen: s.split(spec.MaxConcurrency, true)}
	case workload.ModeBatch:
		// Sessions back to back, at most max_in_flight open: requests as fast as the server
		// takes them, until the count ends the stage.
		return concurrencyLoad{sessions: s.split(max(1, l.MaxInFlight), true)}
	case workload.ModeRequestRate:
		rate := workload.ConstantRate(0)
		if spec.Rate != nil {
			rate = *spec.Rate
		}
		if spec.Duration.D() == 0 && spec.Requests > 0 {
			span = countSpan(spec, rate)
		}
		sched := RequestSchedule(rate, l.Arrival, l.CV, span, s.cfg.Scenario.StageRNG(s.pool.Stage))
		s.scheduled = owned(s.cfg.Shard, sched.Len())
		return requestRateLoad{schedule: sched}
	case workload.ModeReplay:
		sched := ReplaySchedule(s.pool.Sessions, span)
		s.scheduled = owned(s.cfg.Shard, sched.Len())
		return replayLoad{schedule: sched}
	}
	return concurrencyLoad{sessions: s.split(spec.Concurrency, false)}
}

// maxInFlight is the cap on requests in flight at once, this shard's part of it (0: none; the
// closed-loop modes bound sessions instead).
func (s *stageRun) maxInFlight() int {
	if l := s.cfg.Scenario.Load; l.Mode == workload.ModeRequestRate || l.Mode == workload.ModeReplay {
		return s.split(max(1, l.MaxInFlight), true)
	}
	return 0
}

// acquireSlot takes an in-flight slot, waiting for one (never dropping the request); false when the
// stage stopped issuing first. Always true without a cap.
func (s *stageRun) acquireSlot(ctx context.Context) bool {
	if s.slots == nil {
		return true
	}
	select {
	case s.slots <- struct{}{}:
		return true
	default:
	}
	s.counts.waited.Add(1)
	select {
	case s.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// releaseSlot gives an in-flight slot back (nothing without a cap).
func (s *stageRun) releaseSlot() {
	if s.slots != nil {
		<-s.slots
	}
}
