package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/plload/plload/sse"
)

// How a Messages answer becomes the record's fields (docs/apis.md): text_delta is content,
// thinking_delta reasoning, a tool_use block's name and its input_json_delta pieces tool-call text;
// message_start gives the prompt's usage, message_delta the output's and the stop reason,
// message_stop ends the answer. The prompt tokens are input_tokens plus both cache counters
// (Anthropic's input_tokens counts only what was neither read from nor written to the cache);
// the cached tokens are cache_read_input_tokens.

// messagesExpected says what a Messages stream starts with, for a stream that does not.
const messagesExpected = "expected the Anthropic Messages API's events (event: message_start first, as target.endpoint: messages asks for)"

// messagesEvent is the part of one Messages stream event the decoder reads.
type messagesEvent struct {
	Type    string   `json:"type"`
	Index   *float64 `json:"index"`
	Message *struct {
		Role  string         `json:"role"`
		Usage *messagesUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type     string `json:"type"`
		ID       string `json:"id"`
		Name     string `json:"name"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"content_block"`
	Delta *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		Thinking    string  `json:"thinking"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *messagesUsage  `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// messagesUsage is a Messages usage object; absent counts stay nil (missing is not zero).
type messagesUsage struct {
	InputTokens              *float64 `json:"input_tokens"`
	OutputTokens             *float64 `json:"output_tokens"`
	CacheReadInputTokens     *float64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *float64 `json:"cache_creation_input_tokens"`
}

// usageCounts gathers a stream's usage across its events: the prompt's from message_start (or a
// later event that repeats it), the output's from message_delta.
type usageCounts struct {
	input, output, cacheRead, cacheCreation             int
	hasInput, hasOutput, hasCacheRead, hasCacheCreation bool
}

// take merges u; withOutput: its output_tokens count (message_start's is a placeholder, 1 on
// Anthropic's API, 0 on llama.cpp's, before any token was generated).
func (c *usageCounts) take(u *messagesUsage, withOutput bool) {
	set := func(dst *int, has *bool, v *float64) {
		if v != nil {
			*dst, *has = clampInt(v), true
		}
	}
	set(&c.input, &c.hasInput, u.InputTokens)
	set(&c.cacheRead, &c.hasCacheRead, u.CacheReadInputTokens)
	set(&c.cacheCreation, &c.hasCacheCreation, u.CacheCreationInputTokens)
	if withOutput {
		set(&c.output, &c.hasOutput, u.OutputTokens)
	}
}

// usage is the counts as the record's usage; nil while there are none.
func (c *usageCounts) usage() *sse.Usage {
	u := &sse.Usage{}
	if c.hasInput || c.hasCacheRead || c.hasCacheCreation {
		u.PromptTokens, u.HasPrompt = c.input+c.cacheRead+c.cacheCreation, true
	}
	if c.hasCacheRead {
		u.CachedTokens, u.HasCached = c.cacheRead, true
	}
	if c.hasOutput {
		u.CompletionTokens, u.HasCompletion = c.output, true
	}
	if !u.HasPrompt && !u.HasCompletion {
		return nil
	}
	return u
}

// messagesEventTypes are the Messages API's own event types: a stream that begins with one of them is
// this API's, whatever else it lacks; one that begins with anything else is another API's.
var messagesEventTypes = map[string]bool{"message_start": true, "ping": true, "content_block_start": true,
	"content_block_delta": true, "content_block_stop": true, "message_delta": true, "message_stop": true}

// messagesDecoder decodes one Messages stream's events (an sse.Decoder, made per stream).
type messagesDecoder struct {
	started bool // message_start came
	counts  usageCounts
}

// Decode reads one event. The name comes from the data's type (the event: line says the same, and
// a server that sends only one of them is read too). Events the decoder does not know are skipped,
// as the API's reference asks of clients (it adds event types); but a stream whose first event is
// not message_start is another API's, and an error saying so.
func (d *messagesDecoder) Decode(event string, data []byte, ev *sse.Event) error {
	if event == "error" {
		ev.Err = messagesStreamError(data)
		return nil
	}
	var e messagesEvent
	if err := json.Unmarshal(data, &e); err != nil {
		if !d.started {
			return sse.NewMalformed(messagesExpected, data, err)
		}
		return sse.NewMalformed("an Anthropic Messages event that is not JSON", data, err)
	}
	typ := e.Type
	if typ == "" {
		typ = event
	}
	if typ == "error" || present(e.Error) {
		ev.Err = messagesStreamError(data)
		return nil
	}
	if !d.started && !messagesEventTypes[typ] {
		return sse.NewMalformed(messagesExpected, data, nil)
	}
	// A stream that starts past message_start is still this API's: llama.cpp's server sent one
	// that began at content_block_start, once in 228 answers of the real-server tier. Its usage
	// then comes from message_delta alone.
	d.started = d.started || typ != "ping"
	switch typ {
	case "message_start":
		if m := e.Message; m != nil {
			ev.Role = m.Role
			if m.Usage != nil {
				d.counts.take(m.Usage, false)
			}
		}
		ev.Usage = d.counts.usage()
	case "content_block_start":
		if b := e.ContentBlock; b != nil {
			switch b.Type {
			case "tool_use", "server_tool_use":
				ev.ToolCalls = []sse.ToolCallDelta{{Index: clampInt(e.Index), ID: b.ID, Type: "function", Name: b.Name}}
				ev.ToolCall = b.Name
			case "text":
				ev.Content = b.Text
			case "thinking":
				ev.Reasoning = b.Thinking
			}
		}
	case "content_block_delta":
		if dl := e.Delta; dl != nil {
			switch dl.Type {
			case "text_delta":
				ev.Content = dl.Text
			case "thinking_delta":
				ev.Reasoning = dl.Thinking
			case "input_json_delta":
				ev.ToolCall = dl.PartialJSON
				ev.ToolCalls = []sse.ToolCallDelta{{Index: clampInt(e.Index), Arguments: dl.PartialJSON}}
			}
			// signature_delta and citations_delta carry no generated text.
		}
	case "message_delta":
		if dl := e.Delta; dl != nil && dl.StopReason != nil {
			ev.FinishReason = finishReason(*dl.StopReason)
		}
		if e.Usage != nil {
			d.counts.take(e.Usage, true)
		}
		ev.Usage = d.counts.usage()
	case "message_stop":
		ev.Done = true
	case "ping":
		ev.Comment = true // a keep-alive, as an SSE comment is
	}
	return nil
}

// clampInt is a JSON number as an int kept inside int32 (0 for none), so that no conversion is
// implementation-defined: a count, or a content block's index, which is a tool call's index (the
// API numbers every block of the answer, text, thinking and tool_use alike, which orders the calls
// as chat's indices do).
func clampInt(v *float64) int {
	if v == nil || math.IsNaN(*v) {
		return 0
	}
	return int(max(min(*v, math.MaxInt32), math.MinInt32))
}

// finishReason is a stop_reason in chat's words, which the record and the preflight read:
// end_turn and stop_sequence are stop, max_tokens is length, tool_use is tool_calls; any other
// (pause_turn, refusal) is kept as it is.
func finishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return "stop"
	case "max_tokens":
		return "length"
	case "tool_use":
		return "tool_calls"
	}
	return stop
}

