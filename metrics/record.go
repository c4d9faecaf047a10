package metrics

import "encoding/json"

// Opt is a value that may be absent; an absent value is null in JSON (never a 0 or −1 standing for
// "unknown").
type Opt[T any] struct {
	V  T
	OK bool
}

// Some returns a present value.
func Some[T any](v T) Opt[T] { return Opt[T]{V: v, OK: true} }

// MarshalJSON writes the value, or null when absent.
func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if !o.OK {
		return []byte("null"), nil
	}
	return json.Marshal(o.V)
}

// UnmarshalJSON reads a value; null leaves it absent.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = Opt[T]{}
		return nil
	}
	o.OK = true
	return json.Unmarshal(b, &o.V)
}

// Record is one request, as AIPerf ≥ 0.4 writes it (docs/records.md), plus plload's intended_start_ns and
// persona. Times in *Ns are wall-clock epoch nanoseconds derived from one monotonic anchor; the metric
// times are milliseconds.
type Record struct {
	// metadata
	SessionNum         int
	XRequestID         string
	XCorrelationID     string
	ConversationID     string
	TurnIndex          int
	CreditIssuedNs     int64
	RequestStartNs     int64
	RequestAckNs       Opt[int64]
	RequestEndNs       Opt[int64]
	WorkerID           string
	RecordProcessorID  string
	BenchmarkPhase     string // PhaseWarmup or PhaseProfiling
	WasCancelled       bool
	CancellationTimeNs Opt[int64]
	IntendedStartNs    Opt[int64]
	// SlotWaitNs is the part of the send lag (credit_issued_ns − intended_start_ns) the request spent
	// waiting for an in-flight slot (load.max_in_flight, a stage's cap) after it was ready to go; the
	// rest is the client's own work and scheduling. Absent where the request had no intended start.
	SlotWaitNs Opt[int64]
	Persona    Opt[int]
	// DatasetSession is the dataset (pool) session a reused session replays; absent otherwise.
	DatasetSession Opt[int]
	// Retried: the request went out a second time, at once, on a new connection, because the reused
	// connection it first went out on failed before any response byte. Its start is the first try's.
	Retried bool
	// Model is the model this request asked for, when target.models mixes several ("model"; "" is not
	// written).
	Model string
	// ToolRound is 0 for a user turn's first request and k for the k-th request after tool results
	// ("tool_round", agent sessions only).
	ToolRound Opt[int]
	// NotStreamed: the request was sent with stream false (written as "stream": false; absent
	// otherwise). It has no TTFT, ITL or chunk metrics.
	NotStreamed bool
	// StructuredValid is whether the answer met the request's response_format ("structured_valid";
	// only when response_format was set and the request succeeded).
	StructuredValid Opt[bool]
	// Step names a RAG turn's retrieval step ("rag_step": "embed" or "rerank"); "" for the turn's
	// chat request, and for a retrieval stage's own requests. A step's record is not a chat request:
	// its latency is the step's, summed apart (StageSummary.RAG).
	Step string
	// RAGTurnStartNs is, on a RAG turn's chat request, when the turn was due: its first step's
	// intended start ("rag_turn_start_ns"). The turn's whole latency, question to last token, runs
	// from there to this request's end, so a turn that waited for a slot shows its wait.
	RAGTurnStartNs Opt[int64]

	// metrics
	TTFT                  Opt[float64] // time_to_first_token, ms
	TTST                  Opt[float64] // time_to_second_token, ms
	TTFO                  Opt[float64] // time_to_first_output_token, ms
	RequestLatency        Opt[float64] // ms
	InterTokenLatency     Opt[float64] // ms, per-request mean
	InterChunkLatency     []float64    // ms, gaps between consecutive token events
	ChunkTokens           []int        // chunk_tokens: output tokens of each token event; nil: one each (TokenGaps)
	ThroughputPerUser     Opt[float64] // tokens/sec/user
	InputSequenceLength   Opt[int]
	OutputTokenCount      Opt[int]
	ReasoningTokenCount   Opt[int]
	OutputSequenceLength  Opt[int]
	UsagePromptTokens     Opt[int]
	UsageCompletionTokens Opt[int]
	UsageTotalTokens      Opt[int]
	UsageCachedTokens     Opt[int] // usage_prompt_cache_read_tokens
	ErrorISL              Opt[int]
	// ClientPromptTokens is the client's own count of the request's messages in the scenario's
	// tokenizer (client_prompt_tokens, a plload metric): beside usage_prompt_tokens it shows how
	// far the client's lengths are from the server's (prompt_tokens_agreement).
	ClientPromptTokens Opt[int]
	// ClientPromptMessages is how many messages that request sent (client_prompt_messages, a
	// plload metric, set with ClientPromptTokens): a chat template adds a few tokens per message,
	// and prompt_tokens_agreement fits them out.
	ClientPromptMessages Opt[int]
	// RequestBytes is the request body's size as sent (request_bytes, a plload metric): what a turn
	// costs on the wire, which the Responses API's server-held history makes smaller.
	RequestBytes Opt[int]
	// OutputChars is the Unicode characters of the streamed content (reasoning and tool-call text
	// included): output_char_count, a plload metric that needs no tokenizer to compare servers.
	OutputChars Opt[int]
	// ToolCalls is the tool calls in this answer (tool_call_count, calls).
	ToolCalls Opt[int]
	// ToolCallsInvalid is, of those, the calls whose arguments are not valid JSON
	// (tool_call_invalid_arguments, calls).
	ToolCallsInvalid Opt[int]
	// TTFToolCall is the first tool-call token event − request start (time_to_first_tool_call, ms).
	TTFToolCall Opt[float64]
	// ImageCount, ImagePixels and ImageBytes are the images the request sent — its new message's
	// and its history's — their pixels and their encoded bytes (image_count, image_pixels,
	// image_bytes, plload metrics); absent for a request with none.
	ImageCount  Opt[int]
	ImagePixels Opt[int]
	ImageBytes  Opt[int]
	// ClientImageTokens is the client's estimate of those images' tokens by the model family's rule
	// (session.images.tokens): client_image_tokens, beside usage_prompt_tokens − the text's tokens.
	ClientImageTokens Opt[int]
	// RetrievalItems is how many vectors (embeddings) or scores (rerank) the answer had
	// (retrieval_items, a plload metric), checked against what was asked before it is written.
	RetrievalItems Opt[int]

	Error *RecordError
}

