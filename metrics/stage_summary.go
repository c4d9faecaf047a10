package metrics

import (
	"fmt"
	"sort"
	"strings"
)

// StageSummary is every number of one stage (docs/measurement.md). Values that could not be computed are
// absent (Opt) or have N = 0, never 0 standing for "unknown".
type StageSummary struct {
	Window struct {
		T0Ns    int64   `json:"t0_ns"`
		WNs     int64   `json:"w_ns"`
		ENs     int64   `json:"e_ns"`
		EEffNs  int64   `json:"e_eff_ns"`
		Seconds float64 `json:"seconds"`
	} `json:"window"`
	Partial  bool `json:"partial"`
	Requests struct {
		Total     int `json:"total"`     // records in the file, a RAG turn's successful steps aside (summary.rag)
		InWindow  int `json:"in_window"` // started in [W, E_eff)
		Succeeded int `json:"succeeded"` // of those
		Errors    int `json:"errors"`    // of those, cancelled excluded
		Cancelled int `json:"cancelled"` // of those
		// Interrupted: of the cancelled, those the user's interrupt cut off (CancelledByInterrupt).
		// They never had the chance to finish, so the error rate and the goodput share leave them out.
		Interrupted int `json:"interrupted,omitempty"`
		RateLimited int `json:"rate_limited"` // of the errors: HTTP 429
		Warmup      int `json:"warmup"`       // started before W
		Late        int `json:"late"`         // started at or after E_eff
	} `json:"requests"`
	TTFT Dist `json:"ttft_ms"`
	TTFO Dist `json:"ttfo_ms"`
	// TTST (time to second token), ISL and OSL (input and output sequence length, tokens, reasoning
	// included) and PerUser (output tokens per second per user: the records' 1 ÷ ITL) are over the
	// same requests as TTFT: AIPerf's summary reports each.
	TTST    Dist `json:"ttst_ms"`
	ISL     Dist `json:"isl_tokens"`
	OSL     Dist `json:"osl_tokens"`
	PerUser Dist `json:"out_tok_per_sec_per_user"`
	E2E     Dist `json:"e2e_ms"`
	ITL     Dist `json:"itl_ms"` // pooled per token: a gap before a chunk of k tokens is k gaps of 1/k
	// InterChunk is the pooled gaps between token events as they are (AIPerf's inter_chunk_latency);
	// absent when every chunk carried one token, where it is ITL.
	InterChunk *Dist `json:"inter_chunk_ms,omitempty"`
	// TPOT is time per output token, per request: (E2E − TTFT) ÷ (OSL − 1) with OSL =
	// output_sequence_length (reasoning included) — AIPerf's inter_token_latency, vLLM's TPOT.
	TPOT      Dist   `json:"tpot_ms"`
	ITLMethod string `json:"itl_method"`
	// ITLPerRequest is the records' own inter_token_latency (the same quantity as TPOT when the
	// records follow docs/records.md), kept under its old key for readers of earlier stage.json files.
	ITLPerRequest Dist `json:"itl_per_request_ms"`
	// TTFTFromIntended and E2EFromIntended are TTFT and E2E measured from intended_start_ns (when the
	// schedule wanted the request out) rather than from its send: a client that fell behind shows
	// here (coordinated omission), not in TTFT.
	TTFTFromIntended Dist `json:"ttft_from_intended_ms"`
	E2EFromIntended  Dist `json:"e2e_from_intended_ms"`
	// TTFTByTurn splits TTFT into first turns (turn_index 0) and later ones (cache-warm).
	TTFTByTurn    TurnSplit `json:"ttft_ms_by_turn"`
	ReasoningSeen bool      `json:"reasoning_seen"`
	// Censored: some requests were cancelled, so latency percentiles are lower bounds.
	Censored   bool         `json:"censored"`
	ErrorRate  Opt[float64] `json:"error_rate"`
	Throughput Throughput   `json:"throughput"`
	// Goodput counts the requests that met every per-request limit of the SLO (DistServe).
	Goodput        Goodput      `json:"goodput"`
	CacheHit       Opt[float64] `json:"cache_hit"` // 0–1
	CachedReported int          `json:"cached_reported"`
	UsageReported  int          `json:"usage_reported"`
	MissingUsage   int          `json:"missing_usage"`
	// Tools is an agent stage's tool calls and rounds (docs/scenario.md); absent when no record has tool_round.
	Tools *ToolsSummary `json:"tools,omitempty"`
	// TTFTByRound and E2EByRound split TTFT and E2E by user turn (tool_round 0) and tool round
	// (tool_round > 0); absent when no record was a tool round.
	TTFTByRound *RoundSplit `json:"ttft_ms_by_round,omitempty"`
	E2EByRound  *RoundSplit `json:"e2e_ms_by_round,omitempty"`
	// CacheHitByRound is the cache hit by tool round (0: the user turn's request), in round order;
	// absent when no record has tool_round.
	CacheHitByRound []RoundCacheHit `json:"cache_hit_by_round,omitempty"`
	// ReuseCache is the cache hit of the requests whose session repeated a conversation the run had
	// sent (records with dataset_session) against the others'; absent when none did.
	ReuseCache *ReuseCache `json:"reuse_cache_hit,omitempty"`
	// RAG is a RAG stage's pipeline: each step's requests and latency, and the whole turn's
	// latency; absent when no record was a RAG turn's.
	RAG *RAGSummary `json:"rag,omitempty"`
	// Images is a vision stage's images: by images per request, bytes, image tokens, cache hit;
	// absent when no request carried one.
	Images *ImagesSummary `json:"images,omitempty"`
	// Structured counts the answers checked against response_format; absent when none was.
	Structured *StructuredSummary `json:"structured,omitempty"`
	// Batch is a batch stage's job over every record; stage.json has it beside the summary (its
	// top-level "batch"), so it is not written here twice.
	Batch *BatchResult `json:"-"`
	// CacheHitByTurn is the cache hit by turn index: entry i is turn i ([] when no request had one).
	CacheHitByTurn []TurnCacheHit `json:"cache_hit_by_turn"`
	// ByTurn is the mean TTFT and request size by turn index; absent when no record carried
	// request_bytes.
	ByTurn []TurnNumbers `json:"by_turn,omitempty"`
	// PromptTokensAgreement compares usage.prompt_tokens with the client's count of the same
	// messages; absent when no request had both.
	PromptTokensAgreement *PromptAgreement `json:"prompt_tokens_agreement,omitempty"`
	Active                struct {
		Mean float64 `json:"mean"`
		Min  int     `json:"min"`
		Max  int     `json:"max"`
	} `json:"active_sessions"`
	// InFlight is the requests open at once (request_start to request_end), time-weighted over
	// [W, E_eff): the number other tools call concurrency.
	InFlight InFlight `json:"in_flight"`
	StartLag Dist     `json:"start_lag_ms"`
	ThinkLag Dist     `json:"think_lag_ms"`
	// SendLag is credit_issued_ns − intended_start_ns over the in-window requests that have an
	// intended start: how late the client sent against its schedule.
	SendLag Dist `json:"send_lag_ms"`
	// SendLagSlot and SendLagClient split the send lag where the records say how (slot_wait_ns):
	// the wait for an in-flight slot (raise load.max_in_flight, or the server is slow to answer),
	// and the rest, the client's own work and scheduling (a busier or smaller machine). Absent when
	// no record says.
	SendLagSlot   *Dist `json:"send_lag_slot_ms,omitempty"`
	SendLagClient *Dist `json:"send_lag_client_ms,omitempty"`
	// ReplayValid is set for replay stages only (null otherwise): false when the client could not
	// keep the trace's pace (send lag p99 > ReplayLagP99LimitMs or a request more than
	// ReplayLateLimitMs late), and ReplayInvalidReason says which.
	ReplayValid         Opt[bool] `json:"replay_valid"`
	ReplayInvalidReason string    `json:"replay_invalid_reason,omitempty"`
	QueuedSessions      int       `json:"queued_sessions"`
	NeverStarted        Opt[int]  `json:"never_started"` // null: unknown
	ClockAnomalies      int       `json:"clock_anomalies"`
	// ErrorKinds counts in-window errors and cancellations by kind ("500 Internal Server Error",
	// "TransportError", ...), for the report and the handoff.
	ErrorKinds map[string]int `json:"error_kinds,omitempty"`
	SLO        SLOResult      `json:"slo"`
	// Absorb is the time to absorb a rising load (docs/measurement.md): absent unless the stage's load rose and
	// the SLO sets a latency limit.
	Absorb   *Absorb    `json:"absorb,omitempty"`
	Cost     CostResult `json:"cost"`
	Warnings []string   `json:"warnings"`
}