// messagesStreamError reads the API's error, {"type":"error","error":{"type":…,"message":…}}, or
// an error in another shape as text.
func messagesStreamError(data []byte) *sse.StreamError {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && present(e.Error) {
		var obj struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Code    any    `json:"code"`
		}
		if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
			se := &sse.StreamError{Message: obj.Message, Type: obj.Type}
			if obj.Code != nil {
				se.Code = fmt.Sprint(obj.Code)
			}
			return se
		}
		var text string
		if json.Unmarshal(e.Error, &text) == nil {
			return &sse.StreamError{Message: text}
		}
	}
	return &sse.StreamError{Message: strings.TrimSpace(string(data))}
}

// messageJSON is the part of a non-streamed Messages answer parseMessage reads.
type messageJSON struct {
	Type    string `json:"type"`
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      *messagesUsage  `json:"usage"`
	Error      json.RawMessage `json:"error"`
}

// parseMessage reads a non-streamed answer: its text, thinking and tool_use blocks, stop reason
// and usage; an error object comes back in Completion.Err. A body that is not a message (another
// API's answer, an HTML page) is an error saying what was expected.
func parseMessage(body []byte) (sse.Completion, error) {
	var out sse.Completion
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return out, fmt.Errorf("empty response body")
	}
	var m messageJSON
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return out, sse.NewMalformed("response is not the JSON of an Anthropic Messages answer", trimmed, err)
	}
	if m.Type == "error" || present(m.Error) {
		out.Err = messagesStreamError(trimmed)
		return out, nil
	}
	if m.Type != "message" {
		return out, sse.NewMalformed(`response is not an Anthropic Messages answer (expected "type": "message", as target.endpoint: messages asks for)`, trimmed, nil)
	}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			out.Content += b.Text
		case "thinking":
			out.Reasoning += b.Thinking
		case "tool_use", "server_tool_use":
			args := "{}"
			if input := bytes.TrimSpace(b.Input); len(input) > 0 && string(input) != "null" {
				var buf bytes.Buffer
				if json.Compact(&buf, input) == nil {
					args = buf.String()
				}
			}
			out.ToolCalls = append(out.ToolCalls, sse.ToolCall{ID: b.ID, Type: "function", Name: b.Name, Arguments: args})
		}
	}
	if m.StopReason != nil {
		out.FinishReason = finishReason(*m.StopReason)
	}
	if m.Usage != nil {
		var c usageCounts
		c.take(m.Usage, true)
		out.Usage = c.usage()
	}
	return out, nil
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
