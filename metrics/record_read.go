package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// maxRecordLine bounds one line of a records file (a record with ~500k inter-chunk gaps).
const maxRecordLine = 64 << 20

// rawRecord accepts both AIPerf styles: null values written (≤ 0.3) or left out (≥ 0.4), numbers
// that should be integers written as floats, and keys it does not know.
type rawRecord struct {
	Metadata struct {
		SessionNum         json.Number `json:"session_num"`
		XRequestID         *string     `json:"x_request_id"`
		XCorrelationID     *string     `json:"x_correlation_id"`
		ConversationID     *string     `json:"conversation_id"`
		TurnIndex          json.Number `json:"turn_index"`
		CreditIssuedNs     json.Number `json:"credit_issued_ns"`
		RequestStartNs     json.Number `json:"request_start_ns"`
		RequestAckNs       json.Number `json:"request_ack_ns"`
		RequestEndNs       json.Number `json:"request_end_ns"`
		WorkerID           *string     `json:"worker_id"`
		RecordProcessorID  *string     `json:"record_processor_id"`
		BenchmarkPhase     *string     `json:"benchmark_phase"`
		WasCancelled       *bool       `json:"was_cancelled"`
		CancellationTimeNs json.Number `json:"cancellation_time_ns"`
		IntendedStartNs    json.Number `json:"intended_start_ns"`
		SlotWaitNs         json.Number `json:"slot_wait_ns"`
		Persona            json.Number `json:"persona"`
		DatasetSession     json.Number `json:"dataset_session"`
		Retried            *bool       `json:"retried"`
		Model              *string     `json:"model"`
		ToolRound          json.Number `json:"tool_round"`
		Stream             *bool       `json:"stream"`
		StructuredValid    *bool       `json:"structured_valid"`
		Step               *string     `json:"rag_step"`
		RAGTurnStartNs     json.Number `json:"rag_turn_start_ns"`
		// The early (2025) layout's names for request_start_ns and benchmark_phase.
		TimestampNs json.Number `json:"timestamp_ns"`
		CreditPhase *string     `json:"credit_phase"`
	} `json:"metadata"`
	Metrics rawMetrics `json:"metrics"`
	Error   *struct {
		Code    json.Number `json:"code"`
		Type    *string     `json:"type"`
		Message *string     `json:"message"`
	} `json:"error"`
}

// ReadRecords calls fn for each record of a profile_export.jsonl, in file order. A line that is not a
// record is an error naming its line number; blank lines are skipped.
func ReadRecords(r io.Reader, fn func(*Record) error) error {
	return eachRecordLine(r, func(line int, text []byte) error {
		rec, err := ParseRecord(text)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		return fn(rec)
	})
}

// errStopLines ends eachRecordLine early without an error.
var errStopLines = errors.New("stop")

// eachRecordLine calls fn with each non-blank line of a records file and its 1-based number, until
// fn returns an error (errStopLines: stop, no error); a line over maxRecordLine is an error naming it.
func eachRecordLine(r io.Reader, fn func(line int, text []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256<<10), maxRecordLine)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if err := fn(line, text); err != nil {
			if errors.Is(err, errStopLines) {
				return nil
			}
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: longer than %d bytes", line+1, maxRecordLine)
		}
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}

// gapsKey opens the inter-chunk gaps in the compact layout plload (and AIPerf ≥ 0.4) write.
var gapsKey = []byte(`"inter_chunk_latency":{"value":[`)

// cutGaps takes the gaps array out of a compact line before JSON decoding: the gaps are most of a
// record's bytes, and reading them as plain numbers is several times cheaper than through
// encoding/json. Lines in another layout are left alone and decoded the ordinary way.
func cutGaps(line []byte) ([]byte, []float64, bool) {
	i := bytes.Index(line, gapsKey)
	if i < 0 {
		return line, nil, false
	}
	open := i + len(gapsKey) - 1 // the '['
	j := bytes.IndexByte(line[open:], ']')
	if j < 0 {
		return line, nil, false
	}
	gaps, err := parseFloatArray(line[open : open+j+1])
	if err != nil {
		return line, nil, false
	}
	rest := make([]byte, 0, len(line)-j+1)
	rest = append(rest, line[:open+1]...)
	rest = append(rest, line[open+j:]...)
	return rest, gaps, true
}

