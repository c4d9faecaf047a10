package workload

import (
	"fmt"
	"strings"
)

func (c *checker) load() {
	s := c.s
	l := s.Load
	modes := Modes()
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
	c.sessionReuse()
	if l.DrainTimeout > 0 && l.DrainTimeout < s.Target.Timeout {
		c.warnf("load.drain_timeout", "drain_timeout %s is shorter than target.timeout %s: slow requests at the end of each stage will be cancelled and counted as errors", l.DrainTimeout, s.Target.Timeout)
	}
	c.modeLoadKeys()
	for i, st := range l.Stages {
		c.stage(i, st)
	}
}

// modeLoadKeys refuses the load keys of other modes (arrival, cv, max_in_flight, time_scale), and
// has the scenario's mode check its own.
func (c *checker) modeLoadKeys() {
	s := c.s
	l := s.Load
	m := l.LoadMode()
	for _, key := range ModeLoadKeys() {
		if !s.has("load."+key) || l.Mode == "" || m.ReadsLoadKey(key) {
			continue
		}
		readers := modesReading(func(o *LoadMode) bool { return o.ReadsLoadKey(key) })
		c.errorf("load."+key, "%s belongs to load.mode %s; load.mode here is %s", key, strings.Join(readers, " or "), l.Mode)
	}
	if m.checkLoad != nil {
		m.checkLoad(c)
	}
}

// stage checks one stage: the keys its mode reads, and only those.
func (c *checker) stage(i int, st Stage) {
	s := c.s
	p := fmt.Sprintf("load.stages[%d]", i)
	mode := s.Load.Mode
	m := s.Load.LoadMode()
	// A stage may end by count (requests) instead of by time, except in replay, whose stages are
	// slices of the trace's time.
	byCount := s.has(p+".requests") && !m.TraceClock
	switch {
	case !byCount:
		what := "a duration such as 60s"
		if !m.TraceClock {
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
	if _, known := LookupMode(mode); !known {
		return
	}
	for _, k := range []string{"concurrency", "sessions_per_sec", "max_concurrency", "rate", "sessions", "requests", "warmup"} {
		if s.has(p+"."+k) && !m.ReadsStageKey(k) && (k != "warmup" || st.Warmup != 0) { // a resolved file writes warmup: 0s
			c.errorf(p+"."+k, "%s belongs to %s; accepted in a %s stage: %s", k, stageKeyModes(k), mode, strings.Join(m.stageKeys, ", "))
		}
	}
	if m.checkStage != nil {
		m.checkStage(c, p, st)
	}
}

// stageKeyModes names the load modes whose stages read key.
func stageKeyModes(key string) string {
	var out []string
	for _, name := range modesReading(func(m *LoadMode) bool { return m.ReadsStageKey(key) }) {
		out = append(out, "load.mode "+name)
	}
	return strings.Join(out, " and ")
}
