package workload

import (
	"fmt"
	"math"
	"time"
)

// Assumed server speed for estimates against a real target (the mock's own settings are used for it).
// Estimates only feed warnings and `validate`'s "requests (est.)"; no measurement depends on them.
const (
	assumedTTFT = 200 * time.Millisecond
	assumedTPS  = 50.0
	// historyWarnTokens is the context size many deployed models still have.
	historyWarnTokens = 32768
	// maxDatasetBytes bounds the text one stage's pool (or the personas) may hold in memory.
	maxDatasetBytes = 2 << 30
	// bytesPerToken is about what synthetic English and Korean text takes per o200k token in UTF-8.
	bytesPerToken = 6
)

// Estimate is what a stage is expected to do, from the scenario's distributions alone.
type Estimate struct {
	SessionSeconds float64 // a typical session from first request to last answer
	TurnSeconds    float64 // one request, TTFT plus decode of the mean max_output_tokens
	Requests       float64 // requests issued over warmup + duration
	SessionsNeeded float64 // sessions started over warmup + duration, with headroom for arrival noise
	// InFlight is the requests expected in flight at once (Little's law: request rate × TurnSeconds,
	// capped by load.max_in_flight), for request_rate, replay and arrival_rate: the connections they
	// open (an arrival_rate session holds one only while its turn streams, not while it thinks).
	InFlight float64
}

// Assumption says on what server speed the estimates rest.
func (s *Scenario) Assumption() string {
	if m := s.Target.Mock; m != nil {
		return fmt.Sprintf("the mock's TTFT of %s and %g tok/s per stream", m.TTFT, m.TPS)
	}
	return fmt.Sprintf("a TTFT of %s and %g tok/s per stream (assumed for a real server)", formatDuration(assumedTTFT), assumedTPS)
}

// MeanSystemPromptTokens is the expected system-prompt length of a session's persona.
func (s *Scenario) MeanSystemPromptTokens() float64 {
	if s.Personas.Source == "file" {
		if len(s.filePersonas) == 0 {
			return 0
		}
		sum := 0
		for _, p := range s.filePersonas {
			sum += s.Tokenizer().Count(p.SystemPrompt)
		}
		return float64(sum) / float64(len(s.filePersonas))
	}
	return s.Personas.SystemPromptTokens.MeanInt()
}

// ExpectedTurns is E[turns] of a session: exact for the synthetic distribution, the mean over the
// file's conversations for a dataset or trace.
func (s *Scenario) ExpectedTurns() float64 {
	if src := s.source; src != nil {
		return s.sourceMean(func(SourceTurn) float64 { return 1 })
	}
	return s.Session.Turns.MeanInt()
}

// sourceMean is the mean over the source's sessions of the sum of f over their turns.
func (s *Scenario) sourceMean(f func(SourceTurn) float64) float64 {
	sum := 0.0
	for _, ss := range s.source.Sessions {
		for _, t := range ss.Turns {
			sum += f(t)
		}
	}
	return sum / float64(len(s.source.Sessions))
}

// EstimateStage returns the expected session length, request count and sessions needed for st. A
// stage that ends by count sends at most its requests; a batch stage sends them all, max_in_flight
// at a time.
func (s *Scenario) EstimateStage(st Stage) Estimate {
	e := s.estimateStage(st)
	if st.Requests <= 0 {
		return e
	}
	n := float64(st.Requests)
	turns := max(1, s.ExpectedTurns())
	if s.Load.Mode == ModeBatch || st.Duration <= 0 {
		e.Requests = n
	} else {
		e.Requests = math.Min(e.Requests, n)
	}
	if s.Load.Mode == ModeBatch || s.Load.Mode == ModeArrivalRate || s.Load.Mode == ModeRequestRate {
		if st.Duration <= 0 || s.Load.Mode == ModeBatch {
			e.SessionsNeeded = math.Ceil(n / turns)
		} else {
			e.SessionsNeeded = math.Min(e.SessionsNeeded, n)
		}
	}
	if s.Load.Mode == ModeBatch {
		e.InFlight = math.Min(n, float64(max(1, s.Load.MaxInFlight)))
	}
	return e
}

// BatchSeconds is the expected completion time of a stage that sends its requests as fast as the
// server takes them, max_in_flight at a time (on the assumed server speed).
func (s *Scenario) BatchSeconds(st Stage) float64 {
	e := s.EstimateStage(st)
	if e.InFlight <= 0 {
		return 0
	}
	return math.Ceil(e.Requests/e.InFlight) * e.TurnSeconds
}

