package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/plload/plload/sse"
)

// How a Responses answer becomes the record's fields (docs/apis.md): response.output_text.delta is
// content, response.reasoning_text.delta and response.reasoning_summary_text.delta reasoning, a
// function_call item's name (response.output_item.added) and its
// response.function_call_arguments.delta pieces tool-call text; response.completed (or
// response.incomplete) ends the answer with its usage: prompt = input_tokens (which counts the
// cached ones), cached = input_tokens_details.cached_tokens, output = output_tokens, reasoning =
// output_tokens_details.reasoning_tokens. response.failed and error events are the server's errors.
// The response's id (response.created, response.completed) is what target.history: server sends
// back as previous_response_id.

// responsesExpected says what a Responses stream starts with, for a stream that does not.
const responsesExpected = "expected the OpenAI Responses API's events (event: response.created first, as target.endpoint: responses asks for)"

// responsesEvent is the part of one Responses stream event the decoder reads.
type responsesEvent struct {
	Type        string          `json:"type"`
	Response    *responseJSON   `json:"response"`
	Item        *responseItem   `json:"item"`
	OutputIndex *float64        `json:"output_index"`
	ItemID      string          `json:"item_id"`
	Delta       json.RawMessage `json:"delta"`
	// An error event's own fields (the reference's), or an error object in another shape.
	Code    any             `json:"code"`
	Message string          `json:"message"`
	Error   json.RawMessage `json:"error"`
}

