package metrics

import (
	"fmt"
	"math"
	"time"
)

// StageInput is what a stage's computation needs besides its records.
type StageInput struct {
	Warmup, Duration time.Duration
	// T0Ns is the stage's t0 when the caller knows it (plload's engine does); otherwise it is read
	// from the records (see T0Finder).
	T0Ns Opt[int64]
	// InterruptNs ends the window early for a partial stage.
	InterruptNs Opt[int64]
	SLO         SLOLimits
	Cost        CostInputs
	// Warnings from the caller that belong in the stage's warnings (dataset reuse, injector load).
	Warnings []string
	// NeverStarted is the number of arrival_rate sessions still queued at the end (−1 unknown).
	NeverStarted int
	// TemplatedPrompts: the server counts each text inside a template of its own (a rerank's
	// documents, each with the query), which no client count of the texts matches; the stage then
	// has no prompt_tokens_agreement rather than a tokenizer warning that is not about tokenizers.
	TemplatedPrompts bool
	// Replay marks a stage of load.mode replay: its summary then says whether the client kept the
	// trace's pace (replay_valid).
	Replay bool
	// AbsorbWindow asks for the time to absorb a rising load (docs/measurement.md, absorb.go): the SLO's latency
	// limits judged per window of this length from t0. 0: not asked (the stage's load does not rise).
	AbsorbWindow time.Duration
	// Batch marks a stage of load.mode batch (docs/scenario.md): its summary then has the job's completion
	// time, rate and cost over every record (Batch).
	Batch bool
	// Keep, when set, is asked of each record that SummarizeFile reads: only those it keeps are
	// counted (`plload report --by model` summarizes one model's records in the stage's own window).
	Keep func(*Record) bool
}

// Thresholds of the client-bottleneck warnings (docs/measurement.md).
const (
	ThinkLagWarnMs = 100.0 // think lag p99
	StartLagWarnMs = 100.0 // start lag p95; a session whose start lag passes it counts as queued
	// exactITLLimit is how many pooled token gaps (ITL) are kept exactly; past it they go into an HDR
	// histogram with 3 significant digits (0.1 % resolution), and the summary says so.
	exactITLLimit = 8 << 20
)

// ITL methods.
const (
	ITLExact = "exact"
	ITLHDR   = "hdr-3-significant-digits"
)

// Stage accumulates one stage's records. Add every record (any order), then call Summary once.
type Stage struct {
	in     StageInput
	limits []LatencyLimit // in.SLO's, folded once
	w, e   int64
	// Per-request values of the successful in-window requests, in ms. TTFT is kept by turn only
	// (first turns, later ones) and the send lag by kind only (start, think): the whole is their
	// union, summarized without a copy.
	ttftFirst, ttftLater             []float64
	latTTFO, latE2E, itlPerReq, tpot []float64
	ttst, isl, osl, perUser          []float64
	ttftIntended, e2eIntended        []float64
	itl                              gapPool   // pooled ITL: token gaps (token_gaps.go)
	chunkGaps                        *gapPool  // the plain chunk gaps, once they differ from itl's
	scratch                          []float64 // one record's token gaps
	startLag, thinkLag               []float64 // of in-window requests with an intended start
	slotWait, clientLag              []float64 // their send lag split, where the record has slot_wait_ns
	sessions                         map[string]*interval
	flightStarts, flightEnds         []int64 // of the requests in flight in the window, clipped to it
	flightArea                       int64   // Σ ns in flight within the window
	turns                            map[int]*turnCache
	turnSums                         map[int]*turnSums // TTFT and request sizes by turn (stage_turns.go)
	sawRequestBytes                  bool
	s                                StageSummary
	promptSum, cachedSum             int64
	promptCount                      int
	goodStarted                      int            // good requests among those that started in the window
	goodEnded                        int            // good requests among those that ended in the window
	outputChars                      int64          // Σ output_char_count of the requests throughput counts
	charsMissing                     bool           // one of them had no output_char_count
	absorb                           *absorbWindows // nil: not asked
	prompts                          promptPairs    // client vs server prompt counts
	feat                             features       // tool calls, structured output, batch (docs/scenario.md)
	rag                              ragTally       // RAG turns' steps and whole latency (stage_rag.go)
	images                           imageTally     // vision requests' images, by images per request (stage_images.go)
}

type interval struct{ start, end int64 }

// turnCache sums one turn index's prompt and cached tokens.
type turnCache struct {
	requests       int
	prompt, cached int64
}