// Throughput is counted over successful requests that ended in the window, divided by its seconds.
type Throughput struct {
	Requests     int     `json:"requests"`
	InputTokens  int     `json:"input_tokens"`  // Σ input_sequence_length
	OutputTokens int     `json:"output_tokens"` // Σ output_sequence_length
	ReqPerSec    float64 `json:"req_per_sec"`
	InTokPerSec  float64 `json:"input_tok_per_sec"`
	OutTokPerSec float64 `json:"out_tok_per_sec"`
	// TotalTokPerSec is input plus output tokens per second.
	TotalTokPerSec float64 `json:"total_tok_per_sec"`
	// OutCharsPerSec is Σ output_char_count per second: comparable across servers whose tokenizers
	// differ. Null unless every counted request has output_char_count (AIPerf's files do not).
	OutCharsPerSec Opt[float64] `json:"out_chars_per_sec"`
	// GoodRequests and GoodputPerSec are the good requests that ended in the window, and their
	// rate (the same as Goodput.ReqPerSec); null, like Goodput, when the SLO sets no per-request
	// limit: "good" would mean nothing.
	GoodRequests  Opt[int]     `json:"good_requests"`
	GoodputPerSec Opt[float64] `json:"goodput_per_sec"`
}

// Goodput is DistServe's goodput: a request is good when its own TTFT, TTFO, TPOT, mean ITL and E2E
// meet every per-request limit the SLO sets (a p95 limit of 500 ms means this request's value ≤
// 500 ms). Both are null when the SLO sets no latency limit: goodput is then unknown, not throughput.
type Goodput struct {
	// ReqPerSec is the good requests that ended in the window ÷ the window's seconds.
	ReqPerSec Opt[float64] `json:"req_per_sec"`
	// Share is the good requests ÷ the requests that started in the window (errors and cancelled
	// ones count, as not good).
	Share Opt[float64] `json:"share"`
}

