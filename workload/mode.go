package workload

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// LoadMode is one load.mode: the keys it reads, how it checks and defaults them, and how its stages
// are estimated, sized and written. Each mode is one file, mode_<name>.go, that registers its
// LoadMode from init; the engine registers the mode's schedule the same way (engine/load_<name>.go).
// The rest of plload asks the registry (Modes, LookupMode, LoadPlan.LoadMode) what a mode does
// instead of switching on its name, so a new mode touches its two files, their tests and
// docs/scenario.md.
type LoadMode struct {
	// Name is the mode as load.mode writes it.
	Name string
	// OpenLoop: work starts on the mode's own terms, not when earlier work ends (every mode but
	// concurrency): a stage's window is measured from the schedule's origin.
	OpenLoop bool
	// Scheduled: every session has an intended start on a schedule drawn ahead (arrival_rate,
	// request_rate, replay), so its send lag says how well the client kept it.
	Scheduled bool
	// SessionSlots: arrivals wait for one of a stage's max_concurrency session slots, which a
	// session holds while it thinks, and their start lag is recorded (arrival_rate).
	SessionSlots bool
	// TraceClock: sessions start at their trace's times (replay): a stage is a slice of the
	// trace's time, never a count, and the summary judges whether the client kept its pace.
	TraceClock bool
	// Job: a stage is one job of its requests, judged by its completion time (batch).
	Job bool
	// SingleTurn: synthetic sessions are one turn without think time unless the file says
	// otherwise (session.turns and session.think_time may be left out).
	SingleTurn bool
	// Knob is the stage value a capacity search turns; nil when the mode has none (a replay's rate
	// is its trace's, a batch's load its count).
	Knob *Knob

	order     int      // where the mode is offered in messages, lowest first
	loadKeys  []string // the load keys it alone (or with some other modes) reads
	stageKeys []string // the stage keys it reads

	checkLoad  func(c *checker)                        // the values of its load keys
	checkStage func(c *checker, path string, st Stage) // the keys its stages require
	defaults   func(s *Scenario)                       // its load keys the file left out
	// estimate fills e (whose TurnSeconds and SessionSeconds are set) for st: the sessions it
	// starts, the requests it sends and the requests in flight, a count's cap included.
	estimate func(s *Scenario, st Stage, e *Estimate)
	poolSize func(s *Scenario, st Stage) int   // the pool when the stage does not set sessions
	describe func(l LoadPlan, st Stage) string // validate's load column
	text     func(l StageLoad) string          // the report's load column
	// rises reports whether st raises the load of prev (nil: the first stage) the target sees.
	rises func(prev *Stage, st Stage) bool
	// atOnce is the streams (requests in flight) and the sessions, streaming or thinking, that st
	// holds open at once (0 sessions: no more than its streams).
	atOnce func(s *Scenario, st Stage) (streams, sessions float64)
	// openCap is the most connections stage i opens at once, and the key that says so.
	openCap func(l LoadPlan, i int) (n int, path string)
}

// Knob is the stage value a capacity search turns: a closed loop's sessions, an open loop's rate.
type Knob struct {
	// Name is the knob as `plload search --knob` names it: concurrency or rate.
	Name string
	// Unit follows a value in text: "sessions", "sessions/s", "req/s".
	Unit string
	// Of is st's value of the knob (0 when it has none).
	Of func(st Stage) float64
	// With is st with the knob at v.
	With func(st Stage, v float64) Stage
}

// loadModes is the registry: each mode_*.go file adds its mode from init.
var loadModes = map[string]*LoadMode{}

// noMode answers for a load.mode no mode has (validation refuses it): no keys, no properties.
var noMode = &LoadMode{}

// registerMode adds m to the registry. Two modes of one name are a bug in plload, found at start.
func registerMode(m *LoadMode) {
	if _, dup := loadModes[m.Name]; dup || m.Name == "" {
		panic(fmt.Sprintf("workload: load mode %q registered twice or without a name", m.Name))
	}
	loadModes[m.Name] = m
}

// Modes are the load modes a scenario may name, in the order messages offer them.
func Modes() []string {
	ms := make([]*LoadMode, 0, len(loadModes))
	for _, m := range loadModes {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(a, b int) bool { return ms[a].order < ms[b].order })
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return names
}

// LookupMode is the load mode called name; false when no mode has that name.
func LookupMode(name string) (*LoadMode, bool) {
	m, ok := loadModes[name]
	return m, ok
}

// ModeOf is the load mode called name; for a name no mode has (which validation refuses, or a
// results file that names none), one with no keys and no properties.
func ModeOf(name string) *LoadMode {
	if m, ok := loadModes[name]; ok {
		return m
	}
	return noMode
}

// LoadMode is the plan's mode (ModeOf its name).
func (l LoadPlan) LoadMode() *LoadMode { return ModeOf(l.Mode) }

// IsOpenLoop reports whether the mode starts work on its own terms rather than keeping sessions open.
func (l LoadPlan) IsOpenLoop() bool { return l.LoadMode().OpenLoop }

// ReadsLoadKey reports whether the mode reads load.<key> (arrival, cv, max_in_flight, time_scale).
func (m *LoadMode) ReadsLoadKey(key string) bool { return slices.Contains(m.loadKeys, key) }

// ReadsStageKey reports whether the mode's stages read key (concurrency, rate, sessions, …).
func (m *LoadMode) ReadsStageKey(key string) bool { return slices.Contains(m.stageKeys, key) }

