package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/plload/plload/sse"
)

// responses is OpenAI's Responses API (POST /responses): the persona goes as instructions, the
// conversation as the input's items — a user's message as {"role","content"} (the reference's easy
// input message, which is chat's message as plload renders it), an earlier answer as an output
// message item (the one form llama.cpp takes), its tool calls as function_call items and their results as function_call_output items; the limit is
// max_output_tokens. With target.history: server every request is stored and a turn after an
// answered one sends only what is new, with previous_response_id naming that answer. Its stream is
// named events (response.created, response.output_text.delta, …), which responses_answer.go
// decodes.
type responses struct{}

func (responses) Name() string { return "responses" }

func (responses) Path() string { return "/responses" }

func (responses) SetHeaders(h http.Header, apiKey string) { setBearer(h, apiKey) }

func (responses) StreamEnd() string { return "event: response.completed" }

// shape: the limit goes as max_output_tokens (workload's LimitField: the API's only limit field;
// max_tokens is refused by OpenAI's); no stream_options (response.completed always carries usage) and no ignore_eos (not the API's;
// extra_body may still send it to a server that honours it); instructions, input, store and
// previous_response_id are the body's own.
func (responses) shape() shape {
	return shape{reserved: []string{"instructions", "input", "store", "previous_response_id"}, tools: responsesTools}
}

func (responses) NewStreamReader(body io.Reader, maxEventBytes int) *sse.Reader {
	return sse.NewDecodingReader(body, maxEventBytes, &responsesDecoder{})
}

func (responses) ParseAnswer(body []byte) (sse.Completion, error) { return parseResponse(body) }

// appendInput writes the system messages (the persona) as instructions, joined by a blank line when
// a dataset has several, then the input items. The reference does not carry instructions over from
// a previous_response_id, so they go with every request, in both history modes. With
// o.serverHistory the request is stored (store: true) and, when o.previous names the session's last
// answer, only the messages after what that answer stands for are sent, with previous_response_id;
// without it store is false: the client holds the history and sends it whole every turn.
func (responses) appendInput(buf []byte, history []Message, o inputOptions) []byte {
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
		buf = append(buf, `,"instructions":`...)
		buf = appendString(buf, system)
	}
	items := history
	continued := o.serverHistory && o.previous.ID != "" && o.previous.Held > 0 && o.previous.Held < len(history)
	if continued {
		items = history[o.previous.Held:]
	}
	buf = append(buf, `,"input":[`...)
	first := true
	for _, m := range items {
		if m.role == "system" {
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = appendItem(buf, m)
	}
	buf = append(buf, ']')
	if continued {
		buf = append(buf, `,"previous_response_id":`...)
		buf = appendString(buf, o.previous.ID)
	}
	if o.serverHistory {
		return append(buf, `,"store":true`...)
	}
	return append(buf, `,"store":false`...)
}

// inputSize is the messages' rendered lengths; tool messages and the instructions change shape a
// little, and the buffer grows for what the guess misses.
func (responses) inputSize(history []Message) int {
	n := 96
	for _, m := range history {
		n += len(m.encoded) + 1 + m.partsSize()
	}
	return n
}

// appendItem writes one message of the history as input items: a message with images as a message
// item of input_image and input_text parts, a tool result as a function_call_output item, an
// answer with tool calls as its text (when it had any) and one function_call item per call, a
// message whose content is a list of chat's parts with the parts in the Responses API's words, and
// any other as it was rendered.
func appendItem(buf []byte, m Message) []byte {
	switch {
	case m.parts != nil:
		return appendImageMessage(buf, m, responsesParts, false)
	case m.role == "tool":
		var msg struct {
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}
		_ = json.Unmarshal(m.encoded, &msg) // NewToolMessage's own rendering
		buf = append(buf, `{"type":"function_call_output","call_id":`...)
		buf = appendString(buf, msg.ToolCallID)
		buf = append(buf, `,"output":`...)
		buf = appendString(buf, msg.Content)
		return append(buf, '}')
	case m.role == "assistant" && bytes.Contains(m.encoded, []byte(`"tool_calls"`)):
		return appendFunctionCalls(buf, m)
	case bytes.Contains(m.encoded, []byte(`"content":[`)):
		return appendParts(buf, m)
	case m.role == "assistant":
		return appendOutputMessage(buf, m.Text())
	}
	return append(buf, m.encoded...)
}