// TurnSplit is a latency by turn: the sessions' first turns and the later ones.
type TurnSplit struct {
	First Dist `json:"first"` // turn_index 0
	Later Dist `json:"later"` // turn_index > 0
}

// TurnCacheHit is the cache hit of one turn index: Σ cached ÷ Σ prompt tokens over its successful
// in-window requests whose usage has prompt tokens.
type TurnCacheHit struct {
	Turn     int          `json:"turn"`
	Requests int          `json:"requests"`  // successful in-window requests of this turn with prompt usage
	CacheHit Opt[float64] `json:"cache_hit"` // 0–1; null when none of them had prompt tokens
}

// InFlight is the time-weighted mean and the maximum of requests open at once.
type InFlight struct {
	Mean float64 `json:"mean"`
	Max  int     `json:"max"`
}

// Replay pacing limits (docs/measurement.md): past either, a replay stage is not a valid replay of its trace.
const (
	ReplayLagP99LimitMs = 10.0
	ReplayLateLimitMs   = 1000.0
)

// Summary computes the stage's numbers. Call it once, after the last Add.
func (s *Stage) Summary() *StageSummary {
	sum := &s.s
	sum.TTFTByTurn = TurnSplit{First: summarize(s.ttftFirst), Later: summarize(s.ttftLater)}
	sum.TTFT, sum.TTFO, sum.E2E = summarizeUnion(s.ttftFirst, s.ttftLater), summarize(s.latTTFO), summarize(s.latE2E)
	sum.ITLPerRequest, sum.TPOT = summarize(s.itlPerReq), summarize(s.tpot)
	sum.TTST, sum.ISL, sum.OSL, sum.PerUser = summarize(s.ttst), summarize(s.isl), summarize(s.osl), summarize(s.perUser)
	sum.TTFTFromIntended, sum.E2EFromIntended = summarize(s.ttftIntended), summarize(s.e2eIntended)
	sum.ITL, sum.InterChunk = s.pooledITL(), s.interChunk()
	sum.StartLag, sum.ThinkLag = summarize(s.startLag), summarize(s.thinkLag)
	sum.SendLag = summarizeUnion(s.startLag, s.thinkLag)
	if len(s.slotWait) > 0 {
		slot, client := summarize(s.slotWait), summarize(s.clientLag)
		sum.SendLagSlot, sum.SendLagClient = &slot, &client
	}
	failed := sum.Requests.Errors + sum.Requests.Cancelled - sum.Requests.Interrupted
	if counted := sum.Requests.Succeeded + failed; counted > 0 {
		sum.ErrorRate = Some(float64(failed) / float64(counted))
	}
	if s.promptCount > 0 && s.promptSum > 0 {
		sum.CacheHit = Some(float64(s.cachedSum) / float64(s.promptSum))
	}
	sum.CacheHitByTurn = s.cacheHitByTurn()
	sum.ByTurn = s.byTurn()
	if !s.in.TemplatedPrompts {
		sum.PromptTokensAgreement = s.prompts.result()
	}
	s.feat.result(sum, s.in)
	sum.RAG = s.rag.result()
	sum.Images = s.images.result(sum.Window.Seconds)
	s.rates()
	s.activeSessions()
	s.inFlightLevels()
	s.replayValidity()
	sum.SLO = judge(s.in.SLO, sum)
	sum.Absorb = s.absorb.result()
	sum.Cost = cost(s.in.Cost, sum)
	sum.Images.priceByImages(sum.Cost.USDPer1KTurns)
	sum.Warnings = append(sum.Warnings, s.warnings()...)
	sum.Warnings = append(sum.Warnings, s.in.Warnings...)
	if sum.Warnings == nil {
		sum.Warnings = []string{} // a list is [] in JSON, never null
	}
	return sum
}

