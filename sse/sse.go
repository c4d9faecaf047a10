// Package sse reads a server-sent event stream into typed events, each stamped with the time the
// read that completed it returned — before any JSON is parsed, so parsing cost never shows up as
// latency. OpenAI's chat and completions chunks are decoded here (their fast path); another API's
// events are decoded by the Decoder its reader is made with, this package keeping the framing.
package sse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"
)

// DefaultMaxEventBytes bounds one event's data. A server that sends more in one event is misbehaving;
// the reader reports it instead of growing without limit.
const DefaultMaxEventBytes = 4 << 20

// ErrEventTooLarge is returned when one event's data passes the size limit.
var ErrEventTooLarge = errors.New("sse: event larger than the size limit")

// Event is one SSE message, decoded. A message can carry several things at once (the last token with
// its finish reason, say), so the fields are not exclusive.
type Event struct {
	// At is when the read that completed this message returned (monotonic clock).
	At time.Time
	// Content is visible answer text; Reasoning is reasoning_content (or reasoning); ToolCall is the
	// text of tool-call names and arguments.
	Content, Reasoning, ToolCall string
	// ToolCalls is the chunk's delta.tool_calls in order (every choice's, in choice order); nil when
	// none. A ToolCallAssembler puts a stream's deltas together.
	ToolCalls []ToolCallDelta
	// Role is delta.role when present (a role-only first chunk is not a token).
	Role string
	// FinishReason is the choice's finish_reason when present.
	FinishReason string
	// Usage is the usage object when the message carries a non-empty one.
	Usage *Usage
	// Done is set for data: [DONE], or another API's end of the answer (its Decoder's).
	Done bool
	// ResponseID is the answer's id where the API names one a later request may refer to (the
	// Responses API's previous_response_id); "" otherwise.
	ResponseID string
	// Err is set for `event: error` or a chunk holding an error object.
	Err *StreamError
	// Comment is set for a message that was only comment lines (keep-alives).
	Comment bool
	// CommentText is the last comment line of the message, without its ':' (servers may annotate
	// chunks; the bundled mock's send times arrive this way).
	CommentText string
}

// IsToken reports whether the message counts as a token event: non-empty content, reasoning or
// tool-call text.
func (e *Event) IsToken() bool { return e.Content != "" || e.Reasoning != "" || e.ToolCall != "" }

// Usage is the server's token accounting. Optional values carry OK flags: missing is not zero.
type Usage struct {
	PromptTokens, CompletionTokens, TotalTokens int
	HasPrompt, HasCompletion, HasTotal          bool
	// CachedTokens comes from prompt_tokens_details.cached_tokens or the top-level synonyms
	// cached_tokens, cache_read_input_tokens and prompt_cache_hit_tokens.
	CachedTokens    int
	HasCached       bool
	ReasoningTokens int
	HasReasoning    bool
}

// StreamError is an error the server reported inside the stream.
type StreamError struct {
	Message string
	Type    string
	Code    string
}

func (e *StreamError) Error() string {
	s := "server error in stream: " + e.Message
	// The server's own words for the kind of error: its type, and its code where that says more.
	var kind []string
	if e.Type != "" {
		kind = append(kind, e.Type)
	}
	if e.Code != "" && e.Code != e.Type {
		kind = append(kind, "code "+e.Code)
	}
	if len(kind) > 0 {
		s += " (" + strings.Join(kind, ", ") + ")"
	}
	return s
}

// MalformedError is a payload that is not the JSON an OpenAI answer carries: a stream's data, or a
// non-streamed answer's body (ParseCompletion).
type MalformedError struct {
	// What says what the payload should have been; "" is a stream's chunk.
	What string
	// Data is the payload, whole up to MalformedDataMax bytes. It is not cut to a short length here:
	// a server may echo the API key, and this package does not know the secrets, so whoever shows the
	// payload masks them first and then cuts it (ErrorWith); a cut made before the masking would
	// leave a key's first part in the text.
	Data string
	Err  error // the decoder's complaint; nil when the JSON was valid but not an answer
}