func (s *Scenario) estimateStage(st Stage) Estimate {
	ttft, tps := assumedTTFT.Seconds(), assumedTPS
	if m := s.Target.Mock; m != nil {
		ttft, tps = m.TTFT.D().Seconds(), m.TPS
	}
	turns := s.ExpectedTurns()
	output := s.Session.MaxOutputTokens.MeanInt()
	if d := s.Workload; s.source != nil && d.Dataset != nil && d.Dataset.OutputTokens.Dist != nil {
		output = d.Dataset.OutputTokens.Dist.MeanInt()
	} else if s.source != nil {
		output = s.sourceMean(func(t SourceTurn) float64 {
			if t.OutputTokens > 0 {
				return float64(t.OutputTokens)
			}
			return DefaultDatasetOutputTokens
		}) / turns
	}
	e := Estimate{TurnSeconds: ttft + output/tps}
	think := s.Session.ThinkTime.MeanSeconds()
	e.SessionSeconds = turns*e.TurnSeconds + (turns-1)*think
	span := (st.Warmup.D() + st.Duration.D()).Seconds()
	switch s.Load.Mode {
	case ModeBatch:
		return e // EstimateStage fills it from the stage's requests
	case ModeRequestRate, ModeReplay:
		s.estimateOpenLoop(st, turns, &e)
		return e
	case ModeArrivalRate:
		arrivals := st.SessionsPerSec * span
		e.SessionsNeeded = arrivals + 3*math.Sqrt(arrivals) // Poisson: mean + 3σ
		// Little's law caps the sessions open at once at max_concurrency.
		open := math.Min(st.SessionsPerSec*e.SessionSeconds, float64(st.MaxConcurrency))
		e.Requests = open * span / (e.TurnSeconds + think*(turns-1)/turns)
		e.InFlight = math.Min(e.Requests/max(span, 1e-9)*e.TurnSeconds, open)
		return e
	}
	c := float64(st.Concurrency)
	e.SessionsNeeded = c * (1 + span/e.SessionSeconds)
	e.Requests = c * span / (e.TurnSeconds + think*(turns-1)/turns)
	return e
}

// estimateOpenLoop fills e for request_rate and replay. Sessions arrive on the schedule: request_rate
// at the stage's mean rate (a ramp's integral) with a count that varies by cv²× Poisson's (headroom
// of 3σ), replay as many as the trace holds in the stage's slice; each brings its turns. Requests in
// flight follow Little's law (request rate × one request's time); past load.max_in_flight requests
// wait for a slot, so what the stage can send is capped at max_in_flight ÷ TurnSeconds per second.
func (s *Scenario) estimateOpenLoop(st Stage, turns float64, e *Estimate) {
	span := (st.Warmup.D() + st.Duration.D()).Seconds()
	var sessions, requests float64
	if s.Load.Mode == ModeReplay {
		sessions, requests = s.replaySlice(st)
		e.SessionsNeeded = sessions
	} else {
		if st.Rate != nil {
			sessions = st.Rate.Mean(st.Warmup.D()+st.Duration.D()) * span
		}
		cv := 1.0
		if s.Load.Arrival == ArrivalGamma {
			cv = max(cv, s.Load.CV)
		}
		e.SessionsNeeded = sessions + 3*cv*math.Sqrt(sessions)
		requests = sessions * turns
	}
	capped := float64(max(1, s.Load.MaxInFlight)) * span / e.TurnSeconds
	e.Requests = math.Min(requests, capped)
	e.InFlight = math.Min(requests/max(span, 1e-9)*e.TurnSeconds, float64(max(1, s.Load.MaxInFlight)))
}

// replaySlice is the sessions, and their requests, of the source whose first request falls (after
// time_scale) in st's slice of the trace: the stages before it take the slices before (workload's
// replay pools are sliced the same way). A stage is found by value, so of two equal stages both
// read the first one's slice.
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

