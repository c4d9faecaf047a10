package engine

import "github.com/plload/plload/workload"

func init() {
	registerLoadModel(workload.ModeRequestRate, loadModelSpec{
		build:          newRequestRateLoad,
		slotPerRequest: true,
		logAttrs: func(l workload.LoadPlan, st workload.Stage) []any {
			rate := ""
			if st.Rate != nil {
				rate = st.Rate.String()
			}
			return []any{"rate", rate, "arrival", l.Arrival, "max_in_flight", l.MaxInFlight}
		},
	})
}

var _ loadModel = requestRateLoad{}

// requestRateLoad is open loop per request (load.mode request_rate): arrivals on a schedule drawn
// from the stage's seed (RequestSchedule: poisson, gamma or constant gaps, a constant rate or a
// ramp), arrival i the pool's session i (wrapping around). Single-turn workloads make each arrival one request;
// multi-turn sessions arrive on the schedule and their later turns follow their own timing.
type requestRateLoad struct{ schedule Schedule }

func (requestRateLoad) fixedOrigin() bool { return true }

func (r requestRateLoad) run(l *loadRun) {
	l.dispatch(r.schedule, l.s.poolAt)
}

// newRequestRateLoad draws the whole run's schedule for the stage: the stage's span, or for a stage
// that ends by count alone the time its count takes at the rate (countSpan).
func newRequestRateLoad(s *stageRun) loadModel {
	l, spec := s.cfg.Scenario.Load, s.pool.Spec
	span := spec.Warmup.D() + spec.Duration.D()
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
}
