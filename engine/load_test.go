package engine

import (
	"testing"
	"time"

	"github.com/plload/plload/workload"
)

// TestLoadModelsAreRegistered: the engine has a model for every mode the scenario schema accepts and
// none for a mode it refuses, a model's t0 is its schedule's origin when workload says the mode
// schedules its sessions, and the requests that take a max_in_flight slot are those of the modes
// that schedule arrivals and read load.max_in_flight. Catches a new mode given its workload file but
// no schedule, or the reverse.
func TestLoadModelsAreRegistered(t *testing.T) {
	modes := workload.Modes()
	if len(loadModels) != len(modes) {
		t.Errorf("the engine registers %d load models, the scenario schema accepts %d modes (%v)", len(loadModels), len(modes), modes)
	}
	for _, name := range modes {
		spec, ok := loadModels[name]
		if !ok || spec.build == nil || spec.logAttrs == nil {
			t.Errorf("load.mode %s: no model, or one without build or logAttrs", name)
			continue
		}
		m, _ := workload.LookupMode(name)
		if want := m.Scheduled && m.ReadsLoadKey("max_in_flight"); spec.slotPerRequest != want {
			t.Errorf("load.mode %s: slotPerRequest %v, want %v", name, spec.slotPerRequest, want)
		}
		sc := &workload.Scenario{Load: workload.LoadPlan{Mode: name, MaxInFlight: 1}}
		st := workload.Stage{Concurrency: 1, SessionsPerSec: 1, MaxConcurrency: 1, Duration: workload.Duration(time.Second)}
		s := &stageRun{cfg: &Config{Scenario: sc}, pool: &workload.StagePool{Stage: 1, Spec: st}}
		if got := spec.build(s).fixedOrigin(); got != m.Scheduled {
			t.Errorf("load.mode %s: fixedOrigin %v, but workload says Scheduled %v", name, got, m.Scheduled)
		}
		if attrs := spec.logAttrs(workload.LoadPlan{Mode: name}, workload.Stage{}); len(attrs) == 0 || len(attrs)%2 != 0 {
			t.Errorf("load.mode %s: log attributes %v are not key-value pairs", name, attrs)
		}
	}
	if got := loadModelFor(workload.LoadPlan{}); got.build == nil || got.slotPerRequest {
		t.Error("a plan without a mode does not run as concurrency")
	}
}