// MalformedDataMax bounds MalformedError.Data, so that an error does not hold a whole 4 MiB event or
// 64 MiB body. A text shown from it is cut far shorter (the engine keeps 200 bytes), so any secret
// shorter than MalformedDataMax minus that cut that reaches into the shown part lies whole inside
// Data, where it can be masked.
const MalformedDataMax = 64 << 10

// NewMalformed is a MalformedError for data (kept up to MalformedDataMax bytes): what it should have
// been, and the decoder's complaint (nil: valid JSON, but not what was expected).
func NewMalformed(what string, data []byte, err error) *MalformedError {
	return newMalformed(what, data, err)
}

func newMalformed(what string, data []byte, err error) *MalformedError {
	if len(data) > MalformedDataMax {
		data = data[:MalformedDataMax]
	}
	return &MalformedError{What: what, Data: string(data), Err: err}
}

func (e *MalformedError) Error() string { return e.ErrorWith(e.Data) }

// ErrorWith is the error's text with shown in place of the payload: the payload after the caller
// masked its secrets and cut it.
func (e *MalformedError) ErrorWith(shown string) string {
	what := e.What
	if what == "" {
		what = "malformed JSON chunk"
	}
	if e.Err == nil {
		return fmt.Sprintf("%s: %q", what, shown)
	}
	return fmt.Sprintf("%s (%v): %q", what, e.Err, shown)
}

func (e *MalformedError) Unwrap() error { return e.Err }

// timedReader remembers when each underlying Read returned data.
type timedReader struct {
	r    io.Reader
	last time.Time
}

func (t *timedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.last = time.Now()
	}
	return n, err
}

// Reader reads events from a stream. It is not safe for concurrent use.
type Reader struct {
	tr       *timedReader
	br       *bufio.Reader
	max      int
	data     []byte // data lines of the current message, joined by '\n'
	hasData  bool
	event    string // the `event:` field of the current message
	comments bool
	comment  []byte // the last comment line
	line     []byte
	// skipping: Feed is dropping the rest of a line over the limit.
	skipping bool
	// decoder decodes each message's data; nil: OpenAI's chunks (decodeChunk).
	decoder Decoder
}

// Decoder decodes the messages of a stream whose events are not OpenAI chunks (Anthropic's
// Messages API, say) into Events. The Reader frames the stream — lines, fields, the size limit,
// the read times — and hands each message to Decode, which fills ev (At is set already). An error
// is returned with ev by Next and Feed as a payload error is: a *MalformedError lets reading go
// on, and says what was expected. A Decoder is made per stream and may keep state across its
// messages (an index's tool call, the usage an earlier event gave).
type Decoder interface {
	// Decode takes one message: its event name ("" without an event: line; "error" for an error:
	// line) and its data, joined and trimmed (valid only during the call).
	Decode(event string, data []byte, ev *Event) error
}

// readers keeps released Readers with their buffers: a load generator opens a stream per request,
// and a buffer another stream just let go of is still in the CPU's cache, where a new one would be
// zeroed memory (bench/README.md, "CPU per chunk").
var readers = sync.Pool{New: func() any {
	tr := &timedReader{}
	return &Reader{tr: tr, br: bufio.NewReaderSize(tr, 4<<10)}
}}

// EventLimit is the limit a Reader made with maxEventBytes applies: maxEventBytes, or
// DefaultMaxEventBytes for ≤ 0. Messages that name the limit name this one, never the unset 0.
func EventLimit(maxEventBytes int) int {
	if maxEventBytes <= 0 {
		return DefaultMaxEventBytes
	}
	return maxEventBytes
}

// NewReader reads from r; maxEventBytes ≤ 0 means DefaultMaxEventBytes. Release gives the Reader
// back for reuse when the stream is done.
func NewReader(r io.Reader, maxEventBytes int) *Reader {
	maxEventBytes = EventLimit(maxEventBytes)
	rd := readers.Get().(*Reader)
	rd.tr.r, rd.tr.last = r, time.Time{}
	rd.br.Reset(rd.tr)
	rd.max = maxEventBytes
	rd.line, rd.skipping = rd.line[:0], false
	rd.decoder = nil
	return rd
}