// NewStage starts a stage whose t0 is known (in.T0Ns set).
func NewStage(in StageInput) *Stage {
	s := &Stage{in: in, limits: in.SLO.Limits(), sessions: map[string]*interval{}, turns: map[int]*turnCache{}}
	t0 := in.T0Ns.V
	s.w = t0 + int64(in.Warmup)
	s.e = s.w + int64(in.Duration)
	eff := s.e
	if in.InterruptNs.OK && in.InterruptNs.V < eff {
		eff = in.InterruptNs.V
		s.s.Partial = true
	}
	s.s.Window.T0Ns, s.s.Window.WNs, s.s.Window.ENs, s.s.Window.EEffNs = t0, s.w, s.e, eff
	s.s.Window.Seconds = math.Max(0, float64(eff-s.w)/1e9)
	s.s.ITLMethod = ITLExact
	s.itl.limit = exactITLLimit
	if in.NeverStarted >= 0 {
		s.s.NeverStarted = Some(in.NeverStarted)
	}
	s.absorb = newAbsorbWindows(s.limits, in.AbsorbWindow, t0, eff)
	return s
}

func (s *Stage) inWindow(ns int64) bool { return ns >= s.w && ns < s.s.Window.EEffNs }

// issueNs is when the request was issued: credit_issued_ns, or its start when a file lacks it.
func issueNs(r *Record) int64 {
	if r.CreditIssuedNs != 0 {
		return r.CreditIssuedNs
	}
	return r.RequestStartNs
}

// endNs is when the request stopped occupying the server: its end, its cancellation, or (neither
// known) its start.
func endNs(r *Record) int64 {
	switch {
	case r.RequestEndNs.OK:
		return r.RequestEndNs.V
	case r.CancellationTimeNs.OK:
		return r.CancellationTimeNs.V
	}
	return r.RequestStartNs
}

// Add counts one record.
func (s *Stage) Add(r *Record) {
	sum := &s.s
	if r.Step != "" { // a RAG turn's step: summed apart from the chat requests (stage_rag.go)
		inWindow := r.RequestStartNs >= s.w && r.RequestStartNs < sum.Window.EEffNs
		if inWindow {
			s.rag.addStep(r)
		}
		if r.SummedApart() {
			if inWindow {
				s.lags(r) // its wait for its schedule is the client's lateness all the same
			}
			return
		}
		// A failed step is its turn's failure — the chat request it kept from going — and counts
		// as one below, so a RAG stage whose embedding server is down fails its error rate.
	}
	sum.Requests.Total++
	s.feat.add(r)
	widenSession(s.sessions, r)
	s.inFlight(r)
	s.absorb.add(r)
	if s.anomalous(r) {
		sum.ClockAnomalies++
	}
	good := meetsLimits(s.limits, r) // counted only for successes, below
	if r.OK() && r.RequestEndNs.OK && s.inWindow(r.RequestEndNs.V) {
		s.throughput(r, good)
	}
	switch {
	case r.RequestStartNs < s.w:
		sum.Requests.Warmup++
		return
	case r.RequestStartNs >= sum.Window.EEffNs:
		sum.Requests.Late++
		return
	}
	sum.Requests.InWindow++
	s.lags(r)
	if !s.outcome(r) {
		return
	}
	if good {
		s.goodStarted++
	}
	s.success(r)
	s.feat.success(r)
}

// inFlight takes the part of the request's time, start to end, that falls in the window.
func (s *Stage) inFlight(r *Record) {
	start, end := max(r.RequestStartNs, s.w), min(endNs(r), s.s.Window.EEffNs)
	if end <= start {
		return
	}
	s.flightStarts, s.flightEnds = append(s.flightStarts, start), append(s.flightEnds, end)
	s.flightArea += end - start
}

// lags files the in-window request's send lag (issue − intended start), and its start or think lag
// by whether it opens its session.
func (s *Stage) lags(r *Record) {
	if !r.IntendedStartNs.OK {
		return
	}
	lag := Ms(issueNs(r) - r.IntendedStartNs.V)
	if r.SlotWaitNs.OK {
		wait := Ms(r.SlotWaitNs.V)
		s.slotWait, s.clientLag = append(s.slotWait, wait), append(s.clientLag, max(0, lag-wait))
	}
	if r.TurnIndex != 0 {
		s.thinkLag = append(s.thinkLag, lag)
		return
	}
	s.startLag = append(s.startLag, lag)
	if lag > StartLagWarnMs {
		s.s.QueuedSessions++
	}
}

// outcome counts how the in-window request ended; true when it succeeded.
func (s *Stage) outcome(r *Record) bool {
	sum := &s.s
	if r.Error != nil {
		if sum.ErrorKinds == nil {
			sum.ErrorKinds = map[string]int{}
		}
		kind := r.Error.Type
		if r.Error.Code.OK {
			kind = fmt.Sprintf("%d %s", r.Error.Code.V, r.Error.Type)
		}
		sum.ErrorKinds[kind]++
	}
	switch {
	case r.WasCancelled:
		sum.Requests.Cancelled++
		if r.Error != nil && r.Error.Message == CancelledByInterrupt {
			sum.Requests.Interrupted++
		}
		sum.Censored = true
		return false
	case r.Error != nil:
		sum.Requests.Errors++
		if r.Error.Code.OK && r.Error.Code.V == StatusTooManyRequests {
			sum.Requests.RateLimited++
		}
		return false
	}
	sum.Requests.Succeeded++
	return true
}