// ModeLoadKeys are the load keys that only some modes read, in the order the modes are offered.
func ModeLoadKeys() []string {
	var keys []string
	for _, name := range Modes() {
		for _, k := range loadModes[name].loadKeys {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// modesReading names the modes of which read reports true, in the order they are offered.
func modesReading(read func(*LoadMode) bool) []string {
	var out []string
	for _, name := range Modes() {
		if read(loadModes[name]) {
			out = append(out, name)
		}
	}
	return out
}

// LoadRises reports whether stage i (0-based) raises the load the target sees: a request_rate ramp
// that goes up, a rate at its start above the rate the stage before ended at, or more concurrency
// (or sessions/s) than the stage before. A first stage that does not ramp has nothing before it to
// rise from (its warmup is the step from idle); a replay's rate is the trace's, not the scenario's,
// and a batch's load is its count.
func (l LoadPlan) LoadRises(i int) bool {
	m := l.LoadMode()
	if i < 0 || i >= len(l.Stages) || m.rises == nil {
		return false
	}
	var prev *Stage
	if i > 0 {
		prev = &l.Stages[i-1]
	}
	return m.rises(prev, l.Stages[i])
}

// AtOnce is what stage st holds open at once, as its mode runs it: streams (requests in flight)
// and sessions (streaming or thinking; 0 when they are no more than the streams).
func (s *Scenario) AtOnce(st Stage) (streams, sessions float64) {
	if m := s.Load.LoadMode(); m.atOnce != nil {
		return m.atOnce(s, st)
	}
	return 0, 0
}

// OpenCap is the most connections stage i opens at once, and the YAML path of the key that sets
// it: a concurrency, a max_concurrency or load.max_in_flight.
func (l LoadPlan) OpenCap(i int) (n int, path string) {
	if m := l.LoadMode(); m.openCap != nil {
		return m.openCap(l, i)
	}
	return 0, ""
}

// maxInFlight checks load.max_in_flight, the cap of the modes that read it.
func (c *checker) maxInFlight() {
	if c.s.has("load.max_in_flight") && c.s.Load.MaxInFlight < 1 {
		c.errorf("load.max_in_flight", "found %d; accepted: a whole number ≥ 1", c.s.Load.MaxInFlight)
	}
}

// maxInFlightDefault fills load.max_in_flight when the file leaves it out.
func (s *Scenario) maxInFlightDefault() {
	if s.Load.MaxInFlight == 0 && !s.has("load.max_in_flight") {
		s.Load.MaxInFlight = DefaultMaxInFlight
	}
}

// capRequests caps e's requests at a stage's count: all of them when the stage has no duration.
func (e *Estimate) capRequests(st Stage) {
	if st.Requests <= 0 {
		return
	}
	if n := float64(st.Requests); st.Duration <= 0 {
		e.Requests = n
	} else {
		e.Requests = math.Min(e.Requests, n)
	}
}

// capSessions caps the sessions a stage that starts one per arrival needs at its count: one
// session per E[turns] requests without a duration, else no more than its requests.
func (e *Estimate) capSessions(s *Scenario, st Stage) {
	if st.Requests <= 0 {
		return
	}
	if n := float64(st.Requests); st.Duration <= 0 {
		e.SessionsNeeded = math.Ceil(n / max(1, s.ExpectedTurns()))
	} else {
		e.SessionsNeeded = math.Min(e.SessionsNeeded, n)
	}
}

// arrivalPool is the pool of a stage that starts a session per arrival: the expected arrivals plus
// four standard deviations of their count (cv² times Poisson's variance), so a pool runs dry about
// once in 30,000 stages, capped at the stage's count (the count alone without a duration).
func arrivalPool(expected, cv float64, st Stage) int {
	n := max(1, int(math.Ceil(expected+4*cv*math.Sqrt(expected)))+1)
	if st.Requests > 0 {
		if st.Duration <= 0 {
			return st.Requests
		}
		n = min(n, st.Requests)
	}
	return n
}

// StageLoad is a stage's load as its results file keeps it: the mode and the values the mode reads
// (zero where it reads none). Its String is the load column of the report's tables.
type StageLoad struct {
	Mode           string
	Concurrency    int
	SessionsPerSec float64
	MaxConcurrency int
	Rate           *LoadRate
	Arrival        string
	CV             float64
	MaxInFlight    int
	TimeScale      float64
}

// LoadRate is a request_rate stage's rate as its results file keeps it: To alone when constant,
// else a ramp from From to To over Over, a duration as written ("2m").
type LoadRate struct {
	From, To float64
	Over     string
}

// IsRamp reports whether the rate changes over the stage.
func (r LoadRate) IsRamp() bool { return r.Over != "" && r.From != r.To }

// String is what the stage held the target at, in the words of its mode — "c=16", "2.0 sess/s ≤
// 32", "20 req/s poisson ≤ 1000", "10→50 req/s over 2m poisson ≤ 1000", "replay ×0.5 ≤ 1000" —
// and "n/a" when the stage does not say (records read without a scenario). A stage without a mode
// of its own is written as a closed loop's.
func (l StageLoad) String() string {
	m, ok := loadModes[l.Mode]
	if !ok {
		m = loadModes[ModeConcurrency]
	}
	return m.text(l)
}

// capText is " ≤ N" for a cap on what is open at once, "" when there is none.
func capText(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" ≤ %d", n)
}

// oneDecimal prints a rate with at least one decimal (2.0, 0.25), so it does not read as a count.
func oneDecimal(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%g", v)
}
