package metrics

import (
	"math"
	"sort"
)

// The request features of docs/scenario.md in a stage's numbers: agent sessions' tool calls and rounds
// (records with tool_round), structured output's validity (structured_valid) and batch work (a
// stage of load.mode batch, whose every record counts).

// ToolsSummary is an agent stage's tool calls, over the whole turns the window holds: a turn is a
// user turn's requests, its first (tool_round 0) and the rounds sent after tool results (tool_round
// > 0). A turn counts when its first request started in the window and succeeded, and it ran to its
// end: its last answer called no tool, or its round was the stage's highest. So a turn begun in the
// warmup, whose rounds fall in the window, or one the window's end cut short, is left out, and
// rounds per turn never reads past session.tool_rounds' cap.
type ToolsSummary struct {
	Turns  int `json:"turns"`
	Calls  int `json:"calls"`  // Σ tool_call_count over the turns' successful requests
	Rounds int `json:"rounds"` // the turns' successful requests with tool_round > 0
	// CallsPerTurn and RoundsPerTurn divide by the turns; null without one.
	CallsPerTurn  Opt[float64] `json:"calls_per_turn"`
	RoundsPerTurn Opt[float64] `json:"rounds_per_turn"`
	// InvalidArguments is Σ tool_call_invalid_arguments: calls whose arguments are not valid JSON;
	// InvalidArgumentsShare their share of the calls (null without a call).
	InvalidArguments      int          `json:"invalid_arguments"`
	InvalidArgumentsShare Opt[float64] `json:"invalid_arguments_share"`
	// TTFToolCall is time_to_first_tool_call: first tool-call token event − request start.
	TTFToolCall Dist `json:"ttf_tool_call_ms"`
}

// RoundSplit is a latency split by what the request answers: a user turn (tool_round 0) or tool
// results (tool_round > 0).
type RoundSplit struct {
	UserTurn  Dist `json:"user_turn"`
	ToolRound Dist `json:"tool_round"`
}

// RoundCacheHit is the cache hit of one tool round (0: the user turn's first request): Σ cached ÷ Σ
// prompt tokens over its successful in-window requests with prompt usage.
type RoundCacheHit struct {
	Round    int          `json:"round"`
	Requests int          `json:"requests"`
	CacheHit Opt[float64] `json:"cache_hit"`
}

// StructuredSummary counts the successful in-window answers checked against response_format.
type StructuredSummary struct {
	Valid      int          `json:"valid"`
	Invalid    int          `json:"invalid"`
	ShareValid Opt[float64] `json:"share_valid"`
}

// BatchResult is a batch stage's job (load.mode batch): every record counts, warmup and window
// aside. Completion runs from the first request's issue to the last request's end.
type BatchResult struct {
	Requests     int     `json:"requests"`  // records
	Succeeded    int     `json:"succeeded"` // of those
	CompletionS  float64 `json:"completion_s"`
	ReqPerSec    float64 `json:"req_per_sec"`   // succeeded ÷ completion_s
	OutputTokens int     `json:"output_tokens"` // Σ output_sequence_length of the successes
	OutTokPerSec float64 `json:"out_tok_per_sec"`
	// CostPerJobUSD is gpu_hourly_usd × gpu_count × completion_s ÷ 3600; null without a price.
	CostPerJobUSD *float64 `json:"cost_per_job_usd"`
}

// features accumulates a stage's numbers of the request features (tools, structured output, model mix, batch; docs/scenario.md).
type features struct {
	toolsSeen, roundsSeen bool
	// agentTurns tallies each agent turn's successful requests, wherever they started; highestRound
	// is the highest tool_round of any (a turn that reached it ran to the cap).
	agentTurns          map[agentTurnKey]*agentTurn
	highestRound        int
	ttfTool             []float64
	ttftUser, ttftRound []float64
	e2eUser, e2eRound   []float64
	byRound             map[int]*turnCache
	structured          *StructuredSummary
	reuse               reuseTally // repeated conversations' cache hit against new ones'
	// batch: over every record
	first, last        int64
	any                bool
	records, succeeded int
	outputTokens       int
}

// add looks at every record (the batch job counts them all).
func (f *features) add(r *Record) {
	if r.ToolRound.OK {
		f.toolsSeen = true
		f.roundsSeen = f.roundsSeen || r.ToolRound.V > 0
	}
	f.records++
	if !f.any || issueNs(r) < f.first {
		f.first = issueNs(r)
	}
	if !f.any || endNs(r) > f.last {
		f.last = endNs(r)
	}
	f.any = true
	if r.OK() && r.ToolRound.OK {
		f.tallyTurn(r)
	}
	if r.OK() {
		f.succeeded++
		if r.OutputSequenceLength.OK {
			f.outputTokens += r.OutputSequenceLength.V
		}
	}
}