// ParseRecord reads one record line.
func ParseRecord(line []byte) (*Record, error) {
	line, gaps, cut := cutGaps(line)
	var raw rawRecord
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON record: %s; %s", recordProblem(err), recordsAccepted)
	}
	md := &raw.Metadata
	rec := &Record{
		XRequestID: deref(md.XRequestID), XCorrelationID: deref(md.XCorrelationID), ConversationID: deref(md.ConversationID),
		WorkerID: deref(md.WorkerID), RecordProcessorID: deref(md.RecordProcessorID), BenchmarkPhase: deref(md.BenchmarkPhase),
	}
	var err error
	num := func(key string, n json.Number) Opt[int64] {
		if n == "" || err != nil {
			return Opt[int64]{}
		}
		v, e := parseInt(string(n))
		if e != nil {
			err = fmt.Errorf("metadata.%s: %v", key, e)
		}
		return Opt[int64]{V: v, OK: e == nil}
	}
	rec.SessionNum = int(num("session_num", md.SessionNum).V)
	rec.TurnIndex = int(num("turn_index", md.TurnIndex).V)
	rec.CreditIssuedNs = num("credit_issued_ns", md.CreditIssuedNs).V
	start := num("request_start_ns", md.RequestStartNs)
	if !start.OK {
		start = num("timestamp_ns", md.TimestampNs) // the early layout
	}
	if !start.OK && err == nil {
		return nil, errors.New("metadata.request_start_ns (or the early layout's metadata.timestamp_ns) is missing")
	}
	rec.RequestStartNs = start.V
	rec.RequestAckNs = num("request_ack_ns", md.RequestAckNs)
	rec.RequestEndNs = num("request_end_ns", md.RequestEndNs)
	rec.CancellationTimeNs = num("cancellation_time_ns", md.CancellationTimeNs)
	rec.IntendedStartNs = num("intended_start_ns", md.IntendedStartNs)
	rec.SlotWaitNs = num("slot_wait_ns", md.SlotWaitNs)
	if p := num("persona", md.Persona); p.OK {
		rec.Persona = Some(int(p.V))
	}
	if d := num("dataset_session", md.DatasetSession); d.OK {
		rec.DatasetSession = Some(int(d.V))
	}
	if md.WasCancelled != nil {
		rec.WasCancelled = *md.WasCancelled
	}
	if md.Retried != nil {
		rec.Retried = *md.Retried
	}
	rec.Model = deref(md.Model)
	if t := num("tool_round", md.ToolRound); t.OK {
		rec.ToolRound = Some(int(t.V))
	}
	if md.Stream != nil {
		rec.NotStreamed = !*md.Stream
	}
	if md.StructuredValid != nil {
		rec.StructuredValid = Some(*md.StructuredValid)
	}
	rec.Step = deref(md.Step)
	rec.RAGTurnStartNs = num("rag_turn_start_ns", md.RAGTurnStartNs)
	if err != nil {
		return nil, err
	}
	if err := raw.Metrics.apply(rec); err != nil {
		return nil, err
	}
	if cut {
		rec.InterChunkLatency = gaps
	}
	if err := checkChunkTokens(rec); err != nil {
		return nil, err
	}
	if e := raw.Error; e != nil {
		rec.Error = &RecordError{Type: deref(e.Type), Message: deref(e.Message)}
		if e.Code != "" {
			if c, err := parseInt(string(e.Code)); err == nil {
				rec.Error.Code = Some(int(c))
			}
		}
	}
	if err := raw.applyEarly(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// rawMetrics holds the metrics a record needs, each parsed as encoding/json meets it (no map, no
// copies: a records file has a million of these). Other tags (AIPerf's prefill_throughput and
// friends) are skipped.
type rawMetrics struct {
	TTFT                  rawMetric[number]  `json:"time_to_first_token"`
	TTST                  rawMetric[number]  `json:"time_to_second_token"`
	TTFO                  rawMetric[number]  `json:"time_to_first_output_token"`
	RequestLatency        rawMetric[number]  `json:"request_latency"`
	InterTokenLatency     rawMetric[number]  `json:"inter_token_latency"`
	ThroughputPerUser     rawMetric[number]  `json:"output_token_throughput_per_user"`
	InputSequenceLength   rawMetric[number]  `json:"input_sequence_length"`
	OutputTokenCount      rawMetric[number]  `json:"output_token_count"`
	ReasoningTokenCount   rawMetric[number]  `json:"reasoning_token_count"`
	OutputSequenceLength  rawMetric[number]  `json:"output_sequence_length"`
	UsagePromptTokens     rawMetric[number]  `json:"usage_prompt_tokens"`
	UsageCompletionTokens rawMetric[number]  `json:"usage_completion_tokens"`
	UsageTotalTokens      rawMetric[number]  `json:"usage_total_tokens"`
	UsageCachedTokens     rawMetric[number]  `json:"usage_prompt_cache_read_tokens"`
	ErrorISL              rawMetric[number]  `json:"error_isl"`
	ClientPromptTokens    rawMetric[number]  `json:"client_prompt_tokens"`
	ClientPromptMessages  rawMetric[number]  `json:"client_prompt_messages"`
	RequestBytes          rawMetric[number]  `json:"request_bytes"`
	OutputChars           rawMetric[number]  `json:"output_char_count"`
	ToolCalls             rawMetric[number]  `json:"tool_call_count"`
	ToolCallsInvalid      rawMetric[number]  `json:"tool_call_invalid_arguments"`
	TTFToolCall           rawMetric[number]  `json:"time_to_first_tool_call"`
	RetrievalItems        rawMetric[number]  `json:"retrieval_items"`
	ImageCount            rawMetric[number]  `json:"image_count"`
	ImagePixels           rawMetric[number]  `json:"image_pixels"`
	ImageBytes            rawMetric[number]  `json:"image_bytes"`
	ClientImageTokens     rawMetric[number]  `json:"client_image_tokens"`
	InterChunkLatency     rawMetric[numbers] `json:"inter_chunk_latency"`
	ChunkTokens           rawMetric[numbers] `json:"chunk_tokens"`
	// The early (2025) layout's tags (aiperf_layout.go maps them).
	EarlyTTFT     rawMetric[number]      `json:"ttft"`
	EarlyTTST     rawMetric[number]      `json:"ttst"`
	MaxResponseNs rawMetric[json.Number] `json:"max_response_timestamp"`
}

// rawMetric is one {"value": ..., "unit": ...} entry; the unit is fixed by the tag.
type rawMetric[T any] struct {
	Value T `json:"value"`
}

// number is a metric's scalar value; a value that is not a number is kept as an error, so that
// apply can name its tag.
type number struct {
	v   Opt[float64]
	err error
}

func (n *number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	n.v, n.err = Opt[float64]{V: f, OK: err == nil}, err
	return nil
}

// numbers is a list value (the inter-chunk gaps); a scalar where a list was expected is a list of one.
type numbers struct {
	v   []float64
	err error
}

func (n *numbers) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	n.v, n.err = parseFloatArray(b)
	return nil
}