// appendOutputMessage writes an earlier answer's text as the reference's output message item
// ({"type":"message","role":"assistant","content":[{"type":"output_text",…}]}): llama.cpp takes an
// assistant's words only in that form, and OpenAI's reference lists it beside the easy message.
func appendOutputMessage(buf []byte, text string) []byte {
	buf = append(buf, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":`...)
	buf = appendString(buf, text)
	return append(buf, "}]}"...)
}

// appendFunctionCalls writes an answer that asked for tool calls as the assistant's text message
// (when it had text) and one function_call item per call, its arguments as the server streamed them.
func appendFunctionCalls(buf []byte, m Message) []byte {
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
	first := true
	if msg.Content != nil && *msg.Content != "" {
		buf = appendOutputMessage(buf, *msg.Content)
		first = false
	}
	for _, c := range msg.ToolCalls {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, `{"type":"function_call","call_id":`...)
		buf = appendString(buf, c.ID)
		buf = append(buf, `,"name":`...)
		buf = appendString(buf, c.Function.Name)
		buf = append(buf, `,"arguments":`...)
		buf = appendString(buf, c.Function.Arguments)
		buf = append(buf, '}')
	}
	if first { // no text and no calls: an empty answer still holds its place
		buf = appendOutputMessage(buf, "")
	}
	return buf
}

// appendParts writes a message whose content is a list of chat's parts (a dataset's) with its parts
// as the Responses API names them: text as input_text (output_text in an assistant's message), an
// image_url as input_image. Parts of other types go as they are.
func appendParts(buf []byte, m Message) []byte {
	var msg struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal(m.encoded, &msg) != nil {
		return append(buf, m.encoded...)
	}
	textType := "input_text"
	if msg.Role == "assistant" {
		textType = "output_text"
	}
	if msg.Role == "assistant" {
		buf = append(buf, `{"type":"message","role":"assistant","content":[`...)
	} else {
		buf = append(buf, `{"role":`...)
		buf = appendString(buf, msg.Role)
		buf = append(buf, `,"content":[`...)
	}
	for k, raw := range msg.Content {
		if k > 0 {
			buf = append(buf, ',')
		}
		var part struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL *struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		_ = json.Unmarshal(raw, &part)
		switch {
		case part.Type == "text":
			buf = append(buf, `{"type":"`+textType+`","text":`...)
			buf = appendString(buf, part.Text)
			buf = append(buf, '}')
		case part.Type == "image_url" && part.ImageURL != nil:
			buf = append(buf, `{"type":"input_image","image_url":`...)
			buf = appendString(buf, part.ImageURL.URL)
			buf = append(buf, '}')
		default:
			buf = append(buf, bytes.TrimSpace(raw)...)
		}
	}
	return append(buf, "]}"...)
}

// responsesTools renders the workload's OpenAI function tools in the Responses API's flat shape
// ({"type":"function","name","description","parameters"}); tool_choice's auto, required and none
// are the API's own words.
func responsesTools(tools []byte, choice string) ([]byte, []byte, error) {
	var in []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tools, &in); err != nil {
		return nil, nil, fmt.Errorf("the tools are not a JSON array of function tools: %w", err)
	}
	out := []byte{'['}
	for i, t := range in {
		if t.Function.Name == "" {
			return nil, nil, fmt.Errorf("tools[%d] has no function.name; the Responses API needs each tool's name", i)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"type":"function","name":`...)
		out = appendString(out, t.Function.Name)
		if t.Function.Description != nil {
			out = append(out, `,"description":`...)
			out = appendString(out, *t.Function.Description)
		}
		if params := bytes.TrimSpace(t.Function.Parameters); len(params) > 0 && string(params) != "null" {
			var b bytes.Buffer
			if err := json.Compact(&b, params); err != nil {
				return nil, nil, fmt.Errorf("tools[%d].function.parameters: %w", i, err)
			}
			out = append(out, `,"parameters":`...)
			out = append(out, b.Bytes()...)
		}
		if t.Function.Strict != nil {
			out = append(out, fmt.Sprintf(`,"strict":%t`, *t.Function.Strict)...)
		}
		out = append(out, '}')
	}
	out = append(out, ']')
	switch choice {
	case "auto", "required", "none":
	case "":
		choice = "auto"
	default:
		return nil, nil, fmt.Errorf("tool_choice %q has no Responses API equivalent; accepted: auto, required or none", choice)
	}
	return out, appendString(nil, choice), nil
}
