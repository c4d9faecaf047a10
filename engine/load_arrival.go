package engine

import "time"

// arrivalLoad starts sessions at Poisson arrival times drawn from the stage's seed (arrival_rate),
// the first at the stage's origin (so the schedule's offsets, and t0, can be read back from the
// records). At most maxOpen sessions run at once; later arrivals wait for a slot (never dropped) and
// their start lag is recorded. Arrivals still waiting when the stage ends never start. The gaps are
// drawn as the stage goes (one ExpFloat64 per arrival, in order), so the schedule is the seed's;
// arrival k is the pool's session k (wrapping around), and a shard starts only the arrivals it Owns.
type arrivalLoad struct {
	rate    float64 // sessions/s
	maxOpen int
}

func (arrivalLoad) fixedOrigin() bool { return true }

func (a arrivalLoad) run(l *loadRun) {
	s := l.s
	rng := s.cfg.Scenario.StageRNG(s.pool.Stage)
	slots := make(chan struct{}, a.maxOpen)
	at := l.origin
	for k := 0; ; k++ {
		if k > 0 {
			at = at.Add(time.Duration(rng.ExpFloat64() / a.rate * float64(time.Second)))
		}
		if !at.Before(s.times.end) {
			return
		}
		if !s.cfg.Shard.Owns(k) { // another shard's arrival: its gap is drawn all the same
			continue
		}
		if !sleepUntil(l.issueCtx, at) {
			return
		}
		pick := s.poolAt(k)
		l.wg.Add(1)
		go func(scheduled time.Time) {
			defer l.wg.Done()
			select {
			case slots <- struct{}{}:
			case <-l.issueCtx.Done():
				s.neverStarted(pick, scheduled)
				return
			}
			defer func() { <-slots }()
			s.runSession(l.issueCtx, l.reqCtx, sessionStart{sessionPick: pick, scheduled: scheduled})
		}(at)
	}
}