// apply copies the metrics into rec: milliseconds as they are, token counts rounded.
func (m *rawMetrics) apply(rec *Record) error {
	err := setMetrics([]metricTarget[float64]{
		{"time_to_first_token", &m.TTFT.Value, &rec.TTFT}, {"time_to_second_token", &m.TTST.Value, &rec.TTST},
		{"time_to_first_output_token", &m.TTFO.Value, &rec.TTFO}, {"request_latency", &m.RequestLatency.Value, &rec.RequestLatency},
		{"inter_token_latency", &m.InterTokenLatency.Value, &rec.InterTokenLatency},
		{"output_token_throughput_per_user", &m.ThroughputPerUser.Value, &rec.ThroughputPerUser},
		{tagTTFToolCall, &m.TTFToolCall.Value, &rec.TTFToolCall},
	}, func(v float64) float64 { return v })
	if err != nil {
		return err
	}
	err = setMetrics([]metricTarget[int]{
		{"input_sequence_length", &m.InputSequenceLength.Value, &rec.InputSequenceLength},
		{"output_token_count", &m.OutputTokenCount.Value, &rec.OutputTokenCount},
		{"reasoning_token_count", &m.ReasoningTokenCount.Value, &rec.ReasoningTokenCount},
		{"output_sequence_length", &m.OutputSequenceLength.Value, &rec.OutputSequenceLength},
		{"usage_prompt_tokens", &m.UsagePromptTokens.Value, &rec.UsagePromptTokens},
		{"usage_completion_tokens", &m.UsageCompletionTokens.Value, &rec.UsageCompletionTokens},
		{"usage_total_tokens", &m.UsageTotalTokens.Value, &rec.UsageTotalTokens},
		{"usage_prompt_cache_read_tokens", &m.UsageCachedTokens.Value, &rec.UsageCachedTokens},
		{"error_isl", &m.ErrorISL.Value, &rec.ErrorISL},
		{tagClientPromptTokens, &m.ClientPromptTokens.Value, &rec.ClientPromptTokens},
		{tagClientPromptMessages, &m.ClientPromptMessages.Value, &rec.ClientPromptMessages},
		{tagRequestBytes, &m.RequestBytes.Value, &rec.RequestBytes},
		{tagCharCount, &m.OutputChars.Value, &rec.OutputChars},
		{tagToolCalls, &m.ToolCalls.Value, &rec.ToolCalls},
		{tagToolCallsInvalid, &m.ToolCallsInvalid.Value, &rec.ToolCallsInvalid},
		{tagRetrievalItems, &m.RetrievalItems.Value, &rec.RetrievalItems},
		{tagImageCount, &m.ImageCount.Value, &rec.ImageCount},
		{tagImagePixels, &m.ImagePixels.Value, &rec.ImagePixels},
		{tagImageBytes, &m.ImageBytes.Value, &rec.ImageBytes},
		{tagClientImageTokens, &m.ClientImageTokens.Value, &rec.ClientImageTokens},
	}, func(v float64) int { return int(math.Round(v)) })
	if err != nil {
		return err
	}
	if gaps := m.InterChunkLatency.Value; gaps.err != nil {
		return fmt.Errorf("metrics.inter_chunk_latency: %v", gaps.err)
	} else if len(gaps.v) > 0 {
		rec.InterChunkLatency = gaps.v
	}
	if counts := m.ChunkTokens.Value; counts.err != nil {
		return fmt.Errorf("metrics.%s: %v", tagChunkTokens, counts.err)
	} else if len(counts.v) > 0 {
		k, err := chunkTokensFrom(counts.v)
		if err != nil {
			return err
		}
		rec.ChunkTokens = k
	}
	return nil
}

