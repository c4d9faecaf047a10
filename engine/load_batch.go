package engine

import "github.com/plload/plload/workload"

// A batch (load.mode batch) runs sessions back to back, at most max_in_flight open: requests as
// fast as the server takes them, until the stage's count ends it. Its model is concurrencyLoad with
// max_in_flight slots (this shard's part of them); the count is the request budget's (budget.go).
func init() {
	registerLoadModel(workload.ModeBatch, loadModelSpec{
		build: func(s *stageRun) loadModel {
			return concurrencyLoad{sessions: s.split(max(1, s.cfg.Scenario.Load.MaxInFlight), true)}
		},
		logAttrs: func(l workload.LoadPlan, st workload.Stage) []any {
			return []any{"requests", st.Requests, "max_in_flight", l.MaxInFlight}
		},
	})
}
