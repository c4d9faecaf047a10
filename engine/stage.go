package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// stageTimes are the stage's boundaries (SPEC §7): t0 is the first request's issue time (for
// arrival_rate the schedule's origin), warmup ends at t0 + warmup, and issuing stops at end.
type stageTimes struct {
	once               sync.Once
	t0, warmupEnd, end time.Time
	started            chan struct{} // closed once t0 is known
	warmup, duration   time.Duration
}

func (s *stageRun) markStart(t time.Time) {
	s.times.once.Do(func() {
		s.times.t0 = t
		s.times.warmupEnd = t.Add(s.times.warmup)
		s.times.end = s.times.warmupEnd.Add(s.times.duration)
		close(s.times.started)
		if s.cfg.Live != nil {
			s.cfg.Live.Window(s.times.warmupEnd, s.times.end)
		}
	})
}

// phase is warmup for requests that started before the end of warmup.
func (s *stageRun) phase(start time.Time) string {
	if start.Before(s.times.warmupEnd) {
		return metrics.PhaseWarmup
	}
	return metrics.PhaseProfiling
}

// counters are the engine's own tallies, for the summary line and the issued == records check.
type counters struct {
	issued, ok, errors, rateLimited, cancelled, outTokens, noUsage atomic.Int64
	sessions, reused, notStarted, retried                          atomic.Int64
	next                                                           atomic.Int64 // next pool index
}

func (c *counters) fill(r *StageResult) {
	r.Issued, r.OK, r.Errors = int(c.issued.Load()), int(c.ok.Load()), int(c.errors.Load())
	r.RateLimit, r.Cancelled, r.OutTokens = int(c.rateLimited.Load()), int(c.cancelled.Load()), int(c.outTokens.Load())
	r.NoUsage, r.Sessions, r.Reused, r.NotStarted = int(c.noUsage.Load()), int(c.sessions.Load()), int(c.reused.Load()), int(c.notStarted.Load())
	r.Retried = int(c.retried.Load())
}

func (c *counters) count(ex *exchange) {
	rec := &ex.rec
	switch {
	case rec.WasCancelled:
		c.cancelled.Add(1)
	case rec.Error != nil:
		c.errors.Add(1)
		if rec.Error.Code.OK && rec.Error.Code.V == metrics.StatusTooManyRequests {
			c.rateLimited.Add(1)
		}
	default:
		c.ok.Add(1)
		c.outTokens.Add(int64(rec.OutputSequenceLength.V))
		if !ex.hasUsage {
			c.noUsage.Add(1)
		}
	}
}

// cancelReason says why in-flight requests were cancelled.
type cancelReason struct {
	interrupt context.Context // the run's context: cancelled by a signal
	drain     time.Duration
}

func (s *stageRun) cancelReason() string {
	if s.reason.interrupt.Err() != nil {
		return "cancelled: the run was interrupted (Ctrl+C, SIGTERM or SIGHUP)"
	}
	return "cancelled: still running when load.drain_timeout (" + workload.Duration(s.reason.drain).String() + ") expired after the stage's duration"
}

// drive runs the stage's sessions until its end, drains, and reports whether it was interrupted.
func (s *stageRun) drive(ctx context.Context) bool {
	sc := s.cfg.Scenario
	s.times = stageTimes{started: make(chan struct{}), warmup: s.pool.Spec.Warmup.D(), duration: s.pool.Spec.Duration.D()}
	s.reason = cancelReason{interrupt: ctx, drain: sc.Load.DrainTimeout.D()}
	reqCtx, cancelRequests := context.WithCancel(ctx)
	defer cancelRequests()
	issueCtx, stopIssuing := context.WithCancel(reqCtx)
	defer stopIssuing()

	begin := time.Now()
	if sc.Load.Mode == workload.ModeArrivalRate {
		s.markStart(begin)
	}
	go func() { // stop issuing at the end of the duration
		select {
		case <-s.times.started:
		case <-issueCtx.Done():
			return
		}
		t := time.NewTimer(time.Until(s.times.end))
		defer t.Stop()
		select {
		case <-t.C:
			stopIssuing()
		case <-issueCtx.Done():
		}
	}()

	var wg sync.WaitGroup
	if sc.Load.Mode == workload.ModeArrivalRate {
		wg.Add(1)
		go s.arrivals(issueCtx, reqCtx, &wg, begin)
	} else {
		for range s.pool.Spec.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var bo backoff
				for issueCtx.Err() == nil {
					last := s.runSession(issueCtx, reqCtx, time.Now())
					if last == nil {
						continue
					}
					if wait := bo.after(last); wait > 0 && !sleepUntil(issueCtx, time.Now().Add(wait)) {
						return
					}
				}
			}()
		}
	}
	aborted := make(chan string, 1)
	go s.abortWhenUnreachable(issueCtx, sc.Load.AbortAfter.D(), aborted, func() { stopIssuing(); cancelRequests() })
	<-issueCtx.Done()
	select {
	case s.aborted = <-aborted:
		s.abortedAt = time.Now()
	default:
	}
	if ctx.Err() != nil {
		s.interruptedAt = time.Now()
	}
	if s.cfg.Live != nil {
		s.cfg.Live.Draining()
	}
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	drain := time.NewTimer(sc.Load.DrainTimeout.D())
	defer drain.Stop()
	select {
	case <-drained:
	case <-drain.C:
		cancelRequests()
		<-drained
	case <-ctx.Done():
		s.interruptedAt = time.Now()
		<-drained
	}
	return ctx.Err() != nil
}

