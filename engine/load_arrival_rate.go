package engine

import (
	"math/rand/v2"
	"time"

	"github.com/plload/plload/workload"
)

func init() {
	registerLoadModel(workload.ModeArrivalRate, loadModelSpec{
		build: func(s *stageRun) loadModel {
			spec := s.pool.Spec
			return arrivalLoad{rate: spec.SessionsPerSec, maxOpen: s.split(spec.MaxConcurrency, true)}
		},
		logAttrs: func(_ workload.LoadPlan, st workload.Stage) []any {
			return []any{"sessions_per_sec", st.SessionsPerSec, "max_concurrency", st.MaxConcurrency}
		},
	})
}

var _ loadModel = arrivalLoad{}

// arrivalLoad starts sessions at Poisson arrival times drawn from the stage's seed (arrival_rate),
// the first at the stage's origin (so the schedule's offsets, and t0, can be read back from the
// records). At most maxOpen sessions run at once; later arrivals wait for a slot (never dropped) and
// their start lag is recorded. Arrivals still waiting when the stage ends never start. The gaps are
// drawn as the stage goes (one ExpFloat64 per arrival, in order), so the schedule is the seed's;
// arrival k is the pool's session k (wrapping around), and a shard starts only the arrivals it Owns.
//
// The dispatcher itself waits for the slot, and the arrivals due behind it wait in the schedule, in
// order: a backlog costs no memory. (A goroutine per waiting arrival grew without bound when sessions
// outlive the stage: 1,000/s past max_concurrency for 10 minutes was 600,000 parked goroutines.)
type arrivalLoad struct {
	rate    float64 // sessions/s
	maxOpen int
}

func (arrivalLoad) fixedOrigin() bool { return true }

func (a arrivalLoad) run(l *loadRun) {
	s := l.s
	slots := make(chan struct{}, a.maxOpen)
	arr := poissonArrivals{rng: s.cfg.Scenario.StageRNG(s.pool.Stage), rate: a.rate, at: l.origin, end: s.times.end}
	for due := arr.at.Before(arr.end); due; due = arr.advance() {
		if !s.cfg.Shard.Owns(arr.k) { // another shard's arrival: its gap is drawn all the same
			continue
		}
		if !sleepUntil(l.issueCtx, arr.at) {
			return
		}
		if !takeSlot(l, slots) {
			// This arrival and every one due behind it by now never started.
			for now := time.Now(); due && !arr.at.After(now); due = arr.advance() {
				if s.cfg.Shard.Owns(arr.k) {
					s.neverStarted(s.poolAt(arr.k), arr.at)
				}
			}
			return
		}
		pick := s.poolAt(arr.k)
		l.wg.Add(1)
		go func(scheduled time.Time) {
			defer l.wg.Done()
			defer func() { <-slots }()
			s.runSession(l.issueCtx, l.reqCtx, sessionStart{sessionPick: pick, scheduled: scheduled})
		}(arr.at)
	}
}

// poissonArrivals walks a stage's arrivals: arrival k at time at, the gaps drawn in order from rng.
type poissonArrivals struct {
	rng     *rand.Rand
	rate    float64 // per second
	at, end time.Time
	k       int
}

// advance moves to the next arrival; false when it falls at or past the stage's end.
func (p *poissonArrivals) advance() bool {
	p.k++
	p.at = p.at.Add(time.Duration(p.rng.ExpFloat64() / p.rate * float64(time.Second)))
	return p.at.Before(p.end)
}

// takeSlot waits for one of the open-session slots; false when the stage stopped issuing first.
func takeSlot(l *loadRun, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	case <-l.issueCtx.Done():
		return false
	}
}
