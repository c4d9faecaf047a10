package metrics

// StageSummary is every number of one stage (SPEC §7, §13). Values that could not be computed are
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
		Total       int `json:"total"`        // records in the file
		InWindow    int `json:"in_window"`    // started in [W, E_eff)
		Succeeded   int `json:"succeeded"`    // of those
		Errors      int `json:"errors"`       // of those, cancelled excluded
		Cancelled   int `json:"cancelled"`    // of those
		RateLimited int `json:"rate_limited"` // of the errors: HTTP 429
		Warmup      int `json:"warmup"`       // started before W
		Late        int `json:"late"`         // started at or after E_eff
	} `json:"requests"`
	TTFT Dist `json:"ttft_ms"`
	TTFO Dist `json:"ttfo_ms"`
	E2E  Dist `json:"e2e_ms"`
	ITL  Dist `json:"itl_ms"` // pooled gaps between token events
	// TPOT is time per output token, per request: (E2E − TTFT) ÷ (OSL − 1) with OSL =
	// output_sequence_length (reasoning included) — AIPerf's inter_token_latency, vLLM's TPOT.
	TPOT      Dist   `json:"tpot_ms"`
	ITLMethod string `json:"itl_method"`
	// ITLPerRequest is the records' own inter_token_latency (the same quantity as TPOT when the
	// records follow RECORDS.md), kept under its old key for readers of earlier stage.json files.
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
	// CacheHitByTurn is the cache hit by turn index: entry i is turn i ([] when no request had one).
	CacheHitByTurn []TurnCacheHit `json:"cache_hit_by_turn"`
	Active         struct {
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
	Cost       CostResult     `json:"cost"`
	Warnings   []string       `json:"warnings"`
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
	// GoodRequests and GoodputPerSec are the good requests that ended in the window, under the
	// turn-1 rule that with no per-request limit every request is good; Goodput is the block that
	// says "unknown" instead.
	GoodRequests  int     `json:"good_requests"`
	GoodputPerSec float64 `json:"goodput_per_sec"`
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

// Replay pacing limits (SPEC §13): past either, a replay stage is not a valid replay of its trace.
const (
	ReplayLagP99LimitMs = 10.0
	ReplayLateLimitMs   = 1000.0
)
