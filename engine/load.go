package engine

import (
	"context"
	"sync"
	"time"

	"github.com/plload/plload/workload"
)

// loadModel is how a stage's work is started — one per load.mode, each in its own file: when to
// start sessions (the schedule) is the model's; sending them is runSession's, the same for all.
type loadModel interface {
	// fixedOrigin reports whether the stage's t0 is the schedule's origin (the open-loop modes, whose
	// offsets are measured from it) rather than the first request's issue time.
	fixedOrigin() bool
	// run starts the stage's sessions from origin until issueCtx ends, adding every goroutine it
	// starts to wg, and returns once it starts no more.
	run(l *loadRun)
}

// loadRun is what a model runs with.
type loadRun struct {
	s        *stageRun
	issueCtx context.Context // ends when the stage stops issuing
	reqCtx   context.Context // ends when in-flight requests are cancelled
	wg       *sync.WaitGroup
	origin   time.Time
}

// loadModelSpec is what the engine knows of one load.mode. Each mode's file (load_<mode>.go)
// registers its own, as workload's mode_<mode>.go registers the mode's keys and checks.
type loadModelSpec struct {
	// build is the stage's model; a scheduled mode draws the whole run's schedule here (and counts
	// the arrivals this shard runs in s.scheduled).
	build func(s *stageRun) loadModel
	// slotPerRequest: every request takes one of load.max_in_flight slots (the dispatcher's
	// modes); the others bound sessions instead.
	slotPerRequest bool
	// logAttrs are the stage's load, as its mode reads it, in the "stage starting" log line.
	logAttrs func(l workload.LoadPlan, st workload.Stage) []any
}

// loadModels is the registry, filled in by each mode's file from init.
var loadModels = map[string]loadModelSpec{}

// registerLoadModel adds the mode's spec. Two of one mode are a bug in plload, found at start.
func registerLoadModel(mode string, spec loadModelSpec) {
	if _, dup := loadModels[mode]; dup {
		panic("engine: load model " + mode + " registered twice")
	}
	loadModels[mode] = spec
}

// loadModelFor is the spec of l's mode; concurrency's for a plan without a mode of its own (a
// scenario built in code; a parsed one has a registered mode, or validation refused it).
func loadModelFor(l workload.LoadPlan) loadModelSpec {
	if spec, ok := loadModels[l.Mode]; ok {
		return spec
	}
	return loadModels[workload.ModeConcurrency]
}

// newLoadModel is the stage's load model; for request_rate and replay it draws the whole run's
// schedule (and counts the arrivals this shard runs in s.scheduled).
func (s *stageRun) newLoadModel() loadModel {
	return loadModelFor(s.cfg.Scenario.Load).build(s)
}

// maxInFlight is the cap on requests in flight at once, this shard's part of it (0: none; the
// closed-loop modes, and batch, bound sessions instead).
func (s *stageRun) maxInFlight() int {
	if l := s.cfg.Scenario.Load; loadModelFor(l).slotPerRequest {
		return s.split(max(1, l.MaxInFlight), true)
	}
	return 0
}

// stageLoadAttrs are the log attributes of the stage's load, as its mode reads it.
func stageLoadAttrs(l workload.LoadPlan, st workload.Stage) []any {
	return loadModelFor(l).logAttrs(l, st)
}

// acquireSlot takes an in-flight slot, waiting for one (never dropping the request); false when the
// stage stopped issuing first. Always true without a cap.
func (s *stageRun) acquireSlot(ctx context.Context) bool {
	if s.slots == nil {
		return true
	}
	select {
	case s.slots <- struct{}{}:
		return true
	default:
	}
	s.counts.waited.Add(1)
	select {
	case s.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// releaseSlot gives an in-flight slot back (nothing without a cap).
func (s *stageRun) releaseSlot() {
	if s.slots != nil {
		<-s.slots
	}
}
