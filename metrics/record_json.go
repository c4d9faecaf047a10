package metrics

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the record as one compact JSON object in AIPerf's key order (metadata, metrics,
// error), without a newline. It is hand-written because it runs once per request on the writer
// goroutine, and encoding/json would both reorder and allocate.
func (r *Record) AppendJSON(b []byte) []byte {
	b = r.appendMetadata(b)
	b = append(b, `},"metrics":{`...)
	b = r.appendMetrics(b)
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

// appendMetadata writes `{"metadata":{...` up to its closing brace (not included).
func (r *Record) appendMetadata(b []byte) []byte {
	b = append(b, `{"metadata":{"session_num":`...)
	b = strconv.AppendInt(b, int64(r.SessionNum), 10)
	b = appendStringField(b, "x_request_id", r.XRequestID)
	b = appendStringField(b, "x_correlation_id", r.XCorrelationID)
	b = appendStringField(b, "conversation_id", r.ConversationID)
	b = appendIntField(b, "turn_index", int64(r.TurnIndex))
	b = appendIntField(b, "credit_issued_ns", r.CreditIssuedNs)
	b = appendIntField(b, "request_start_ns", r.RequestStartNs)
	b = appendOptIntField(b, "request_ack_ns", r.RequestAckNs)
	b = appendOptIntField(b, "request_end_ns", r.RequestEndNs)
	b = appendStringField(b, "worker_id", r.WorkerID)
	b = appendStringField(b, "record_processor_id", r.RecordProcessorID)
	b = appendStringField(b, "benchmark_phase", r.BenchmarkPhase)
	b = append(b, `,"was_cancelled":`...)
	b = strconv.AppendBool(b, r.WasCancelled)
	b = appendOptIntField(b, "cancellation_time_ns", r.CancellationTimeNs)
	b = appendOptIntField(b, "intended_start_ns", r.IntendedStartNs)
	if r.SlotWaitNs.OK {
		b = appendIntField(b, "slot_wait_ns", r.SlotWaitNs.V)
	}
	if r.Persona.OK {
		b = appendIntField(b, "persona", int64(r.Persona.V))
	}
	if r.DatasetSession.OK {
		b = appendIntField(b, "dataset_session", int64(r.DatasetSession.V))
	}
	if r.Retried {
		b = append(b, `,"retried":true`...)
	}
	if r.Model != "" {
		b = appendStringField(b, "model", r.Model)
	}
	if r.ToolRound.OK {
		b = appendIntField(b, "tool_round", int64(r.ToolRound.V))
	}
	if r.NotStreamed {
		b = append(b, `,"stream":false`...)
	}
	if r.StructuredValid.OK {
		b = append(b, `,"structured_valid":`...)
		b = strconv.AppendBool(b, r.StructuredValid.V)
	}
	if r.Step != "" {
		b = appendStringField(b, "rag_step", r.Step)
	}
	b = appendOptIntField(b, "rag_turn_start_ns", r.RAGTurnStartNs)
	return b
}

// Metric units (docs/records.md), exact strings.
const (
	unitMs      = "ms"
	unitTokens  = "tokens"
	unitPerUser = "tokens/sec/user"
	unitChars   = "chars"
	unitCalls   = "calls"
	// Tool-call metrics (agent sessions): Record.ToolCalls, ToolCallsInvalid, TTFToolCall.
	tagToolCalls        = "tool_call_count"
	tagToolCallsInvalid = "tool_call_invalid_arguments"
	tagTTFToolCall      = "time_to_first_tool_call"
	tagGaps             = "inter_chunk_latency"
	tagCharCount        = "output_char_count"
	// tagClientPromptTokens is plload's own count of the request's messages (Record.ClientPromptTokens).
	tagClientPromptTokens = "client_prompt_tokens"
	// tagClientPromptMessages is how many messages the request sent (Record.ClientPromptMessages).
	tagClientPromptMessages = "client_prompt_messages"
	unitMessages            = "messages"
	// tagRequestBytes is the request body's size (Record.RequestBytes).
	tagRequestBytes = "request_bytes"
	unitBytes       = "bytes"
	tagPerUserTok   = "output_token_throughput_per_user"
	// tagRetrievalItems is a retrieval answer's vectors or scores (Record.RetrievalItems).
	tagRetrievalItems = "retrieval_items"
	unitItems         = "items"
	// The images a request sent (Record.ImageCount, ImagePixels, ImageBytes, ClientImageTokens).
	tagImageCount        = "image_count"
	tagImagePixels       = "image_pixels"
	tagImageBytes        = "image_bytes"
	tagClientImageTokens = "client_image_tokens"
	unitImages           = "images"
	unitPixels           = "pixels"
)

// floatMetrics and countMetrics are the record's scalar metrics in the order they are written (the
// gaps array goes between the two lists); readers use the same tables.
var (
	floatMetrics = []struct {
		tag, unit string
		get       func(*Record) *Opt[float64]
	}{
		{"time_to_first_token", unitMs, func(r *Record) *Opt[float64] { return &r.TTFT }},
		{"time_to_second_token", unitMs, func(r *Record) *Opt[float64] { return &r.TTST }},
		{"time_to_first_output_token", unitMs, func(r *Record) *Opt[float64] { return &r.TTFO }},
		{"request_latency", unitMs, func(r *Record) *Opt[float64] { return &r.RequestLatency }},
		{"inter_token_latency", unitMs, func(r *Record) *Opt[float64] { return &r.InterTokenLatency }},
		{tagTTFToolCall, unitMs, func(r *Record) *Opt[float64] { return &r.TTFToolCall }},
	}
	countMetrics = []struct {
		tag, unit string
		get       func(*Record) *Opt[int]
	}{
		{"input_sequence_length", unitTokens, func(r *Record) *Opt[int] { return &r.InputSequenceLength }},
		{"output_token_count", unitTokens, func(r *Record) *Opt[int] { return &r.OutputTokenCount }},
		{"reasoning_token_count", unitTokens, func(r *Record) *Opt[int] { return &r.ReasoningTokenCount }},
		{"output_sequence_length", unitTokens, func(r *Record) *Opt[int] { return &r.OutputSequenceLength }},
		{"usage_prompt_tokens", unitTokens, func(r *Record) *Opt[int] { return &r.UsagePromptTokens }},
		{"usage_completion_tokens", unitTokens, func(r *Record) *Opt[int] { return &r.UsageCompletionTokens }},
		{"usage_total_tokens", unitTokens, func(r *Record) *Opt[int] { return &r.UsageTotalTokens }},
		{"usage_prompt_cache_read_tokens", unitTokens, func(r *Record) *Opt[int] { return &r.UsageCachedTokens }},
		{"error_isl", unitTokens, func(r *Record) *Opt[int] { return &r.ErrorISL }},
		{tagClientPromptTokens, unitTokens, func(r *Record) *Opt[int] { return &r.ClientPromptTokens }},
		{tagClientPromptMessages, unitMessages, func(r *Record) *Opt[int] { return &r.ClientPromptMessages }},
		{tagRequestBytes, unitBytes, func(r *Record) *Opt[int] { return &r.RequestBytes }},
		{tagCharCount, unitChars, func(r *Record) *Opt[int] { return &r.OutputChars }},
		{tagToolCalls, unitCalls, func(r *Record) *Opt[int] { return &r.ToolCalls }},
		{tagToolCallsInvalid, unitCalls, func(r *Record) *Opt[int] { return &r.ToolCallsInvalid }},
		{tagRetrievalItems, unitItems, func(r *Record) *Opt[int] { return &r.RetrievalItems }},
		{tagImageCount, unitImages, func(r *Record) *Opt[int] { return &r.ImageCount }},
		{tagImagePixels, unitPixels, func(r *Record) *Opt[int] { return &r.ImagePixels }},
		{tagImageBytes, unitBytes, func(r *Record) *Opt[int] { return &r.ImageBytes }},
		{tagClientImageTokens, unitTokens, func(r *Record) *Opt[int] { return &r.ClientImageTokens }},
	}
)

// appendMetrics writes the present metrics, comma-separated, without the enclosing braces.
func (r *Record) appendMetrics(b []byte) []byte {
	n := 0
	for _, m := range floatMetrics {
		if v := m.get(r); v.OK {
			b = appendFloat(openMetric(b, &n, m.tag), v.V)
			b = closeMetric(b, m.unit)
		}
	}
	if len(r.InterChunkLatency) > 0 {
		b = append(openMetric(b, &n, tagGaps), '[')
		for i, v := range r.InterChunkLatency {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendFloat(b, v)
		}
		b = closeMetric(append(b, ']'), unitMs)
	}
	if len(r.ChunkTokens) > 0 {
		b = append(openMetric(b, &n, tagChunkTokens), '[')
		for i, k := range r.ChunkTokens {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(k), 10)
		}
		b = closeMetric(append(b, ']'), unitTokens)
	}
	if r.ThroughputPerUser.OK {
		b = closeMetric(appendFloat(openMetric(b, &n, tagPerUserTok), r.ThroughputPerUser.V), unitPerUser)
	}
	for _, m := range countMetrics {
		if v := m.get(r); v.OK {
			b = closeMetric(strconv.AppendInt(openMetric(b, &n, m.tag), int64(v.V), 10), m.unit)
		}
	}
	return b
}

// openMetric writes `"tag":{"value":`, after a comma unless it is the first (*n counts them).
func openMetric(b []byte, n *int, tag string) []byte {
	if *n > 0 {
		b = append(b, ',')
	}
	*n++
	b = append(b, '"')
	b = append(b, tag...)
	return append(b, `":{"value":`...)
}

func closeMetric(b []byte, unit string) []byte {
	b = append(b, `,"unit":"`...)
	b = append(b, unit...)
	return append(b, `"}`...)
}

func appendOptIntField(b []byte, key string, v Opt[int64]) []byte {
	if !v.OK {
		return b
	}
	return appendIntField(b, key, v.V)
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

// decodeRune returns the rune at the start of s and its size, or -1 and 1 for an invalid byte.
func decodeRune(s string) (rune, int) {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 {
		return -1, 1
	}
	return r, size
}
