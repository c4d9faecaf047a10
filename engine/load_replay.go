package engine

import "github.com/plload/plload/workload"

func init() {
	registerLoadModel(workload.ModeReplay, loadModelSpec{
		build: func(s *stageRun) loadModel {
			sched := ReplaySchedule(s.pool.Sessions, s.pool.Spec.Warmup.D()+s.pool.Spec.Duration.D())
			s.scheduled = owned(s.cfg.Shard, sched.Len())
			return replayLoad{schedule: sched}
		},
		slotPerRequest: true,
		logAttrs: func(l workload.LoadPlan, _ workload.Stage) []any {
			return []any{"time_scale", l.TimeScale, "max_in_flight", l.MaxInFlight}
		},
	})
}

var _ loadModel = replayLoad{}

// replayLoad is a trace on its own clock (load.mode replay): session i of the stage's pool (workload
// puts them in time order) sends its first request at origin + SessionPlan.At (trace time ×
// time_scale), and its later turns at the trace's own gaps (Turn.AfterPrevious), right after the
// previous answer when that is still streaming. The pool is used once, in order: a replay never
// wraps around.
type replayLoad struct{ schedule Schedule }

func (replayLoad) fixedOrigin() bool { return true }

func (r replayLoad) run(l *loadRun) {
	pool := l.s.pool.Sessions
	l.dispatch(r.schedule, func(i int) sessionPick { return sessionPick{plan: &pool[i], index: i, ordinal: i} })
}
