package workload

import (
	"fmt"
	"slices"
	"strings"
)

// stageKeys are the stage keys each load mode reads; any other key of a stage is an error that names
// the mode it belongs to.
var stageKeys = map[string][]string{
	ModeConcurrency: {"name", "concurrency", "duration", "warmup", "sessions", "requests"},
	ModeArrivalRate: {"name", "sessions_per_sec", "max_concurrency", "duration", "warmup", "sessions", "requests"},
	ModeRequestRate: {"name", "rate", "duration", "warmup", "sessions", "requests"},
	ModeReplay:      {"name", "duration", "warmup", "requests"},
	// A batch has no warmup: its completion time runs from its first request to its last answer.
	ModeBatch: {"name", "requests", "duration", "sessions"},
}

// modes in the order they are offered.
var modes = []string{ModeConcurrency, ModeArrivalRate, ModeRequestRate, ModeReplay, ModeBatch}

func (c *checker) load() {
	s := c.s
	l := s.Load
	if c.require("load.mode", strings.Join(modes, ", ")) {
		c.oneOf("load.mode", l.Mode, modes...)
	}
	if c.require("load.stages", "a list of stages") && len(l.Stages) == 0 && !c.bad["load.stages"] {
		c.errorf("load.stages", "the list is empty; accepted: at least one stage")
	}
	c.positive("load.drain_timeout", l.DrainTimeout)
	c.positive("load.abort_after", l.AbortAfter)
	if l.SessionPoolFactor < 1 {
		c.errorf("load.session_pool_factor", "found %g; accepted: a factor ≥ 1", l.SessionPoolFactor)
	}
	if l.DrainTimeout > 0 && l.DrainTimeout < s.Target.Timeout {
		c.warnf("load.drain_timeout", "drain_timeout %s is shorter than target.timeout %s: slow requests at the end of each stage will be cancelled and counted as errors", l.DrainTimeout, s.Target.Timeout)
	}
	c.openLoopKeys()
	for i, st := range l.Stages {
		c.stage(i, st)
	}
}

// openLoopKeys checks the load keys of request_rate and replay, and that no other mode sets them.
func (c *checker) openLoopKeys() {
	s := c.s
	l := s.Load
	only := func(key string, modes ...string) bool {
		if !s.has("load."+key) || l.Mode == "" {
			return false
		}
		for _, m := range modes {
			if l.Mode == m {
				return true
			}
		}
		c.errorf("load."+key, "%s belongs to load.mode %s; load.mode here is %s", key, strings.Join(modes, " or "), l.Mode)
		return false
	}
	if only("arrival", ModeRequestRate) {
		c.oneOf("load.arrival", l.Arrival, ArrivalPoisson, ArrivalGamma, ArrivalConstant)
	}
	if only("cv", ModeRequestRate) {
		if l.Arrival != ArrivalGamma {
			c.errorf("load.cv", "cv is the burstiness of arrival: gamma; here arrival is %s (write arrival: gamma, or drop cv)", l.Arrival)
		} else if l.CV <= 0 {
			c.errorf("load.cv", "found %g; accepted: a coefficient of variation > 0 (1 = Poisson, > 1 bursty)", l.CV)
		}
	}
	if only("max_in_flight", ModeRequestRate, ModeReplay, ModeBatch) && l.MaxInFlight < 1 {
		c.errorf("load.max_in_flight", "found %d; accepted: a whole number ≥ 1", l.MaxInFlight)
	}
	if only("time_scale", ModeReplay) && l.TimeScale <= 0 {
		c.errorf("load.time_scale", "found %g; accepted: a factor > 0 (0.5 replays twice as fast)", l.TimeScale)
	}
	if l.Mode == ModeReplay && !c.bad["load.mode"] && (s.Workload == nil || (s.Workload.Trace == nil && s.Workload.Dataset == nil)) {
		c.errorf("load.mode", "replay sends each request at its trace time, and this scenario has no trace; accepted: a workload.trace (or a dataset with timestamps), or load.mode request_rate")
	}
}