// abortWhenUnreachable stops the stage when every request for abortAfter got no answer at all: a
// dead target measures nothing, and more requests would only flood it. The reason goes to aborted
// before stop is called.
func (s *stageRun) abortWhenUnreachable(issueCtx context.Context, abortAfter time.Duration, aborted chan<- string, stop func()) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-issueCtx.Done():
			return
		case <-tick.C:
		}
		since, first := s.outages.unansweredSince()
		if since.IsZero() || time.Since(since) < abortAfter {
			continue
		}
		aborted <- fmt.Sprintf("target unreachable since %s: every request for load.abort_after (%s) failed before any response byte; first: %s",
			time.Unix(0, s.clock.ns(since)).UTC().Format("15:04:05.000Z"), workload.Duration(abortAfter), first)
		s.log.Error("stage stopped: the target is unreachable", "since", time.Unix(0, s.clock.ns(since)).UTC().Format(time.RFC3339Nano), "first", first)
		stop()
		return
	}
}

// watch feeds a finished request to the outage tracker and the failure tally.
func (s *stageRun) watch(rec *metrics.Record, end time.Time) {
	s.outages.observe(rec, end)
	if rec.Error != nil {
		s.failures.Add(rec)
	}
}

// arrivals starts sessions at Poisson arrival times drawn from the stage's seed, the first at the
// stage's origin (so the schedule's offsets, and t0, can be read back from the records). At most
// max_concurrency run at once; later arrivals wait for a slot (never dropped) and their start lag is
// recorded. Arrivals still waiting when the stage ends never start.
func (s *stageRun) arrivals(issueCtx, reqCtx context.Context, wg *sync.WaitGroup, origin time.Time) {
	defer wg.Done()
	rng := s.cfg.Scenario.StageRNG(s.pool.Stage)
	rate := s.pool.Spec.SessionsPerSec
	slots := make(chan struct{}, s.pool.Spec.MaxConcurrency)
	at := origin
	for first := true; ; first = false {
		if !first {
			at = at.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		}
		if !at.Before(s.times.end) || !sleepUntil(issueCtx, at) {
			return
		}
		wg.Add(1)
		go func(scheduled time.Time) {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
			case <-issueCtx.Done():
				s.neverStarted(scheduled)
				return
			}
			defer func() { <-slots }()
			s.runSession(issueCtx, reqCtx, scheduled)
		}(at)
	}
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// nextSession takes the next session of the pool, wrapping around (and saying so) when it runs dry.
func (s *stageRun) nextSession() (*workload.SessionPlan, bool) {
	n := s.counts.next.Add(1) - 1
	size := int64(len(s.pool.Sessions))
	return &s.pool.Sessions[n%size], n >= size
}

func (s *stageRun) neverStarted(scheduled time.Time) {
	sp, reused := s.nextSession()
	s.counts.notStarted.Add(1)
	s.sessions.Write(&metrics.SessionRecord{ConversationID: sp.ID, Persona: sp.Persona, ScheduledNs: s.clock.ns(scheduled),
		PlannedTurns: len(sp.Turns), Reused: reused, Outcome: metrics.SessionNeverStarted})
}