// success takes a successful in-window request's tool calls, round and validity, and whether its
// session repeated a conversation.
func (f *features) success(r *Record) {
	f.reuse.add(r)
	if r.StructuredValid.OK {
		if f.structured == nil {
			f.structured = &StructuredSummary{}
		}
		if r.StructuredValid.V {
			f.structured.Valid++
		} else {
			f.structured.Invalid++
		}
	}
	if !r.ToolRound.OK {
		return
	}
	appendOpt(&f.ttfTool, r.TTFToolCall)
	if r.ToolRound.V == 0 {
		f.turnOf(r).begunInWindow = true
		appendOpt(&f.ttftUser, r.TTFT)
		appendOpt(&f.e2eUser, r.RequestLatency)
	} else {
		appendOpt(&f.ttftRound, r.TTFT)
		appendOpt(&f.e2eRound, r.RequestLatency)
	}
	if !r.UsagePromptTokens.OK {
		return
	}
	if f.byRound == nil {
		f.byRound = map[int]*turnCache{}
	}
	tc := f.byRound[r.ToolRound.V]
	if tc == nil {
		tc = &turnCache{}
		f.byRound[r.ToolRound.V] = tc
	}
	prompt, cached := int64(r.UsagePromptTokens.V), int64(0)
	if r.UsageCachedTokens.OK {
		cached = min(int64(r.UsageCachedTokens.V), prompt)
	}
	tc.requests, tc.prompt, tc.cached = tc.requests+1, tc.prompt+prompt, tc.cached+cached
}

// agentTurnKey names a user turn of a session instance (sessionKey).
type agentTurnKey struct {
	session string
	turn    int
}

// agentTurn is one user turn's successful requests: its rounds, their tool calls, and its last
// (highest) round so far and whether that answer called a tool (the turn went on, or was cut).
type agentTurn struct {
	begunInWindow        bool // its first request started in the window (features.success)
	rounds, calls        int
	invalid              int
	lastRound            int
	lastCalled, lastSeen bool
}

// tallyTurn adds a successful agent request to its turn. Records may come in any order (the
// reader is parallel), so the last round is the highest seen, not the latest read.
func (f *features) tallyTurn(r *Record) {
	t := f.turnOf(r)
	round := r.ToolRound.V
	if round > 0 {
		t.rounds++
	}
	if r.ToolCalls.OK {
		t.calls += r.ToolCalls.V
	}
	if r.ToolCallsInvalid.OK {
		t.invalid += r.ToolCallsInvalid.V
	}
	if !t.lastSeen || round > t.lastRound {
		t.lastRound, t.lastCalled, t.lastSeen = round, r.ToolCalls.OK && r.ToolCalls.V > 0, true
	}
	f.highestRound = max(f.highestRound, round)
}

// turnOf is r's turn's tally, new if need be.
func (f *features) turnOf(r *Record) *agentTurn {
	if f.agentTurns == nil {
		f.agentTurns = map[agentTurnKey]*agentTurn{}
	}
	k := agentTurnKey{sessionKey(r), r.TurnIndex}
	t := f.agentTurns[k]
	if t == nil {
		t = &agentTurn{}
		f.agentTurns[k] = t
	}
	return t
}

// share is part ÷ whole, null when the whole is 0.
func share(part, whole int) Opt[float64] {
	if whole <= 0 {
		return Opt[float64]{}
	}
	return Some(float64(part) / float64(whole))
}

// result fills the summary's request-feature parts.
func (f *features) result(sum *StageSummary, in StageInput) {
	if f.toolsSeen {
		t := &ToolsSummary{TTFToolCall: summarize(f.ttfTool)}
		for _, turn := range f.agentTurns {
			if turn.begunInWindow && (!turn.lastCalled || turn.lastRound >= f.highestRound) {
				t.Turns, t.Rounds = t.Turns+1, t.Rounds+turn.rounds
				t.Calls, t.InvalidArguments = t.Calls+turn.calls, t.InvalidArguments+turn.invalid
			}
		}
		t.InvalidArgumentsShare = share(t.InvalidArguments, t.Calls)
		if t.Turns > 0 {
			t.CallsPerTurn = Some(float64(t.Calls) / float64(t.Turns))
			t.RoundsPerTurn = Some(float64(t.Rounds) / float64(t.Turns))
		}
		sum.Tools = t
		sum.CacheHitByRound = make([]RoundCacheHit, 0, len(f.byRound))
		for round, tc := range f.byRound {
			e := RoundCacheHit{Round: round, Requests: tc.requests}
			if tc.prompt > 0 {
				e.CacheHit = Some(float64(tc.cached) / float64(tc.prompt))
			}
			sum.CacheHitByRound = append(sum.CacheHitByRound, e)
		}
		sort.Slice(sum.CacheHitByRound, func(i, j int) bool { return sum.CacheHitByRound[i].Round < sum.CacheHitByRound[j].Round })
	}
	if f.roundsSeen {
		sum.TTFTByRound = &RoundSplit{UserTurn: summarize(f.ttftUser), ToolRound: summarize(f.ttftRound)}
		sum.E2EByRound = &RoundSplit{UserTurn: summarize(f.e2eUser), ToolRound: summarize(f.e2eRound)}
	}
	sum.ReuseCache = f.reuse.result()
	if st := f.structured; st != nil {
		st.ShareValid = share(st.Valid, st.Valid+st.Invalid)
		sum.Structured = st
	}
	if in.Batch && f.any {
		b := &BatchResult{Requests: f.records, Succeeded: f.succeeded, OutputTokens: f.outputTokens,
			CompletionS: math.Max(0, float64(f.last-f.first)/1e9)}
		if b.CompletionS > 0 {
			b.ReqPerSec = float64(b.Succeeded) / b.CompletionS
			b.OutTokPerSec = float64(b.OutputTokens) / b.CompletionS
		}
		if !in.Cost.Unpriced && b.Succeeded > 0 { // a job that answered nothing has no cost per job
			v := in.Cost.GPUHourlyUSD * float64(max(in.Cost.GPUCount, 1)) * b.CompletionS / 3600
			b.CostPerJobUSD = &v
		}
		sum.Batch = b
	}
}