// stage checks one stage: the keys its mode reads, and only those.
func (c *checker) stage(i int, st Stage) {
	s := c.s
	p := fmt.Sprintf("load.stages[%d]", i)
	mode := s.Load.Mode
	// A stage may end by count (requests) instead of by time, except in replay, whose stages are
	// slices of the trace's time.
	byCount := s.has(p+".requests") && mode != ModeReplay
	switch {
	case !byCount:
		what := "a duration such as 60s"
		if mode != ModeReplay {
			what += ", or requests: N (the stage ends after N requests)"
		}
		if c.require(p+".duration", what) {
			c.positive(p+".duration", st.Duration)
		}
	case st.Duration < 0:
		c.errorf(p+".duration", "found %s; accepted: a duration > 0, or none (the stage ends after its requests)", st.Duration)
	}
	if s.has(p+".requests") && st.Requests < 1 {
		c.errorf(p+".requests", "found %d; accepted: a whole number ≥ 1 (the stage ends after this many requests)", st.Requests)
	}
	if st.Warmup < 0 {
		c.errorf(p+".warmup", "found %s; accepted: a duration ≥ 0", st.Warmup)
	}
	if s.has(p+".sessions") && st.Sessions < 1 {
		c.errorf(p+".sessions", "found %d; accepted: a whole number ≥ 1", st.Sessions)
	}
	keys, known := stageKeys[mode]
	if !known {
		return
	}
	for _, k := range []string{"concurrency", "sessions_per_sec", "max_concurrency", "rate", "sessions", "requests", "warmup"} {
		if s.has(p+"."+k) && !slices.Contains(keys, k) && (k != "warmup" || st.Warmup != 0) { // a resolved file writes warmup: 0s
			c.errorf(p+"."+k, "%s belongs to %s; accepted in a %s stage: %s", k, modesReading(k), mode, strings.Join(keys, ", "))
		}
	}
	switch mode {
	case ModeConcurrency:
		if c.require(p+".concurrency", "the number of sessions kept open, ≥ 1") && st.Concurrency < 1 {
			c.errorf(p+".concurrency", "found %d; accepted: a whole number ≥ 1", st.Concurrency)
		}
	case ModeArrivalRate:
		if c.require(p+".sessions_per_sec", "the mean session arrival rate, > 0") && st.SessionsPerSec <= 0 {
			c.errorf(p+".sessions_per_sec", "found %g; accepted: a rate > 0", st.SessionsPerSec)
		}
		if c.require(p+".max_concurrency", "the most sessions open at once, ≥ 1") && st.MaxConcurrency < 1 {
			c.errorf(p+".max_concurrency", "found %d; accepted: a whole number ≥ 1", st.MaxConcurrency)
		}
	case ModeRequestRate:
		if c.require(p+".rate", "requests per second, such as 20, or a ramp {from: 10, to: 50, over: 2m}") && st.Rate != nil {
			c.rate(p+".rate", *st.Rate, st)
		}
	case ModeBatch:
		c.require(p+".requests", "the number of requests the batch sends, such as 5000 (at most load.max_in_flight open at once)")
	}
}

// rate checks a request_rate stage's rate: a constant > 0, or a ramp from ≥ 0 to > 0 over a
// duration that fits in the stage.
func (c *checker) rate(p string, r Rate, st Stage) {
	if !c.s.has(p+".from") && !c.s.has(p+".to") && !c.s.has(p+".over") { // a plain number
		if r.To <= 0 {
			c.errorf(p, "found %g; accepted: requests per second > 0", r.To)
		}
		return
	}
	for _, k := range []string{"from", "to", "over"} {
		c.require(p+"."+k, map[string]string{"from": "the rate at the start, ≥ 0", "to": "the rate at the end of the ramp, > 0", "over": "the ramp's length, such as 2m"}[k])
	}
	if r.From < 0 {
		c.errorf(p+".from", "found %g; accepted: requests per second ≥ 0", r.From)
	}
	if c.s.has(p+".to") && r.To <= 0 {
		c.errorf(p+".to", "found %g; accepted: requests per second > 0", r.To)
	}
	c.positive(p+".over", r.Over)
	if st.Duration > 0 && r.Over > st.Warmup+st.Duration {
		c.warnf(p+".over", "the ramp (%s) is longer than the stage's warmup + duration (%s): it never reaches %g req/s", r.Over, st.Warmup+st.Duration, r.To)
	}
}

// modesReading names the load modes whose stages read key.
func modesReading(key string) string {
	var out []string
	for _, m := range modes {
		if slices.Contains(stageKeys[m], key) {
			out = append(out, "load.mode "+m)
		}
	}
	return strings.Join(out, " and ")
}