// estimates adds the warnings that need the distributions' expected values.
func (c *checker) estimates() {
	s := c.s
	if s.source != nil {
		return // the file bounds the text, and its lengths are facts, not distributions to warn about
	}
	perSession := s.Session.Turns.MeanInt() * s.Session.UserInputTokens.MeanInt()
	if s.Session.RetrievedTokens != nil {
		perSession += s.Session.Turns.MeanInt() * s.Session.RetrievedTokens.MeanInt()
	}
	if s.Personas.Source == "synthetic" {
		if b := float64(s.Personas.Count) * s.Personas.SystemPromptTokens.MeanInt() * bytesPerToken; b > maxDatasetBytes {
			c.errorf("personas.count", "%d personas of this length are about %.1f GiB of text; accepted: under 2 GiB (fewer or shorter personas)", s.Personas.Count, b/(1<<30))
			return
		}
	}
	for i, st := range s.Load.Stages {
		p := fmt.Sprintf("load.stages[%d]", i)
		if b := float64(s.PoolSize(st)) * perSession * bytesPerToken; b > maxDatasetBytes {
			c.errorf(p, "the pool of %d sessions is about %.1f GiB of text; accepted: under 2 GiB per stage (set sessions, or lower the load, turns or token counts)", s.PoolSize(st), b/(1<<30))
			continue
		}
		e := s.EstimateStage(st)
		if st.Duration > 0 && st.Duration.D().Seconds() < e.SessionSeconds {
			c.warnf(p+".duration", "duration %s is shorter than a typical session (about %.0fs with %s): most sessions will be cut by the end of the stage", st.Duration, e.SessionSeconds, s.Assumption())
		}
		if pool := s.PoolSize(st); e.SessionsNeeded > float64(pool) {
			c.warnf(p, "the pool of %d sessions is likely to run dry (about %.0f sessions will start, with %s): sessions will be reused; raise load.session_pool_factor or sessions", pool, e.SessionsNeeded, s.Assumption())
		}
	}
	turns := s.Session.Turns.MaxValue()
	if math.IsInf(turns, 1) {
		turns = 3 * s.Session.Turns.MeanInt()
	}
	perTurn := s.Session.UserInputTokens.MeanInt() + s.Session.MaxOutputTokens.MeanInt()
	if s.Session.RetrievedTokens != nil {
		perTurn += s.Session.RetrievedTokens.MeanInt()
	}
	if history := s.MeanSystemPromptTokens() + turns*perTurn; history > historyWarnTokens {
		c.warnf("session.turns", "history is likely to reach about %.0f tokens by turn %.0f (answers at their max_output_tokens), over the %d-token context of many models", history, turns, historyWarnTokens)
	}
}

// StageStats is what `plload validate` prints for one stage.
type StageStats struct {
	Stage         int
	Mode          string
	Load          string // "concurrency 10" or "1.5 sessions/s (max 20 open)"
	Warmup        Duration
	Duration      Duration
	PoolSize      int
	ExpectedTurns float64 // E[turns] after clamping, exact
	Estimate      Estimate
	// Mean prompt tokens (system prompt, history and the new message; answers taken at their
	// max_output_tokens; chat-template tokens not counted) at the first, middle and last turn.
	PromptFirst, PromptMid, PromptLast float64
	DatasetBytes                       int
	SHA256                             string
}

// Stats summarises each stage of a built workload.
func (s *Scenario) Stats(w *Workload) []StageStats {
	out := make([]StageStats, len(w.Stages))
	for i, pool := range w.Stages {
		st := pool.Spec
		load := fmt.Sprintf("concurrency %d", st.Concurrency)
		switch s.Load.Mode {
		case ModeArrivalRate:
			load = fmt.Sprintf("%g sessions/s (max %d open)", st.SessionsPerSec, st.MaxConcurrency)
		case ModeRequestRate:
			if st.Rate != nil {
				load = fmt.Sprintf("%s %s (max %d in flight)", st.Rate, s.Load.Arrival, s.Load.MaxInFlight)
			}
		case ModeReplay:
			load = fmt.Sprintf("replay × %g (max %d in flight)", s.Load.TimeScale, s.Load.MaxInFlight)
		case ModeBatch:
			load = fmt.Sprintf("batch of %d requests (max %d in flight)", st.Requests, s.Load.MaxInFlight)
		}
		if st.Requests > 0 && s.Load.Mode != ModeBatch {
			load += fmt.Sprintf(", ends after %d requests", st.Requests)
		}
		ss := StageStats{
			Stage: pool.Stage, Mode: s.Load.Mode, Load: load, Warmup: st.Warmup, Duration: st.Duration,
			PoolSize: len(pool.Sessions), ExpectedTurns: s.ExpectedTurns(), Estimate: s.EstimateStage(st),
			DatasetBytes: int(pool.DatasetSize), SHA256: pool.SHA256,
		}
		ss.PromptFirst, ss.PromptMid, ss.PromptLast = pool.PromptFirst, pool.PromptMid, pool.PromptLast
		out[i] = ss
	}
	return out
}