// pooledITL summarizes the pooled token gaps, from the HDR histogram once they outgrew exact keeping
// (which ITLMethod then says).
func (s *Stage) pooledITL() Dist {
	if s.itl.hdr != nil {
		s.s.ITLMethod = ITLHDR
	}
	return s.itl.dist()
}

// rates divides the window's counts by its seconds: throughput, and goodput when the SLO sets a
// per-request limit.
func (s *Stage) rates() {
	sum := &s.s
	t, secs := &sum.Throughput, sum.Window.Seconds
	if started := sum.Requests.InWindow - sum.Requests.Interrupted; len(s.limits) > 0 && started > 0 {
		sum.Goodput.Share = Some(float64(s.goodStarted) / float64(started))
	}
	if secs <= 0 {
		return
	}
	t.ReqPerSec = float64(t.Requests) / secs
	t.InTokPerSec = float64(t.InputTokens) / secs
	t.OutTokPerSec = float64(t.OutputTokens) / secs
	t.TotalTokPerSec = float64(t.InputTokens+t.OutputTokens) / secs
	if !s.charsMissing {
		t.OutCharsPerSec = Some(float64(s.outputChars) / secs)
	}
	if len(s.limits) > 0 {
		t.GoodRequests, t.GoodputPerSec = Some(s.goodEnded), Some(float64(s.goodEnded)/secs)
		sum.Goodput.ReqPerSec = t.GoodputPerSec
	}
}

// cacheHitByTurn lists the turn indices that had successful in-window requests with prompt usage,
// in order (a map, not a slice by index, so a file's absurd turn_index cannot cost memory).
func (s *Stage) cacheHitByTurn() []TurnCacheHit {
	out := make([]TurnCacheHit, 0, len(s.turns))
	for turn, tc := range s.turns {
		e := TurnCacheHit{Turn: turn, Requests: tc.requests}
		if tc.prompt > 0 {
			e.CacheHit = Some(float64(tc.cached) / float64(tc.prompt))
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Turn < out[j].Turn })
	return out
}

// replayValidity judges a replay stage's pacing (docs/measurement.md): the send lag's p99 within
// ReplayLagP99LimitMs and no request more than ReplayLateLimitMs late. Without intended starts there
// is nothing to judge, and it stays null.
func (s *Stage) replayValidity() {
	sum := &s.s
	if !s.in.Replay || !sum.SendLag.Known() {
		return
	}
	late := 0
	for _, lags := range [][]float64{s.startLag, s.thinkLag} { // sorted by summarize
		late += len(lags) - sort.Search(len(lags), func(i int) bool { return lags[i] > ReplayLateLimitMs })
	}
	var why []string
	if sum.SendLag.P99 > ReplayLagP99LimitMs {
		why = append(why, fmt.Sprintf("send lag p99 %.3f ms > %g ms", sum.SendLag.P99, ReplayLagP99LimitMs))
	}
	if late > 0 {
		noun := "requests"
		if late == 1 {
			noun = "request"
		}
		why = append(why, fmt.Sprintf("%d %s more than %g s late", late, noun, ReplayLateLimitMs/1000))
	}
	sum.ReplayValid = Some(len(why) == 0)
	if len(why) > 0 {
		sum.ReplayInvalidReason = strings.Join(why, "; ") // readers put "client could not keep the trace's pace: " before it
		if split := sum.SendLagSplit(); split != "" {
			sum.ReplayInvalidReason += " (" + split + ")"
		}
	}
}

