package engine

import (
	"context"
	"runtime"
	"sync"
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
	if !l.s.cfg.NoPrepareAhead {
		l.dispatchPrepared(sched, pick)
		return
	}
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

// prepareLead is how long before its intended send time an open-loop arrival's session starts: it
// builds its first request (the whole body: a trace's long prompt is hundreds of kilobytes of JSON),
// then waits for its time. A burst — a trace's 16 requests of up to 87k tokens in one millisecond —
// then costs each request only its slot and its write when it is due, not the bodies of the
// requests before it (bench/README.md, "Open loop": send lag p99 41 ms on an idle 2-core machine, built when due).
const prepareLead = 100 * time.Millisecond

// maxPrepared bounds the arrivals prepared and not yet sent (waiting for their time, or for an
// in-flight slot), so memory holds a short horizon of bodies however long the slots stay full.
const maxPrepared = 64

// preparedStart is an arrival whose session started ahead of its time: due is closed when the
// arrival is due (by the dispatcher, which alone waits precisely, so a thousand prepared arrivals do
// not each spin for their deadline); release gives its place among the prepared back (once);
// tokenLate is how long past its due time the dispatcher waited for that place — a wait for the
// in-flight slots that the arrivals ahead of it held.
type preparedStart struct {
	due       chan struct{}
	release   func()
	tokenLate time.Duration
}

// dispatchPrepared is dispatch with each arrival prepared ahead: its session starts prepareLead
// before the arrival is due (at most maxPrepared at once), builds the request, and when the
// dispatcher says it is due takes its in-flight slot and sends. The order of arrivals, their
// absolute deadlines and the never-early rule are dispatch's; a prepared arrival still waiting for
// its slot when the stage stops issuing never started, as one the dispatcher held back.
func (l *loadRun) dispatchPrepared(sched Schedule, pick func(i int) sessionPick) {
	s := l.s
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	places := make(chan struct{}, maxPrepared)
	var waiting []*preparedStart // started, not yet due, in time order
	var dueAt []time.Time
	i := 0
	defer func() { l.neverStarted(sched, i, pick) }()
	// signal closes the first waiting arrival's due.
	signal := func() {
		close(waiting[0].due)
		waiting, dueAt = waiting[1:], dueAt[1:]
	}
	for {
		for i < sched.Len() && !s.cfg.Shard.Owns(i) { // another shard's arrival
			i++
		}
		more := i < sched.Len()
		var at time.Time
		if more {
			at = l.origin.Add(sched.Offsets[i])
		}
		if len(waiting) > 0 && (!more || !dueAt[0].After(at.Add(-prepareLead))) {
			if !l.waitUntil(timer, dueAt[0]) {
				return
			}
			signal()
			continue
		}
		if !more {
			return
		}
		if !l.waitUntil(timer, at.Add(-prepareLead)) {
			return
		}
		asked := time.Now()
		for placed := false; !placed; {
			select {
			case places <- struct{}{}:
				placed = true
				continue
			default:
			}
			var due <-chan time.Time // the next waiting arrival's time: it is signalled while this one waits
			if len(waiting) > 0 {
				timer.Reset(time.Until(dueAt[0]))
				due = timer.C
			}
			select {
			case places <- struct{}{}:
				placed = true
			case <-due:
				signal()
			case <-l.issueCtx.Done():
				return
			}
			timer.Stop()
		}
		var tokenLate time.Duration
		if got := time.Now(); got.After(at) {
			tokenLate = got.Sub(maxTime(at, asked))
		}
		p := pick(i)
		var once sync.Once
		ps := &preparedStart{due: make(chan struct{}), release: func() { once.Do(func() { <-places }) }, tokenLate: tokenLate}
		waiting, dueAt = append(waiting, ps), append(dueAt, at)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer ps.release()
			s.runSession(l.issueCtx, l.reqCtx, sessionStart{sessionPick: p, scheduled: at, prepared: ps})
		}()
		i++
	}
}

// maxTime is the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
