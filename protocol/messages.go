package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/plload/plload/sse"
)

// AnthropicVersion is the anthropic-version header every Messages request carries: the API's
// one stable version, which llama.cpp, vLLM and the gateways accept.
const AnthropicVersion = "2023-06-01"

// messages is Anthropic's Messages API (POST /messages): the persona goes as the top-level system,
// the turns as user and assistant messages, an answer's tool calls as tool_use blocks and their
// results as a user message of tool_result blocks; max_tokens is required. Its stream is named
// events (message_start, content_block_delta, …), which messages_answer.go decodes.
type messages struct{}

func (messages) Name() string { return "messages" }

func (messages) Path() string { return "/messages" }

// SetHeaders authenticates with x-api-key (never Authorization: Bearer, which Anthropic's API
// refuses) and names the API version, which it requires.
func (messages) SetHeaders(h http.Header, apiKey string) {
	if apiKey != "" {
		h.Set("X-Api-Key", apiKey)
	}
	h.Set("Anthropic-Version", AnthropicVersion)
}

func (messages) StreamEnd() string { return "event: message_stop" }

// shape: the limit goes as max_tokens always (workload's LimitField: the API refuses a request
// without it, whatever target.max_tokens_field says); no stream_options (usage comes in message_start and
// message_delta) and no ignore_eos (not the API's; extra_body may still send it to a server that
// honours it); system is the body's own.
func (messages) shape() shape {
	return shape{reserved: []string{"system"}, tools: anthropicTools}
}

func (messages) NewStreamReader(body io.Reader, maxEventBytes int) *sse.Reader {
	return sse.NewDecodingReader(body, maxEventBytes, &messagesDecoder{})
}

func (messages) ParseAnswer(body []byte) (sse.Completion, error) { return parseMessage(body) }

// ephemeral is the cache_control a breakpoint carries.
const ephemeral = `"cache_control":{"type":"ephemeral"}`