// ShortWindowShare is the share of the measured window a typical request (E2E p50) may take before
// the stage warns that its throughput understates the load: with requests that long, few start and
// end inside the window.
const ShortWindowShare = 0.5

// UnjudgedErrorRateWarn is the error rate above which a stage whose SLO sets no error-rate limit
// warns that its errors were not judged.
const UnjudgedErrorRateWarn = 0.01

func (s *Stage) warnings() []string {
	sum := &s.s
	var out []string
	if sum.ThinkLag.Known() && sum.ThinkLag.P99 > ThinkLagWarnMs {
		out = append(out, fmt.Sprintf("think lag p99 is %.0f ms (> %.0f ms): turns went out later than their think time allowed — the client may be the bottleneck", sum.ThinkLag.P99, ThinkLagWarnMs))
	}
	if sum.StartLag.Known() && sum.StartLag.P95 > StartLagWarnMs {
		out = append(out, fmt.Sprintf("start lag p95 is %.0f ms (> %.0f ms): %d sessions waited to start — the cap (max_concurrency, or max_in_flight) was full or the client is the bottleneck", sum.StartLag.P95, StartLagWarnMs, sum.QueuedSessions))
	}
	if sum.NeverStarted.V > 0 {
		out = append(out, fmt.Sprintf("%d arrivals never started before the stage ended: they were still waiting for a slot (max_concurrency, or max_in_flight, was full)", sum.NeverStarted.V))
	}
	if sum.ReplayInvalidReason != "" {
		out = append(out, "replay is not valid: client could not keep the trace's pace: "+sum.ReplayInvalidReason+" (the server saw a different load than the trace's)")
	}
	if s.in.SLO.ErrorRateUnset && sum.ErrorRate.OK && sum.ErrorRate.V > UnjudgedErrorRateWarn {
		verdict := "no verdict"
		if sum.SLO.Verdict != SLONA {
			verdict = "its SLO " + sum.SLO.Verdict + " judges the successful requests only"
		}
		out = append(out, fmt.Sprintf("%.1f%% of requests failed and the SLO sets no error-rate limit: %s (set slo.error_rate, or --slo-error-rate)", 100*sum.ErrorRate.V, verdict))
	}
	if secs := sum.Window.Seconds; secs > 0 && sum.E2E.Known() && sum.E2E.P50/1000 >= ShortWindowShare*secs {
		out = append(out, fmt.Sprintf("requests take %.1f s (E2E p50), %.0f%% of the %.1f s window or more: throughput counts the requests that ended in the window, so it understates the load; lengthen load.stages[].duration (and a warmup of at least one E2E)",
			sum.E2E.P50/1000, 100*sum.E2E.P50/1000/secs, secs))
	}
	if sum.ClockAnomalies > 0 {
		out = append(out, fmt.Sprintf("%d records have times out of order (end before start, or TTFT after the last token): check the clock of whatever wrote them", sum.ClockAnomalies))
	}
	if n := sum.Requests.Cancelled - sum.Requests.Interrupted; n > 0 {
		out = append(out, fmt.Sprintf("%d requests were cancelled (still running when load.drain_timeout expired) and count as errors; latency percentiles are censored lower bounds", n))
	}
	if n := sum.Requests.Interrupted; n > 0 {
		out = append(out, fmt.Sprintf("%d requests were cut off by the interrupt: left out of the error rate and the goodput share (they never had the chance to finish); latency percentiles are censored lower bounds", n))
	}
	if sum.MissingUsage > 0 {
		out = append(out, fmt.Sprintf("%d of %d successful requests carried no server usage: output tokens are the client's count of streamed chunks, and cache hit %% is N/A without prompt usage", sum.MissingUsage, sum.Requests.Succeeded))
	}
	if sum.ITLMethod == ITLHDR {
		out = append(out, fmt.Sprintf("pooled ITL percentiles come from an HDR histogram with 3 significant digits (0.1 %% resolution): more than %d token gaps", exactITLLimit))
	}
	return out
}

// SendLagSplit says where the send lag went, when the records say: "waiting for an in-flight slot
// p99 0.0 ms, the client's own work p99 37.6 ms" ("" when they do not). The first says raise
// load.max_in_flight (or the server answers slowly); the second, a quieter or bigger machine.
func (s *StageSummary) SendLagSplit() string {
	if s.SendLagSlot == nil || s.SendLagClient == nil {
		return ""
	}
	return fmt.Sprintf("waiting for an in-flight slot p99 %.1f ms, the client's own work p99 %.1f ms", s.SendLagSlot.P99, s.SendLagClient.P99)
}
