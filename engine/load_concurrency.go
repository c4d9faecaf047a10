package engine

import (
	"time"

	"github.com/plload/plload/workload"
)

func init() {
	registerLoadModel(workload.ModeConcurrency, loadModelSpec{
		build: func(s *stageRun) loadModel {
			return concurrencyLoad{sessions: s.split(s.pool.Spec.Concurrency, false)}
		},
		logAttrs: func(_ workload.LoadPlan, st workload.Stage) []any { return []any{"concurrency", st.Concurrency} },
	})
}

var _ loadModel = concurrencyLoad{}

// concurrencyLoad keeps a fixed number of sessions open (closed loop at the session level): each slot
// starts the pool's next session as soon as its last one ends, after a backoff when the server
// pushed back (429, 5xx, no answer).
type concurrencyLoad struct{ sessions int }

func (concurrencyLoad) fixedOrigin() bool { return false }

func (c concurrencyLoad) run(l *loadRun) {
	s := l.s
	for range c.sessions {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			var bo backoff
			for l.issueCtx.Err() == nil {
				last := s.runSession(l.issueCtx, l.reqCtx, sessionStart{sessionPick: s.nextSession(), scheduled: time.Now()})
				if last == nil {
					continue
				}
				if wait := bo.after(last); wait > 0 && !sleepUntil(l.issueCtx, time.Now().Add(wait)) {
					return
				}
			}
		}()
	}
}