// NewDecodingReader reads from r as NewReader does, with each message decoded by d instead of as
// an OpenAI chunk (nil r: fed with Feed).
func NewDecodingReader(r io.Reader, maxEventBytes int, d Decoder) *Reader {
	rd := NewReader(r, maxEventBytes)
	rd.decoder = d
	return rd
}

// Release ends the Reader's use; it must not be used after. Events already returned stay valid (no
// event refers to the Reader's buffers). Buffers grown past what a common stream needs are dropped
// rather than kept in the pool.
func (r *Reader) Release() {
	r.reset()
	r.tr.r, r.decoder = nil, nil
	r.br.Reset(nil)
	if cap(r.data) > 64<<10 || cap(r.line) > 64<<10 || cap(r.comment) > 64<<10 {
		r.data, r.line, r.comment = nil, nil, nil
	}
	readers.Put(r)
}

// Next returns the next message. At the end of the stream it returns io.EOF (a message cut off by
// the end is io.ErrUnexpectedEOF). A payload that is not valid JSON returns the event (with At set)
// and a *MalformedError; reading may go on after it.
func (r *Reader) Next() (Event, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return r.atEnd()
			}
			return Event{}, err
		}
		if data, ok := r.wholeDataMessage(line); ok {
			ev, err := r.dispatch(data)
			r.reset()
			return ev, err
		}
		if ev, ok, err := r.step(line); ok {
			return ev, err
		}
	}
}

// step takes one line of the stream (without its terminator); ok says that it ended a message,
// which is ev (or an error: a payload that is not JSON, or data over the size limit). Next and Feed
// both read lines through it, so a stream pulled and a stream pushed give the same messages.
func (r *Reader) step(line []byte) (ev Event, ok bool, err error) {
	if len(line) == 0 {
		if !r.hasData {
			if r.comments {
				ev := Event{At: r.tr.last, Comment: true, CommentText: string(r.comment)}
				r.reset()
				return ev, true, nil
			}
			r.event = "" // an event name with no data dispatches nothing (as browsers do)
			return Event{}, false, nil
		}
		ev, err := r.dispatch(r.data)
		r.reset()
		return ev, true, err
	}
	r.field(line)
	if len(r.data) > r.max {
		r.reset()
		return Event{}, true, r.tooLarge()
	}
	return Event{}, false, nil
}

// atEnd is the stream's end: the message it cut, when that message is whole anyway (some servers
// end "data: [DONE]\n" without the blank line), else io.EOF or io.ErrUnexpectedEOF.
func (r *Reader) atEnd() (Event, error) {
	if !r.hasData {
		return Event{}, io.EOF
	}
	ev, derr := r.dispatch(r.data)
	r.reset()
	if derr != nil {
		return Event{}, io.ErrUnexpectedEOF
	}
	return ev, nil
}

func (r *Reader) tooLarge() error { return fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, r.max) }

// maxLine is the longest line a Reader takes: an event's limit, plus room for its field name.
func (r *Reader) maxLine() int { return r.max + 64 }

func (r *Reader) reset() {
	r.data, r.hasData, r.event, r.comments, r.comment = r.data[:0], false, "", false, r.comment[:0]
}

// wholeDataMessage is the streamed chunk's common shape read without copying: a message that is one
// `data:` line whose blank line is already in the buffer. Its payload is returned in place (valid
// until the next read) and the blank line consumed; anything else — a second data line to join, an
// end not yet in the buffer — takes the copying path. Comment and event lines before it were kept
// as usual (bench/README.md, "CPU per chunk": the copies into the line and data buffers were a share of plload's CPU per
// chunk).
func (r *Reader) wholeDataMessage(line []byte) ([]byte, bool) {
	// Buffered bytes only: a Peek past them would refill the buffer under line.
	next, _ := r.br.Peek(min(2, r.br.Buffered()))
	value, n := r.wholeData(line, next)
	if n == 0 {
		return nil, false
	}
	r.br.Discard(n)
	return value, true
}

