package engine

// requestRateLoad is open loop per request (load.mode request_rate): arrivals on a schedule drawn
// from the stage's seed (RequestSchedule: poisson, gamma or constant gaps, a constant rate or a
// ramp), arrival i the pool's session i (wrapping around). Single-turn workloads make each arrival one request;
// multi-turn sessions arrive on the schedule and their later turns follow their own timing.
type requestRateLoad struct{ schedule Schedule }

func (requestRateLoad) fixedOrigin() bool { return true }

func (r requestRateLoad) run(l *loadRun) {
	l.dispatch(r.schedule, l.s.poolAt)
}
