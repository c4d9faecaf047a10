package sse

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Completion is a non-streamed chat (or completions) response: choices[0].message (or .text).
type Completion struct {
	// Content is message.content (or choices[0].text); Reasoning is message.reasoning_content or
	// reasoning (once when a server sends both with the same text, as vLLM does while it renames the
	// field).
	Content, Reasoning string
	ToolCalls          []ToolCall
	FinishReason       string
	// Usage is nil when the response has no non-empty usage (the rules of the streamed usage).
	Usage *Usage
	// Err is the server's error when the body is an error object.
	Err *StreamError
	// ResponseID is the answer's id where the API names one a later request may refer to (the
	// Responses API's previous_response_id); "" otherwise.
	ResponseID string
}

// completionJSON is the part of a non-streamed response ParseCompletion reads. Content and arguments
// are kept raw: a few servers send content as a list of parts, or arguments as an object.
type completionJSON struct {
	Choices []struct {
		Message *struct {
			Content          json.RawMessage `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        *string         `json:"reasoning"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *usageJSON      `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Object  json.RawMessage `json:"object"`
	Message json.RawMessage `json:"message"`
}

// ParseCompletion decodes a non-streamed response body. A body that is not JSON, or has no choices
// and no error, is an error that says what was found. An error body ({"error": {...}}, or vLLM's
// older {"object": "error", "message": ...}) is no error: it comes back in Completion.Err.
func ParseCompletion(body []byte) (Completion, error) {
	var out Completion
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return out, errors.New("empty response body")
	}
	var c completionJSON
	if err := json.Unmarshal(trimmed, &c); err != nil {
		return out, newMalformed("response is not the JSON of a completion", trimmed, err)
	}
	if u := c.Usage; u != nil {
		out.Usage = u.toUsage()
	}
	if present(c.Error) || len(c.Choices) == 0 && (string(c.Object) == `"error"` || present(c.Message)) {
		out.Err = parseErrorPayload(trimmed)
	}
	if len(c.Choices) == 0 {
		if out.Err != nil {
			return out, nil
		}
		return out, newMalformed("response has no choices and no error", trimmed, nil)
	}
	ch := &c.Choices[0]
	if ch.Text != nil {
		out.Content = *ch.Text
	}
	if ch.FinishReason != nil {
		out.FinishReason = *ch.FinishReason
	}
	if m := ch.Message; m != nil {
		out.Content += contentText(m.Content)
		var rc, r string
		if m.ReasoningContent != nil {
			rc = *m.ReasoningContent
		}
		if m.Reasoning != nil {
			r = *m.Reasoning
		}
		if rc == r {
			r = ""
		}
		out.Reasoning = rc + r
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			typ := tc.Type
			if typ == "" {
				typ = "function"
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Type: typ, Name: tc.Function.Name, Arguments: argumentsText(tc.Function.Arguments)})
		}
	}
	return out, nil
}

// contentText reads message.content: a string, null, or a list of parts whose text is joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		for _, p := range parts {
			s += p.Text
		}
	}
	return s
}

// argumentsText reads function.arguments: the string OpenAI sends, or (from a few servers) a JSON
// value, kept as its compact text.
func argumentsText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
