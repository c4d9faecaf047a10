// Package metrics holds the per-request record (AIPerf's profile_export.jsonl layout), its writer and
// reader, and the arithmetic that turns records into a stage's numbers.
package metrics

import (
	"encoding/json"
	"math"
	"strconv"
)

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

// MarshalJSON writes a distribution of no values with null statistics: its 0s are not measurements.
func (d Dist) MarshalJSON() ([]byte, error) {
	type plain Dist // without this method
	if d.N > 0 {
		return json.Marshal(plain(d))
	}
	return []byte(`{"n":0,"mean":null,"min":null,"max":null,"p50":null,"p90":null,"p95":null,"p99":null,"std":null}`), nil
}

// Record is one request, as AIPerf ≥ 0.4 writes it (RECORDS.md), plus plload's intended_start_ns and
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
	Persona            Opt[int]
	// Retried: the request went out a second time, at once, on a new connection, because the reused
	// connection it first went out on failed before any response byte. Its start is the first try's.
	Retried bool

	// metrics
	TTFT                  Opt[float64] // time_to_first_token, ms
	TTST                  Opt[float64] // time_to_second_token, ms
	TTFO                  Opt[float64] // time_to_first_output_token, ms
	RequestLatency        Opt[float64] // ms
	InterTokenLatency     Opt[float64] // ms, per-request mean
	InterChunkLatency     []float64    // ms, gaps between consecutive token events
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
	// OutputChars is the Unicode characters of the streamed content (reasoning and tool-call text
	// included): output_char_count, a plload metric that needs no tokenizer to compare servers.
	OutputChars Opt[int]

	Error *RecordError
}

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

// Error types and codes plload writes (RECORDS.md); AIPerf uses the same.
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
	maxErrorMessageBytes  = 4 << 10
)

// Ms converts nanoseconds to milliseconds the way AIPerf does (multiplying, so values are bit-identical).
func Ms(ns int64) float64 { return float64(ns) * (1000.0 / 1e9) }

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.Error == nil && !r.WasCancelled }

// TruncateMessage cuts an error message to 4 KiB, as RECORDS.md asks for bodies of non-2xx answers.
func TruncateMessage(s string) string {
	if len(s) <= maxErrorMessageBytes {
		return s
	}
	return s[:maxErrorMessageBytes]
}

// AppendJSON appends the record as one compact JSON object in AIPerf's key order (metadata, metrics,
// error), without a newline. It is hand-written because it runs once per request on the writer
// goroutine, and encoding/json would both reorder and allocate.
func (r *Record) AppendJSON(b []byte) []byte {
	b = append(b, `{"metadata":{"session_num":`...)
	b = strconv.AppendInt(b, int64(r.SessionNum), 10)
	b = appendStringField(b, "x_request_id", r.XRequestID)
	b = appendStringField(b, "x_correlation_id", r.XCorrelationID)
	b = appendStringField(b, "conversation_id", r.ConversationID)
	b = appendIntField(b, "turn_index", int64(r.TurnIndex))
	b = appendIntField(b, "credit_issued_ns", r.CreditIssuedNs)
	b = appendIntField(b, "request_start_ns", r.RequestStartNs)
	if r.RequestAckNs.OK {
		b = appendIntField(b, "request_ack_ns", r.RequestAckNs.V)
	}
	if r.RequestEndNs.OK {
		b = appendIntField(b, "request_end_ns", r.RequestEndNs.V)
	}
	b = appendStringField(b, "worker_id", r.WorkerID)
	b = appendStringField(b, "record_processor_id", r.RecordProcessorID)
	b = appendStringField(b, "benchmark_phase", r.BenchmarkPhase)
	b = append(b, `,"was_cancelled":`...)
	b = strconv.AppendBool(b, r.WasCancelled)
	if r.CancellationTimeNs.OK {
		b = appendIntField(b, "cancellation_time_ns", r.CancellationTimeNs.V)
	}
	if r.IntendedStartNs.OK {
		b = appendIntField(b, "intended_start_ns", r.IntendedStartNs.V)
	}
	if r.Persona.OK {
		b = appendIntField(b, "persona", int64(r.Persona.V))
	}
	if r.Retried {
		b = append(b, `,"retried":true`...)
	}
	b = append(b, `},"metrics":{`...)
	first := true
	metric := func(tag string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, tag...)
		b = append(b, `":{"value":`...)
	}
	closeMetric := func(unit string) {
		b = append(b, `,"unit":"`...)
		b = append(b, unit...)
		b = append(b, `"}`...)
	}
	ms := func(tag string, v Opt[float64]) {
		if v.OK {
			metric(tag)
			b = appendFloat(b, v.V)
			closeMetric("ms")
		}
	}
	tokens := func(tag string, v Opt[int]) {
		if v.OK {
			metric(tag)
			b = strconv.AppendInt(b, int64(v.V), 10)
			closeMetric("tokens")
		}
	}
	ms("time_to_first_token", r.TTFT)
	ms("time_to_second_token", r.TTST)
	ms("time_to_first_output_token", r.TTFO)
	ms("request_latency", r.RequestLatency)
	ms("inter_token_latency", r.InterTokenLatency)
	if len(r.InterChunkLatency) > 0 {
		metric("inter_chunk_latency")
		b = append(b, '[')
		for i, v := range r.InterChunkLatency {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendFloat(b, v)
		}
		b = append(b, ']')
		closeMetric("ms")
	}
	if r.ThroughputPerUser.OK {
		metric("output_token_throughput_per_user")
		b = appendFloat(b, r.ThroughputPerUser.V)
		closeMetric("tokens/sec/user")
	}
	tokens("input_sequence_length", r.InputSequenceLength)
	tokens("output_token_count", r.OutputTokenCount)
	tokens("reasoning_token_count", r.ReasoningTokenCount)
	tokens("output_sequence_length", r.OutputSequenceLength)
	tokens("usage_prompt_tokens", r.UsagePromptTokens)
	tokens("usage_completion_tokens", r.UsageCompletionTokens)
	tokens("usage_total_tokens", r.UsageTotalTokens)
	tokens("usage_prompt_cache_read_tokens", r.UsageCachedTokens)
	tokens("error_isl", r.ErrorISL)
	b = append(b, '}')
	if e := r.Error; e != nil {
		b = append(b, `,"error":{`...)
		if e.Code.OK {
			b = append(b, `"code":`...)
			b = strconv.AppendInt(b, int64(e.Code.V), 10)
			b = append(b, ',')
		}
		b = append(b, `"type":`...)
		b = appendJSONString(b, e.Type)
		b = append(b, `,"message":`...)
		b = appendJSONString(b, e.Message)
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendStringField(b []byte, key, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendJSONString(b, v)
}

func appendIntField(b []byte, key string, v int64) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

// appendFloat writes a float as JSON in the shortest form that reads back to the same bits, in plain
// notation except for very small or large values (as encoding/json does). NaN and ±Inf, never
// produced, would be invalid JSON and become 0.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(b, f, 'e', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string: valid UTF-8 passes through, control characters and
// invalid bytes are escaped (an HTML error page can carry anything).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := decodeRune(s[i:])
		if r == -1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
