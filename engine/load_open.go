package engine

import (
	"context"
	"runtime"
	"time"
)

// dispatch sends an open-loop schedule (request_rate, replay): arrival i is due at origin +
// Offsets[i], on absolute deadlines from the one origin, so a late wake-up never pushes the later
// arrivals back (no drift). Every arrival already due is issued at once, one after another; only then
// does the dispatcher sleep, on one reused timer, to the next deadline. Nothing is ever sent before
// its time. Each arrival takes an in-flight slot first (load.max_in_flight caps requests): when
// every slot is taken the dispatcher waits — the arrival is never dropped, and keeps its intended
// time, so its wait shows as send lag (credit_issued_ns − intended_start_ns) — and the arrivals due
// behind it queue in order. The session then runs in its own goroutine: its first request at once,
// its later turns on their own timing. Arrivals still waiting when the stage stops issuing never
// start (sessions.jsonl says so, and StageResult.NotStarted counts them). A shard dispatches only
// the arrivals it Owns, at their offsets in the whole run's schedule.
func (l *loadRun) dispatch(sched Schedule, pick func(i int) sessionPick) {
	s := l.s
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	i := 0
	defer func() { l.neverStarted(sched, i, pick) }()
	for ; i < sched.Len(); i++ {
		if !s.cfg.Shard.Owns(i) { // another shard's arrival
			continue
		}
		at := l.origin.Add(sched.Offsets[i])
		if !l.waitUntil(timer, at) || !s.acquireSlot(l.issueCtx) {
			return
		}
		p := pick(i)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			s.runSession(l.issueCtx, l.reqCtx, sessionStart{sessionPick: p, scheduled: at, slotHeld: true})
		}()
	}
}

// waitUntil sleeps on timer until at (at once when it is due already); false when the stage stopped
// issuing first.
func (l *loadRun) waitUntil(timer *time.Timer, at time.Time) bool {
	return waitPrecisely(l.issueCtx, timer, at)
}

// waitPrecisely sleeps on timer until at (at once when it is due already), waking spinWindow early
// from a long sleep to yield in a loop to the deadline; false when ctx ended first. It checks the
// clock again on waking, so an early timer could not send early either.
func waitPrecisely(ctx context.Context, timer *time.Timer, at time.Time) bool {
	spin := false // woken early from a long sleep: yield in a loop to the deadline
	for {
		if ctx.Err() != nil {
			return false
		}
		d := time.Until(at)
		if d <= 0 {
			return true
		}
		if spin {
			runtime.Gosched()
			continue
		}
		if d > 2*spinWindow {
			d, spin = d-spinWindow, true
		}
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		}
	}
}

// spinWindow is how early the dispatcher wakes from a sleep longer than twice this, to yield in a
// loop until the deadline: Go's timers wake up to a millisecond late here (the network poller waits
// in whole milliseconds on Linux), which alone would be the send lag of every arrival after a pause.
// Short sleeps (dense arrivals) use the timer alone, so the spinning costs at most one window per
// long sleep.
const spinWindow = time.Millisecond

// neverStarted records the arrivals from i on that were due when the stage stopped issuing but never
// got to start (every slot was taken); those not yet due (the stage was stopped early) were never
// part of it.
func (l *loadRun) neverStarted(sched Schedule, i int, pick func(int) sessionPick) {
	now := time.Now()
	for ; i < sched.Len(); i++ {
		at := l.origin.Add(sched.Offsets[i])
		if at.After(now) {
			return
		}
		if !l.s.cfg.Shard.Owns(i) {
			continue
		}
		l.s.neverStarted(pick(i), at)
	}
}