// metricTarget ties a metric's tag and parsed value to the record field it fills.
type metricTarget[T any] struct {
	tag string
	n   *number
	to  *Opt[T]
}

// setMetrics fills each present value through conv; a value that was not a number is an error
// naming its tag.
func setMetrics[T any](targets []metricTarget[T], conv func(float64) T) error {
	for _, t := range targets {
		if t.n.err != nil {
			return fmt.Errorf("metrics.%s: %v", t.tag, t.n.err)
		}
		if t.n.v.OK {
			*t.to = Some(conv(t.n.v.V))
		}
	}
	return nil
}

// parseFloatArray reads a JSON array of numbers without encoding/json's reflection: the gaps are most
// of a record's bytes.
func parseFloatArray(raw []byte) ([]float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		f, err := strconv.ParseFloat(string(raw), 64) // a scalar where a list was expected
		if err != nil {
			return nil, fmt.Errorf("not a list of numbers")
		}
		return []float64{f}, nil
	}
	body := raw[1 : len(raw)-1]
	out := make([]float64, 0, bytes.Count(body, []byte{','})+1)
	for len(body) > 0 {
		i := bytes.IndexByte(body, ',')
		item := body
		if i >= 0 {
			item, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		item = bytes.TrimSpace(item)
		if len(item) == 0 {
			continue
		}
		f, err := strconv.ParseFloat(string(item), 64)
		if err != nil {
			return nil, fmt.Errorf("list item %q is not a number", item)
		}
		out = append(out, f)
	}
	return out, nil
}

// parseInt reads an integer that may be written as a float (1.762e18, 3.0).
func parseInt(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return int64(f), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// recordProblem says what is wrong with a record line in the record's own terms — the key, what it
// held and what belongs there — not in Go's types ("cannot unmarshal number into Go struct field
// rawMetrics.metrics.ttft of type metrics.rawMetric[…]").
func recordProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s holds a %s where %s belongs", te.Field, te.Value, jsonKindOf(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not valid JSON at byte %d (%v; a line cut short?)", se.Offset, se)
	}
	return err.Error()
}

// jsonKindOf names the JSON a Go type is read from.
func jsonKindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if strings.HasPrefix(t.Name(), "rawMetric") {
			return `an object {"value": …, "unit": …}`
		}
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		if t.PkgPath() == "encoding/json" { // json.Number
			return "a number"
		}
		return "a string"
	case reflect.Bool:
		return "true or false"
	}
	return "a number"
}
