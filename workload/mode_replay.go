package workload

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// ModeReplay sends each session of a trace at its own time × time_scale, its later turns at the
// trace's gaps, at most load.max_in_flight requests in flight. A stage is a slice of the trace's time.
const ModeReplay = "replay"

func init() {
	registerMode(&LoadMode{
		Name:       ModeReplay,
		order:      3,
		OpenLoop:   true,
		Scheduled:  true,
		TraceClock: true,
		loadKeys:   []string{"max_in_flight", "time_scale"},
		stageKeys:  []string{"name", "duration", "warmup", "requests"},
		checkLoad:  replayLoad,
		defaults: func(s *Scenario) {
			s.maxInFlightDefault()
			if !s.has("load.time_scale") {
				s.Load.TimeScale = 1
			}
		},
		estimate: replayEstimate,
		// A replay's pool is its slice of the trace, which buildFromSource takes (replaySlicer).
		poolSize: func(*Scenario, Stage) int { return 1 },
		describe: func(l LoadPlan, _ Stage) string {
			return fmt.Sprintf("replay × %g (max %d in flight)", l.TimeScale, l.MaxInFlight)
		},
		text: func(l StageLoad) string { return fmt.Sprintf("replay ×%g%s", l.TimeScale, capText(l.MaxInFlight)) },
		atOnce: func(s *Scenario, st Stage) (streams, sessions float64) {
			return s.EstimateStage(st).InFlight, 0
		},
		openCap: func(l LoadPlan, _ int) (int, string) {
			return l.MaxInFlight, "load.max_in_flight"
		},
	})
}

// replayLoad checks load.max_in_flight and load.time_scale, and that there is a trace to replay.
func replayLoad(c *checker) {
	s := c.s
	c.maxInFlight()
	if s.has("load.time_scale") && s.Load.TimeScale <= 0 {
		c.errorf("load.time_scale", "found %g; accepted: a factor > 0 (0.5 replays twice as fast)", s.Load.TimeScale)
	}
	if !c.bad["load.mode"] && (s.Workload == nil || (s.Workload.Trace == nil && s.Workload.Dataset == nil)) {
		c.errorf("load.mode", "replay sends each request at its trace time, and this scenario has no trace; accepted: a workload.trace (or a dataset with timestamps), or load.mode request_rate")
	}
}

// replayEstimate: the sessions of the trace in the stage's slice, each with its turns, at most
// max_in_flight requests at a time.
func replayEstimate(s *Scenario, st Stage, e *Estimate) {
	sessions, requests := s.replaySlice(st)
	e.SessionsNeeded = sessions
	s.inFlightCapped((st.Warmup.D() + st.Duration.D()).Seconds(), requests, e)
	e.capRequests(st)
}

// replaySlice is the sessions, and their requests, of the source whose first request falls (after
// time_scale) in st's slice of the trace: the stages before it take the slices before (the replay
// pools are sliced the same way, replaySlicer). A stage is found by value, so of two equal stages
// both read the first one's slice.
func (s *Scenario) replaySlice(st Stage) (sessions, requests float64) {
	if s.source == nil {
		return 0, 0
	}
	var from time.Duration
	for _, o := range s.Load.Stages {
		if o == st {
			break
		}
		from += o.Warmup.D() + o.Duration.D()
	}
	until := from + st.Warmup.D() + st.Duration.D()
	for _, ss := range s.source.Sessions {
		if len(ss.Turns) == 0 || ss.Turns[0].AtMs < 0 {
			continue
		}
		if at := time.Duration(ss.Turns[0].AtMs * s.Load.TimeScale * float64(time.Millisecond)); at >= from && at < until {
			sessions++
			requests += float64(len(ss.Turns))
		}
	}
	return sessions, requests
}

// replaySlicer hands each replay stage its slice of the source's clock: stage k replays the sessions
// whose first request falls, after time_scale, in the warmup + duration that follows stage k−1's,
// due at their own times from the stage's origin. Sessions without a time are left out (and said
// at validate: a replay needs times).
type replaySlicer struct {
	on     bool
	scale  float64
	times  []time.Duration // each session's first time × scale, −1 when it has none
	from   time.Duration   // where the next stage's slice starts
	prev   time.Duration   // where the last stage's slice started
	sorted []int           // session indexes by time
}

// turnScale is what a trace's gaps between turns are multiplied by: time_scale in replay, else 1
// (the trace's own pace).
func (r *replaySlicer) turnScale() float64 {
	if r.on {
		return r.scale
	}
	return 1
}

type replayPick struct {
	index int
	at    time.Duration
}

func newReplaySlicer(s *Scenario) *replaySlicer {
	r := &replaySlicer{on: s.Load.LoadMode().TraceClock, scale: s.Load.TimeScale}
	if !r.on {
		return r
	}
	for i, ss := range s.source.Sessions {
		at := time.Duration(-1)
		if len(ss.Turns) > 0 && ss.Turns[0].AtMs >= 0 {
			at = time.Duration(ss.Turns[0].AtMs * r.scale * float64(time.Millisecond))
			r.sorted = append(r.sorted, i)
		}
		r.times = append(r.times, at)
	}
	slices.SortStableFunc(r.sorted, func(a, b int) int { return cmp.Compare(r.times[a], r.times[b]) })
	return r
}

// stage returns the sessions of the next stage's slice, in time order (nil outside replay).
func (r *replaySlicer) stage(st Stage) []replayPick {
	if !r.on {
		return nil
	}
	until := r.from + st.Warmup.D() + st.Duration.D()
	picks := []replayPick{}
	for _, i := range r.sorted {
		if t := r.times[i]; t >= r.from && t < until {
			picks = append(picks, replayPick{index: i, at: t - r.from})
		}
	}
	r.prev, r.from = r.from, until
	return picks
}