// responseJSON is a response object: the whole non-streamed answer, and what the stream's
// response.* events carry.
type responseJSON struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Status            string          `json:"status"`
	Output            []responseItem  `json:"output"`
	Usage             *responsesUsage `json:"usage"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// responseItem is one output item: a message, a reasoning item or a function call.
type responseItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// responsesUsage is a Responses usage object; absent counts stay nil (missing is not zero).
type responsesUsage struct {
	InputTokens        *float64 `json:"input_tokens"`
	OutputTokens       *float64 `json:"output_tokens"`
	TotalTokens        *float64 `json:"total_tokens"`
	InputTokensDetails *struct {
		CachedTokens *float64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens *float64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// usage is u as the record's usage; nil when it has neither an input nor an output count.
func (u *responsesUsage) usage() *sse.Usage {
	if u == nil {
		return nil
	}
	out := &sse.Usage{}
	if u.InputTokens != nil {
		out.PromptTokens, out.HasPrompt = clampInt(u.InputTokens), true
	}
	if u.OutputTokens != nil {
		out.CompletionTokens, out.HasCompletion = clampInt(u.OutputTokens), true
	}
	if u.TotalTokens != nil {
		out.TotalTokens, out.HasTotal = clampInt(u.TotalTokens), true
	}
	if d := u.InputTokensDetails; d != nil && d.CachedTokens != nil {
		out.CachedTokens, out.HasCached = clampInt(d.CachedTokens), true
	}
	if d := u.OutputTokensDetails; d != nil && d.ReasoningTokens != nil {
		out.ReasoningTokens, out.HasReasoning = clampInt(d.ReasoningTokens), true
	}
	if !out.HasPrompt && !out.HasCompletion {
		return nil
	}
	return out
}

// responsesDecoder decodes one Responses stream's events (an sse.Decoder, made per stream).
type responsesDecoder struct {
	started bool // a response.* event came
	// calls are the answer's function_call items in order, by item id (or output index where a
	// server gives no id), for the argument deltas that name only their item.
	calls []streamedCall
}

// streamedCall is one function_call item of the stream: its keys, and whether argument deltas came.
type streamedCall struct {
	itemID, outputIndex string
	args                bool
}

// call is the tool-call index of the item an event names: by item_id, then output_index, then the
// last call opened; -1 when none matches.
func (d *responsesDecoder) call(itemID string, outputIndex *float64) int {
	for i := len(d.calls) - 1; i >= 0; i-- {
		if itemID != "" && d.calls[i].itemID == itemID {
			return i
		}
	}
	if outputIndex != nil {
		key := strconv.Itoa(clampInt(outputIndex))
		for i := len(d.calls) - 1; i >= 0; i-- {
			if d.calls[i].outputIndex == key {
				return i
			}
		}
	}
	if itemID == "" && outputIndex == nil && len(d.calls) > 0 {
		return len(d.calls) - 1
	}
	return -1
}

// Decode reads one event. The name comes from the data's type (the event: line says the same, and
// a server that sends only one of them is read too). Events the decoder does not know are skipped,
// as the reference asks of clients (it adds event types); but a stream whose first event is not a
// response.* event is another API's, and an error saying so.
func (d *responsesDecoder) Decode(event string, data []byte, ev *sse.Event) error {
	if event == "error" {
		ev.Err = responsesError(data)
		return nil
	}
	var e responsesEvent
	if err := json.Unmarshal(data, &e); err != nil {
		if !d.started {
			return sse.NewMalformed(responsesExpected, data, err)
		}
		return sse.NewMalformed("an OpenAI Responses event that is not JSON", data, err)
	}
	typ := e.Type
	if typ == "" {
		typ = event
	}
	if typ == "error" || typ == "" && present(e.Error) {
		ev.Err = responsesError(data)
		return nil
	}
	if !strings.HasPrefix(typ, "response.") {
		if !d.started {
			return sse.NewMalformed(responsesExpected, data, nil)
		}
		return nil // another kind of event the reference may add
	}
	d.started = true
	if r := e.Response; r != nil && r.ID != "" {
		ev.ResponseID = r.ID
	}
	switch typ {
	case "response.created":
		ev.Role = "assistant" // the answer began: not a token
	case "response.output_item.added":
		if it := e.Item; it != nil && it.Type == "function_call" {
			c := streamedCall{itemID: it.ID}
			if e.OutputIndex != nil {
				c.outputIndex = strconv.Itoa(clampInt(e.OutputIndex))
			}
			d.calls = append(d.calls, c)
			i := len(d.calls) - 1
			ev.ToolCalls = []sse.ToolCallDelta{{Index: i, ID: it.CallID, Type: "function", Name: it.Name}}
			ev.ToolCall = it.Name
			if it.Arguments != "" { // a server that sends the arguments whole with the item
				d.calls[i].args = true
				ev.ToolCalls[0].Arguments = it.Arguments
				ev.ToolCall += it.Arguments
			}
		}
	case "response.output_text.delta", "response.refusal.delta":
		ev.Content = deltaText(e.Delta)
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		ev.Reasoning = deltaText(e.Delta)
	case "response.function_call_arguments.delta":
		if i := d.call(e.ItemID, e.OutputIndex); i >= 0 {
			piece := deltaText(e.Delta)
			d.calls[i].args = true
			ev.ToolCall = piece
			ev.ToolCalls = []sse.ToolCallDelta{{Index: i, Arguments: piece}}
		}
	case "response.output_item.done":
		// A call whose arguments came with no delta (a server that streams none) gets them here.
		if it := e.Item; it != nil && it.Type == "function_call" && it.Arguments != "" {
			if i := d.call(it.ID, e.OutputIndex); i >= 0 && !d.calls[i].args {
				d.calls[i].args = true
				ev.ToolCall = it.Arguments
				ev.ToolCalls = []sse.ToolCallDelta{{Index: i, Arguments: it.Arguments}}
			}
		}
	case "response.completed", "response.incomplete":
		ev.Done = true
		if r := e.Response; r != nil {
			ev.Usage = r.Usage.usage()
			ev.FinishReason = r.finishReason(typ == "response.incomplete")
		} else {
			ev.FinishReason = "stop"
		}
		if len(d.calls) > 0 && ev.FinishReason == "stop" {
			ev.FinishReason = "tool_calls"
		}
	case "response.failed":
		ev.Err = failedError(e.Response)
	}
	return nil
}

// deltaText is a delta's text: a JSON string, or "" for anything else.
func deltaText(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// finishReason is the answer's end in chat's words, which the record and the preflight read: an
// incomplete response's max_output_tokens is length (the reference's answer cut at the limit, not
// an error), its other reasons are kept as they are; a completed response is stop.
func (r *responseJSON) finishReason(incomplete bool) string {
	if !incomplete && r.Status != "incomplete" {
		return "stop"
	}
	reason := ""
	if r.IncompleteDetails != nil {
		reason = r.IncompleteDetails.Reason
	}
	switch reason {
	case "max_output_tokens", "":
		return "length"
	}
	return reason
}

// failedError is a failed response's error ({"code","message"}), or a message saying it had none.
func failedError(r *responseJSON) *sse.StreamError {
	if r != nil && present(r.Error) {
		if se := errorObject(r.Error); se != nil {
			return se
		}
	}
	return &sse.StreamError{Message: "the response failed (status failed) without an error message"}
}

// responsesError reads an error event — the reference's {"type":"error","code","message","param"},
// or {"error":{…}} as OpenAI's other APIs send — or an error in another shape as text.
func responsesError(data []byte) *sse.StreamError {
	var e responsesEvent
	if json.Unmarshal(data, &e) == nil {
		if present(e.Error) {
			if se := errorObject(e.Error); se != nil {
				return se
			}
		}
		if e.Message != "" {
			se := &sse.StreamError{Message: e.Message}
			if e.Code != nil {
				se.Code = fmt.Sprint(e.Code)
			}
			return se
		}
	}
	return &sse.StreamError{Message: strings.TrimSpace(string(data))}
}

// errorObject reads {"code","message","type"} (or a string); nil when it has no message.
func errorObject(raw json.RawMessage) *sse.StreamError {
	var obj struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    any    `json:"code"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		se := &sse.StreamError{Message: obj.Message, Type: obj.Type}
		if obj.Code != nil {
			se.Code = fmt.Sprint(obj.Code)
		}
		return se
	}
	var text string
	if json.Unmarshal(raw, &text) == nil && text != "" {
		return &sse.StreamError{Message: text}
	}
	return nil
}