// wholeData says whether line, followed by the bytes next, is a message of one data line whose
// blank line is there: its payload, and how many bytes of next the blank line takes (0: it is not).
func (r *Reader) wholeData(line, next []byte) ([]byte, int) {
	value, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || r.hasData || len(value) > r.max {
		return nil, 0
	}
	n := 0
	switch {
	case len(next) >= 1 && next[0] == '\n':
		n = 1
	case len(next) >= 2 && next[0] == '\r' && next[1] == '\n':
		n = 2
	default:
		return nil, 0
	}
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return value, n
}

// readLine returns one line without its terminator (\n or \r\n), refusing lines over maxLine. A
// line whole in the buffer is returned in place, valid until the next read.
func (r *Reader) readLine() ([]byte, error) {
	chunk, err := r.br.ReadSlice('\n')
	if err == nil {
		return r.lineOf(chunk[:len(chunk)-1])
	}
	r.line = append(r.line[:0], chunk...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(r.line) > r.maxLine() {
			// Drain the rest of the line without keeping it, so memory stays bounded.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.br.ReadSlice('\n')
			}
			return nil, r.tooLarge()
		}
		chunk, err = r.br.ReadSlice('\n')
		r.line = append(r.line, chunk...)
	}
	switch {
	case err == nil:
		return r.lineOf(r.line[:len(r.line)-1])
	case errors.Is(err, io.EOF) && len(r.line) > 0:
		return r.lineOf(r.line) // the last line, cut by the end: Next ends it
	}
	return nil, err
}

// lineOf is a line as the Reader takes it: over maxLine refused, one \r before the \n dropped.
func (r *Reader) lineOf(b []byte) ([]byte, error) {
	if len(b) > r.maxLine() {
		return nil, r.tooLarge()
	}
	return bytes.TrimSuffix(b, []byte("\r")), nil
}

func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		r.comments = true
		r.comment = append(r.comment[:0], bytes.TrimPrefix(line[1:], []byte(" "))...)
		return
	}
	name, value, found := bytes.Cut(line, []byte(":"))
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "data":
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "event":
		r.event = string(value)
	case "error":
		// Older llama.cpp servers report a mid-stream failure as an `error:` line, not as data.
		r.event = "error"
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	}
	// id and retry do not matter to a load generator; unknown fields are ignored, as the SSE spec says.
}

// dispatch decodes one message whose joined data is data.
func (r *Reader) dispatch(data []byte) (Event, error) {
	ev := Event{At: r.tr.last}
	if r.comments {
		ev.CommentText = string(r.comment)
	}
	data = bytes.TrimSpace(data)
	if r.decoder != nil {
		return r.decode(ev, data)
	}
	if string(data) == "[DONE]" {
		ev.Done = true
		return ev, nil
	}
	if r.event == "error" {
		ev.Err = parseErrorPayload(data)
		return ev, nil
	}
	if err := decodeChunk(data, &ev); err != nil {
		return ev, newMalformed("", data, err)
	}
	return ev, nil
}

// decode hands a message to the Reader's Decoder. It is a function of its own so that only its
// copy of the event escapes to the heap (the interface call takes its address): were the address
// taken in dispatch, every OpenAI chunk's event would be allocated too.
func (r *Reader) decode(ev Event, data []byte) (Event, error) {
	err := r.decoder.Decode(r.event, data, &ev)
	return ev, err
}

