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

// stageTimes are the stage's boundaries (docs/measurement.md): t0 is the first request's issue time (for
// the open-loop modes, arrival_rate, request_rate and replay, the schedule's origin), warmup ends at t0 + warmup, and issuing stops at end.
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
			end := s.times.end
			if s.times.duration == noTimeEnd {
				end = time.Time{} // a count ends the stage: no planned time to show
			}
			s.cfg.Live.Window(s.times.warmupEnd, end)
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
	retriedAfterWrite                                              atomic.Int64 // of retried, those written in full before the close
	waited                                                         atomic.Int64 // requests that waited for an in-flight slot
	next                                                           atomic.Int64 // next pool index
}

func (c *counters) fill(r *StageResult) {
	r.Issued, r.OK, r.Errors = int(c.issued.Load()), int(c.ok.Load()), int(c.errors.Load())
	r.RateLimit, r.Cancelled, r.OutTokens = int(c.rateLimited.Load()), int(c.cancelled.Load()), int(c.outTokens.Load())
	r.NoUsage, r.Sessions, r.Reused, r.NotStarted = int(c.noUsage.Load()), int(c.sessions.Load()), int(c.reused.Load()), int(c.notStarted.Load())
	r.Retried, r.WaitedForSlot = int(c.retried.Load()), int(c.waited.Load())
	r.RetriedAfterClose = int(c.retriedAfterWrite.Load())
}

func (c *counters) count(ex *exchange) {
	rec := &ex.rec
	if ex.retriedAfterWrite {
		c.retriedAfterWrite.Add(1)
	}
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
		return metrics.CancelledByInterrupt
	}
	return "cancelled: still running when load.drain_timeout (" + workload.Duration(s.reason.drain).String() + ") expired after the stage's duration"
}

// drive runs the stage's sessions until its end, drains, and reports whether it was interrupted.
// origin is the start barrier's instant (zero: none, the stage starts now); with one, every mode's
// t0 is the origin, so every shard's warmup end and end are the same instants.
func (s *stageRun) drive(ctx context.Context, origin time.Time) bool {
	sc := s.cfg.Scenario
	s.times = stageTimes{started: make(chan struct{}), warmup: s.pool.Spec.Warmup.D(), duration: countOnlyDuration(s.pool.Spec)}
	s.budget = s.requestBudget()
	s.reason = cancelReason{interrupt: ctx, drain: sc.Load.DrainTimeout.D()}
	reqCtx, cancelRequests := context.WithCancel(ctx)
	defer cancelRequests()
	issueCtx, stopIssuing := context.WithCancel(reqCtx)
	defer stopIssuing()
	s.stopIssuing = stopIssuing

	model := s.newLoadModel() // an open loop's schedule is drawn before the origin, not on its time
	if n := s.maxInFlight(); n > 0 {
		s.slots = make(chan struct{}, n)
	}
	begin := time.Now()
	if !origin.IsZero() {
		begin = origin
	}
	if model.fixedOrigin() || !origin.IsZero() {
		s.markStart(begin)
	}
	go s.stopAtEnd(issueCtx, stopIssuing)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		model.run(&loadRun{s: s, issueCtx: issueCtx, reqCtx: reqCtx, wg: &wg, origin: begin})
	}()
	aborted := make(chan string, 1)
	go s.abortWhenUnreachable(issueCtx, sc.Load.AbortAfter.D(), aborted, func() { stopIssuing(); cancelRequests() })
	writeFailed := make(chan time.Time, 1)
	go s.stopOnWriteError(issueCtx, writeFailed, func() { stopIssuing(); cancelRequests() })
	<-issueCtx.Done()
	select {
	case s.aborted = <-aborted:
		s.abortedAt = time.Now()
	default:
	}
	select {
	case s.writeFailedAt = <-writeFailed:
	default:
	}
	if ctx.Err() != nil {
		s.interruptedAt = time.Now()
	}
	if s.cfg.Live != nil {
		s.cfg.Live.Draining()
	}
	s.drain(ctx, &wg, cancelRequests)
	return ctx.Err() != nil
}

// stopAtEnd stops issuing at the end of the duration (once t0 is known).
func (s *stageRun) stopAtEnd(issueCtx context.Context, stopIssuing func()) {
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
}

// drain waits for the sessions in wg to finish, for at most load.drain_timeout; then it cancels the
// requests still in flight and waits for their records.
func (s *stageRun) drain(ctx context.Context, wg *sync.WaitGroup, cancelRequests func()) {
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	drain := time.NewTimer(s.cfg.Scenario.Load.DrainTimeout.D())
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
}

// stopOnWriteError stops the stage at once when a records file refuses a write (a full disk, a file
// size limit): every request sent after it would load the target and be measured for nothing. The
// instant goes to failed before stop is called.
func (s *stageRun) stopOnWriteError(issueCtx context.Context, failed chan<- time.Time, stop func()) {
	select {
	case <-s.records.Failed():
	case <-s.sessions.Failed():
	case <-issueCtx.Done():
		return
	}
	failed <- time.Now()
	stop()
}

// abortWhenUnreachable stops the stage when every request for abortAfter got no answer at all: a
// dead target measures nothing, and more requests would only flood it. The reason goes to aborted
// before stop is called. It sleeps until a silence begins and then until it would reach abortAfter,
// never on a tick.
func (s *stageRun) abortWhenUnreachable(issueCtx context.Context, abortAfter time.Duration, aborted chan<- string, stop func()) {
	started := s.outages.silenceStarts()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		wake := started // nothing unanswered: sleep until a silence begins
		since, first := s.outages.unansweredSince()
		if !since.IsZero() {
			left := abortAfter - time.Since(since)
			if left <= 0 {
				aborted <- fmt.Sprintf("target unreachable since %s: every request for load.abort_after (%s) failed before any response byte; first: %s",
					time.Unix(0, s.clock.ns(since)).UTC().Format("15:04:05.000Z"), workload.Duration(abortAfter), first)
				s.log.Error("stage stopped: the target is unreachable", "since", time.Unix(0, s.clock.ns(since)).UTC().Format(time.RFC3339Nano), "first", first)
				stop()
				return
			}
			timer.Reset(left) // then look again: an answer meanwhile ends this silence
			wake = nil
		}
		select {
		case <-issueCtx.Done():
			return
		case <-wake:
		case <-timer.C:
		}
	}
}

// watch feeds a finished request to the outage tracker and the failure tally.
func (s *stageRun) watch(rec *metrics.Record, end time.Time) {
	s.outages.observe(rec, end)
	if rec.Error != nil {
		s.failures.Add(rec)
	}
	if stop := s.cfg.StopWhen; stop != nil {
		if why := stop(s.pool.Stage, rec); why != "" {
			s.stopOnce.Do(func() {
				s.stopped, s.stoppedAt = why, time.Now()
				s.log.Info("stage stopped early", "reason", why)
				s.stopIssuing()
			})
		}
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

// neverStarted records a session whose arrival was due but that never started: every slot stayed
// taken until the stage stopped issuing.
func (s *stageRun) neverStarted(p sessionPick, scheduled time.Time) {
	s.counts.notStarted.Add(1)
	sr := p.sessionRecord(s.clock.ns(scheduled))
	sr.Outcome = metrics.SessionNeverStarted
	s.sessions.Write(sr)
}