// appendInput writes the system messages (the persona) as the top-level system, joined by a blank
// line when a dataset has several, and the rest as messages: plain ones as rendered (their
// {"role","content"} is the Messages API's too), one with images as image and text blocks, an
// answer with tool calls as text and tool_use blocks, and each run of tool results as one user
// message of tool_result blocks, which the API wants right after the tool_use. With
// o.cacheControl the system and the last message end with a cache breakpoint, so a server that
// caches only where asked caches the persona and the conversation so far.
func (messages) appendInput(buf []byte, history []Message, o inputOptions) []byte {
	system, n := "", 0
	for _, m := range history {
		if m.role == "system" {
			if n > 0 {
				system += "\n\n"
			}
			system += m.Text()
			n++
		}
	}
	if n > 0 {
		buf = append(buf, `,"system":`...)
		if o.cacheControl {
			buf = append(buf, `[{"type":"text","text":`...)
			buf = appendString(buf, system)
			buf = append(buf, ","+ephemeral+"}]"...)
		} else {
			buf = appendString(buf, system)
		}
	}
	last := len(history) - 1
	for last >= 0 && history[last].role == "system" {
		last--
	}
	buf = append(buf, `,"messages":[`...)
	first := true
	for i := 0; i < len(history); i++ {
		m := history[i]
		if m.role == "system" {
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		switch {
		case m.parts != nil:
			buf = appendImageMessage(buf, m, messagesParts, o.cacheControl && i == last)
		case m.role == "tool":
			j := i
			for j+1 < len(history) && history[j+1].role == "tool" {
				j++
			}
			buf = appendToolResults(buf, history[i:j+1], o.cacheControl && j == last)
			i = j
		case m.role == "assistant" && bytes.Contains(m.encoded, []byte(`"tool_calls"`)):
			buf = appendToolUse(buf, m, o.cacheControl && i == last)
		case o.cacheControl && i == last:
			buf = appendMarked(buf, m)
		default:
			buf = append(buf, m.encoded...)
		}
	}
	return append(buf, ']')
}

// inputSize is the messages' rendered lengths; tool messages and the system prompt change shape a
// little, and the buffer grows for what the guess misses.
func (messages) inputSize(history []Message) int {
	n := 64
	for _, m := range history {
		n += len(m.encoded) + 1 + m.partsSize()
	}
	return n
}

// appendMarked writes a plain message with a cache breakpoint on its content's last block: a
// string content becomes one text block.
func appendMarked(buf []byte, m Message) []byte {
	var msg struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(m.encoded, &msg) != nil {
		return append(buf, m.encoded...)
	}
	buf = append(buf, `{"role":`...)
	buf = appendString(buf, msg.Role)
	buf = append(buf, `,"content":`...)
	var text string
	if json.Unmarshal(msg.Content, &text) == nil {
		buf = append(buf, `[{"type":"text","text":`...)
		buf = appendString(buf, text)
		return append(buf, ","+ephemeral+"}]}"...)
	}
	var blocks []json.RawMessage
	if json.Unmarshal(msg.Content, &blocks) != nil || len(blocks) == 0 {
		buf = append(buf, msg.Content...)
		return append(buf, '}')
	}
	buf = append(buf, '[')
	for k, b := range blocks {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = appendBlock(buf, b, k == len(blocks)-1)
	}
	return append(buf, "]}"...)
}

// appendBlock writes one content block (a JSON object), with a cache breakpoint when marked.
func appendBlock(buf []byte, block []byte, marked bool) []byte {
	block = bytes.TrimSpace(block)
	if !marked || len(block) < 2 || block[len(block)-1] != '}' {
		return append(buf, block...)
	}
	buf = append(buf, block[:len(block)-1]...)
	if len(bytes.TrimSpace(block[1:len(block)-1])) > 0 {
		buf = append(buf, ',')
	}
	return append(buf, ephemeral+"}"...)
}

// appendToolUse writes an answer that asked for tool calls as the assistant's text (when it had
// any) and one tool_use block per call, its input the call's arguments ({} when they are not a
// JSON object: the API takes only an object, and a model's broken arguments would get the whole
// request refused).
func appendToolUse(buf []byte, m Message, marked bool) []byte {
	var msg struct {
		Content   *string `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	if json.Unmarshal(m.encoded, &msg) != nil {
		return append(buf, m.encoded...)
	}
	var blocks [][]byte
	if msg.Content != nil && *msg.Content != "" {
		blocks = append(blocks, append(appendString([]byte(`{"type":"text","text":`), *msg.Content), '}'))
	}
	for _, c := range msg.ToolCalls {
		b := append([]byte(`{"type":"tool_use","id":`), appendString(nil, c.ID)...)
		b = append(b, `,"name":`...)
		b = appendString(b, c.Function.Name)
		b = append(b, `,"input":`...)
		b = append(b, toolInput(c.Function.Arguments)...)
		blocks = append(blocks, append(b, '}'))
	}
	buf = append(buf, `{"role":"assistant","content":[`...)
	for k, b := range blocks {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = appendBlock(buf, b, marked && k == len(blocks)-1)
	}
	return append(buf, "]}"...)
}

// toolInput is a call's arguments as the tool_use input: the compact JSON object, or {}.
func toolInput(arguments string) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(arguments), &obj) != nil || obj == nil {
		return []byte("{}")
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(arguments)) != nil {
		return []byte("{}")
	}
	return b.Bytes()
}

// appendToolResults writes a run of tool messages as one user message of tool_result blocks.
func appendToolResults(buf []byte, tools []Message, marked bool) []byte {
	buf = append(buf, `{"role":"user","content":[`...)
	for k, m := range tools {
		var msg struct {
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}
		_ = json.Unmarshal(m.encoded, &msg) // NewToolMessage's own rendering
		if k > 0 {
			buf = append(buf, ',')
		}
		b := append([]byte(`{"type":"tool_result","tool_use_id":`), appendString(nil, msg.ToolCallID)...)
		b = append(b, `,"content":`...)
		b = appendString(b, msg.Content)
		buf = appendBlock(buf, append(b, '}'), marked && k == len(tools)-1)
	}
	return append(buf, "]}"...)
}

// anthropicTools renders the workload's OpenAI function tools as the Messages API's tools (name,
// description, input_schema) and its tool_choice as the API's object: auto, any (OpenAI's
// required) or none.
func anthropicTools(tools []byte, choice string) ([]byte, []byte, error) {
	var in []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tools, &in); err != nil {
		return nil, nil, fmt.Errorf("the tools are not a JSON array of function tools: %w", err)
	}
	out := []byte{'['}
	for i, t := range in {
		if t.Function.Name == "" {
			return nil, nil, fmt.Errorf("tools[%d] has no function.name; the Messages API needs each tool's name", i)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"name":`...)
		out = appendString(out, t.Function.Name)
		if t.Function.Description != nil {
			out = append(out, `,"description":`...)
			out = appendString(out, *t.Function.Description)
		}
		out = append(out, `,"input_schema":`...)
		if params := bytes.TrimSpace(t.Function.Parameters); len(params) > 0 && string(params) != "null" {
			var b bytes.Buffer
			if err := json.Compact(&b, params); err != nil {
				return nil, nil, fmt.Errorf("tools[%d].function.parameters: %w", i, err)
			}
			out = append(out, b.Bytes()...)
		} else {
			out = append(out, `{"type":"object"}`...)
		}
		out = append(out, '}')
	}
	out = append(out, ']')
	var c string
	switch choice {
	case "auto", "":
		c = `{"type":"auto"}`
	case "required":
		c = `{"type":"any"}`
	case "none":
		c = `{"type":"none"}`
	default:
		return nil, nil, fmt.Errorf("tool_choice %q has no Messages API equivalent; accepted: auto, required (any) or none", choice)
	}
	return out, []byte(c), nil
}