// chunk is the part of a streamed chat or completions chunk the reader needs.
type chunk struct {
	Choices []struct {
		Delta *struct {
			Role             string         `json:"role"`
			Content          *string        `json:"content"`
			ReasoningContent *string        `json:"reasoning_content"`
			Reasoning        *string        `json:"reasoning"`
			ToolCalls        []toolCallJSON `json:"tool_calls"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageJSON      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// toolCallJSON is one entry of delta.tool_calls. The index is read as a number of any form (servers
// send small integers; 1.0 is not worth a malformed chunk).
type toolCallJSON struct {
	Index    float64 `json:"index"`
	ID       string  `json:"id"`
	Type     string  `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (tc *toolCallJSON) delta() ToolCallDelta {
	return ToolCallDelta{Index: clampIndex(tc.Index), ID: tc.ID, Type: tc.Type, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
}

// clampIndex makes an int of a JSON index, keeping absurd values inside int32 (and NaN-free: JSON has
// none) so no conversion is implementation-defined.
func clampIndex(v float64) int {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < math.MinInt32:
		return math.MinInt32
	}
	return int(v)
}

type usageJSON struct {
	PromptTokens        *float64 `json:"prompt_tokens"`
	CompletionTokens    *float64 `json:"completion_tokens"`
	TotalTokens         *float64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *float64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *float64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	CachedTokens         *float64 `json:"cached_tokens"`
	CacheReadInputTokens *float64 `json:"cache_read_input_tokens"`
	PromptCacheHitTokens *float64 `json:"prompt_cache_hit_tokens"`
}

func decodeChunk(data []byte, ev *Event) error {
	if fastDecode(data, ev) {
		return nil
	}
	return decodeSlow(data, ev)
}

// decodeSlow decodes any chunk with encoding/json.
func decodeSlow(data []byte, ev *Event) error {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return err
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		ev.Err = parseErrorPayload(data)
	}
	for _, ch := range c.Choices {
		if ch.Text != nil {
			ev.Content += *ch.Text
		}
		if d := ch.Delta; d != nil {
			if d.Role != "" {
				ev.Role = d.Role
			}
			if d.Content != nil {
				ev.Content += *d.Content
			}
			if d.ReasoningContent != nil {
				ev.Reasoning += *d.ReasoningContent
			}
			if d.Reasoning != nil {
				ev.Reasoning += *d.Reasoning
			}
			for i := range d.ToolCalls {
				tc := &d.ToolCalls[i]
				ev.ToolCall += tc.Function.Name + tc.Function.Arguments
				ev.ToolCalls = append(ev.ToolCalls, tc.delta())
			}
		}
		if ch.FinishReason != nil {
			ev.FinishReason = *ch.FinishReason
		}
	}
	if u := c.Usage; u != nil {
		ev.Usage = u.toUsage()
	}
	return nil
}

func (u *usageJSON) toUsage() *Usage {
	out := &Usage{}
	set := func(dst *int, ok *bool, v *float64) {
		if v != nil {
			*dst, *ok = int(*v), true
		}
	}
	set(&out.PromptTokens, &out.HasPrompt, u.PromptTokens)
	set(&out.CompletionTokens, &out.HasCompletion, u.CompletionTokens)
	set(&out.TotalTokens, &out.HasTotal, u.TotalTokens)
	for _, v := range []*float64{u.CachedTokens, u.CacheReadInputTokens, u.PromptCacheHitTokens} {
		set(&out.CachedTokens, &out.HasCached, v)
	}
	if d := u.PromptTokensDetails; d != nil {
		set(&out.CachedTokens, &out.HasCached, d.CachedTokens)
	}
	if d := u.CompletionTokensDetails; d != nil {
		set(&out.ReasoningTokens, &out.HasReasoning, d.ReasoningTokens)
	}
	if !out.HasPrompt && !out.HasCompletion && !out.HasTotal && !out.HasCached {
		return nil // an empty usage object says nothing
	}
	return out
}

// parseErrorPayload reads {"error": {...}}, {"error": "text"}, {"message": ...} or plain text.
func parseErrorPayload(data []byte) *StreamError {
	var wrapped struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
	}
	if json.Unmarshal(data, &wrapped) != nil {
		return &StreamError{Message: strings.TrimSpace(string(data))}
	}
	if len(wrapped.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		}
		if json.Unmarshal(wrapped.Error, &obj) == nil && obj.Message != "" {
			e := &StreamError{Message: obj.Message, Type: obj.Type}
			if obj.Code != nil {
				e.Code = fmt.Sprint(obj.Code)
			}
			return e
		}
		var text string
		if json.Unmarshal(wrapped.Error, &text) == nil {
			return &StreamError{Message: text}
		}
	}
	if wrapped.Message != "" {
		return &StreamError{Message: wrapped.Message, Type: wrapped.Type}
	}
	return &StreamError{Message: strings.TrimSpace(string(data))}
}