// SummedApart says whether the record is a RAG turn's step that succeeded: not one of the stage's
// requests (its latency is another server's, and the turn's chat request follows it), summed in
// summary.rag instead. A failed step is its turn's failure and counts as a request. Every reader
// of records that counts requests (a stage, its series, an A/B sample) applies this one rule.
func (r *Record) SummedApart() bool { return r.Step != "" && r.OK() }

// Phases of a request: started before the end of warmup, or after.
const (
	PhaseWarmup    = "warmup"
	PhaseProfiling = "profiling"
)

// RecordError is the error object of a failed or cancelled request.
type RecordError struct {
	Code    Opt[int]
	Type    string
	Message string
}

// CancelledByInterrupt is the message of a request the user's interrupt (Ctrl+C, SIGTERM, SIGHUP)
// cancelled in flight: the summary tells these apart from those the drain timeout cancelled, which
// were too slow and count as errors.
const CancelledByInterrupt = "cancelled: the run was interrupted (Ctrl+C, SIGTERM or SIGHUP)"

// Error types and codes plload writes (docs/records.md); AIPerf uses the same.
const (
	ErrTypeCancelled      = "RequestCancellationError"
	ErrTypeSSE            = "SSEResponseError"
	ErrTypeInvalidResult  = "InvalidInferenceResultError"
	ErrTypeTimeout        = "TimeoutError"
	ErrTypeConnect        = "ConnectError"
	ErrTypeTransport      = "TransportError"
	CodeCancelled         = 499
	CodeSSEError          = 502
	StatusTooManyRequests = 429
)

// Ms converts nanoseconds to milliseconds the way AIPerf does (multiplying, so values are bit-identical).
func Ms(ns int64) float64 { return float64(ns) * (1000.0 / 1e9) }

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.Error == nil && !r.WasCancelled }