// success takes the latencies, gaps and usage of a successful in-window request.
func (s *Stage) success(r *Record) {
	sum := &s.s
	appendOpt(&s.latTTFO, r.TTFO)
	appendOpt(&s.latE2E, r.RequestLatency)
	appendOpt(&s.itlPerReq, r.InterTokenLatency)
	appendOpt(&s.tpot, RequestTPOT(r))
	appendOpt(&s.ttst, r.TTST)
	appendOpt(&s.perUser, r.ThroughputPerUser)
	appendOptInt(&s.isl, r.InputSequenceLength)
	appendOptInt(&s.osl, r.OutputSequenceLength)
	s.addTurn(r)
	s.rag.addTurn(r)
	s.images.add(r)
	if r.TTFT.OK {
		if r.TurnIndex == 0 {
			s.ttftFirst = append(s.ttftFirst, r.TTFT.V)
		} else {
			s.ttftLater = append(s.ttftLater, r.TTFT.V)
		}
	}
	if r.IntendedStartNs.OK {
		late := Ms(r.RequestStartNs - r.IntendedStartNs.V) // the wait before the send
		if r.TTFT.OK {
			s.ttftIntended = append(s.ttftIntended, late+r.TTFT.V)
		}
		if r.RequestLatency.OK {
			s.e2eIntended = append(s.e2eIntended, late+r.RequestLatency.V)
		}
	}
	if r.ReasoningTokenCount.OK && r.ReasoningTokenCount.V > 0 {
		sum.ReasoningSeen = true
	}
	s.addRecordGaps(r)
	if r.UsageCompletionTokens.OK || r.RetrievalItems.OK && r.UsagePromptTokens.OK { // a retrieval answer's usage has prompt tokens only
		sum.UsageReported++
	} else {
		sum.MissingUsage++
	}
	if r.UsageCachedTokens.OK {
		sum.CachedReported++
	}
	s.prompts.add(r)
	if !r.UsagePromptTokens.OK {
		return
	}
	prompt, cached := int64(r.UsagePromptTokens.V), int64(0)
	if r.UsageCachedTokens.OK {
		cached = min(int64(r.UsageCachedTokens.V), prompt) // a server's cached > prompt must not pass 100 %
	}
	s.promptCount++
	s.promptSum, s.cachedSum = s.promptSum+prompt, s.cachedSum+cached
	tc := s.turns[r.TurnIndex]
	if tc == nil {
		tc = &turnCache{}
		s.turns[r.TurnIndex] = tc
	}
	tc.requests, tc.prompt, tc.cached = tc.requests+1, tc.prompt+prompt, tc.cached+cached
}

func appendOpt(to *[]float64, v Opt[float64]) {
	if v.OK {
		*to = append(*to, v.V)
	}
}

func appendOptInt(to *[]float64, v Opt[int]) {
	if v.OK {
		*to = append(*to, float64(v.V))
	}
}

// throughput counts a successful request that ended in the window.
func (s *Stage) throughput(r *Record, good bool) {
	t := &s.s.Throughput
	t.Requests++
	s.images.addEnded(r)
	if r.InputSequenceLength.OK {
		t.InputTokens += r.InputSequenceLength.V
	}
	if r.OutputSequenceLength.OK {
		t.OutputTokens += r.OutputSequenceLength.V
	}
	if r.OutputChars.OK {
		s.outputChars += int64(r.OutputChars.V)
	} else {
		s.charsMissing = true
	}
	if good {
		s.goodEnded++
	}
}

func nsOf(ms float64) int64 { return max(1, int64(math.Round(ms*1e6))) }

// sessionKey names the session instance a record belongs to: its correlation id (one per session
// instance; AIPerf's conversation id names the dataset entry, which several instances may replay),
// else its conversation id.
func sessionKey(r *Record) string {
	if r.XCorrelationID != "" {
		return r.XCorrelationID
	}
	return r.ConversationID
}

// widenSession widens the interval of the record's session instance (keyed by correlation id, else
// conversation id; a record with neither has no session): first issue to last end.
func widenSession(sessions map[string]*interval, r *Record) {
	key := sessionKey(r)
	if key == "" {
		return
	}
	end := r.RequestStartNs
	if r.RequestEndNs.OK {
		end = r.RequestEndNs.V
	}
	iv, ok := sessions[key]
	if !ok {
		sessions[key] = &interval{issueNs(r), end}
		return
	}
	iv.start, iv.end = min(iv.start, issueNs(r)), max(iv.end, end)
}

func (s *Stage) anomalous(r *Record) bool {
	if r.RequestEndNs.OK && r.RequestEndNs.V < r.RequestStartNs {
		return true
	}
	if r.CreditIssuedNs != 0 && r.RequestStartNs < r.CreditIssuedNs {
		return true
	}
	if r.TTFT.OK && r.RequestLatency.OK && r.TTFT.V > r.RequestLatency.V+1e-9 {
		return true
	}
	for _, g := range r.InterChunkLatency {
		if g < 0 {
			return true
		}
	}
	return false
}
