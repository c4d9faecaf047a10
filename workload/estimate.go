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

// EstimateStage returns the expected session length, request count and sessions needed for st, as
// its mode runs it (LoadMode's estimate). A stage that ends by count sends at most its requests; a
// batch stage sends them all, max_in_flight at a time.
func (s *Scenario) EstimateStage(st Stage) Estimate {
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
	if m := s.Load.LoadMode(); m.estimate != nil {
		m.estimate(s, st, &e)
	}
	return e
}

// inFlightCapped fills e for an open loop that sends requests over span seconds: requests in
// flight follow Little's law (request rate × one request's time); past load.max_in_flight requests
// wait for a slot, so what the stage can send is capped at max_in_flight ÷ TurnSeconds per second.
func (s *Scenario) inFlightCapped(span, requests float64, e *Estimate) {
	capped := float64(max(1, s.Load.MaxInFlight)) * span / e.TurnSeconds
	e.Requests = math.Min(requests, capped)
	e.InFlight = math.Min(requests/max(span, 1e-9)*e.TurnSeconds, float64(max(1, s.Load.MaxInFlight)))
}

// estimates adds the warnings that need the distributions' expected values.
func (c *checker) estimates() {
	s := c.s
	if s.source != nil {
		// The file bounds the text, and its lengths are facts, not distributions to warn about; but
		// its conversations are finite, so the pool can still run dry.
		c.sourceDryPools()
		return
	}
	perSession := s.Session.Turns.MeanInt() * (s.Session.UserInputTokens.MeanInt() + s.meanDocumentTokens(false))
	if s.Retrieval() {
		perSession = s.meanRetrievalTokens()
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
		if pool := s.PoolSize(st); e.SessionsNeeded > float64(pool) && s.Load.SessionReuse.Wraps() {
			// With fresh, a stage past its pool draws new sessions: nothing to warn of.
			c.warnf(p, "the pool of %d sessions is likely to run dry (about %.0f sessions will start, with %s): sessions will be sent again (load.session_reuse: %s); raise load.session_pool_factor or sessions%s", pool, e.SessionsNeeded, s.Assumption(), s.Load.SessionReuse, freshAdvice(s))
		}
	}
	if s.Retrieval() {
		return // no history
	}
	turns := s.Session.Turns.MaxValue()
	if math.IsInf(turns, 1) {
		turns = 3 * s.Session.Turns.MeanInt()
	}
	perTurn := s.Session.UserInputTokens.MeanInt() + s.Session.MaxOutputTokens.MeanInt() + s.meanDocumentTokens(true)
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
		m := s.Load.LoadMode()
		load := ""
		if m.describe != nil {
			load = m.describe(s.Load, st)
		}
		if st.Requests > 0 && !m.Job {
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

// sourceDryPools warns of each stage of a dataset or trace likely to send a conversation again. A
// stage's pool takes the file's next conversations in order (its sessions, else the whole file), so
// a stage that starts more sessions than the conversations the stages before it left unsent starts
// them over: with load.session_reuse wrap each repeat carries a nonce, yet it is still the same
// conversation, and wrap_identical is a prompt the server's prefix cache may answer whole. A replay
// takes each session of the trace once, at its own time, and never wraps.
func (c *checker) sourceDryPools() {
	s := c.s
	if s.Load.LoadMode().TraceClock || !s.Load.SessionReuse.Wraps() || len(s.source.Sessions) == 0 {
		return
	}
	total, next := len(s.source.Sessions), 0
	for i, st := range s.Load.Stages {
		pool := st.Sessions
		if pool == 0 {
			pool = min(total, sourcePoolMax)
		}
		unsent := min(pool, max(0, total-next)) // the pool's conversations no earlier stage sent
		next += pool
		e := s.EstimateStage(st)
		if e.SessionsNeeded <= float64(unsent) {
			continue
		}
		left := ""
		if unsent < pool {
			left = fmt.Sprintf(", %d of them not sent by an earlier stage", unsent)
		}
		c.warnf(fmt.Sprintf("load.stages[%d]", i), "the pool of %d sessions is likely to run dry (about %.0f sessions will start, with %s; %s has %d conversations%s): conversations will be sent again (load.session_reuse: %s); add conversations to the file, or shorten or lighten the stage",
			pool, e.SessionsNeeded, s.Assumption(), s.source.File, total, left, s.Load.SessionReuse)
	}
}