// parseResponse reads a non-streamed answer, a response object: its messages' text, reasoning
// items' text (or summary), function calls, status and usage; an error object, or a failed
// response, comes back in Completion.Err. A body that is not a response (another API's answer, an
// HTML page) is an error saying what was expected.
func parseResponse(body []byte) (sse.Completion, error) {
	var out sse.Completion
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return out, fmt.Errorf("empty response body")
	}
	var r responseJSON
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return out, sse.NewMalformed("response is not the JSON of an OpenAI Responses answer", trimmed, err)
	}
	if r.Object != "response" && present(r.Error) {
		out.Err = responsesError(trimmed)
		return out, nil
	}
	if r.Object != "response" {
		return out, sse.NewMalformed(`response is not an OpenAI Responses answer (expected "object": "response", as target.endpoint: responses asks for)`, trimmed, nil)
	}
	out.ResponseID = r.ID
	if r.Status == "failed" {
		out.Err = failedError(&r)
		return out, nil
	}
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					out.Content += c.Text
				case "refusal":
					out.Content += c.Refusal
				}
			}
		case "reasoning":
			text := ""
			for _, c := range it.Content {
				text += c.Text
			}
			if text == "" { // only a summary: what the server shows of its reasoning
				for _, s := range it.Summary {
					text += s.Text
				}
			}
			out.Reasoning += text
		case "function_call":
			out.ToolCalls = append(out.ToolCalls, sse.ToolCall{ID: it.CallID, Type: "function", Name: it.Name, Arguments: it.Arguments})
		}
	}
	out.FinishReason = r.finishReason(false)
	if len(out.ToolCalls) > 0 && out.FinishReason == "stop" {
		out.FinishReason = "tool_calls"
	}
	out.Usage = r.Usage.usage()
	return out, nil
}
