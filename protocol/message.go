package protocol

import (
	"encoding/json"

	"github.com/plload/plload/sse"
)

// Message is one chat message of a session's history, with its JSON rendered once: a session re-sends
// its whole history every turn. Each API lays the history out in its own body (chat sends the
// messages as they are; completions reads their text back into a transcript).
//
// The content is kept only inside encoded, at its exact size: a session holds its history for its
// whole life, thinking most of it, and a second copy of every message's text (with the slack of the
// buffers it was built in) doubled what the history held (bench/README.md's memory passes). Text
// reads it back for the rare uses that need it.
type Message struct {
	role    string
	encoded []byte // {"role":...,"content":...}; for a message with images, its text alone (image.go)
	tokens  int    // content's tokens in the scenario's tokenizer, for input_sequence_length without usage
	// parts are a user message's images (or the note that stands for them), rendered into each
	// request's body from the shared images, never held here as base64 (image.go); nil for the
	// text-only messages, which render as they always have.
	parts *imageParts
}

// NewMessage is a message of role with text content, tokens long in the scenario's tokenizer.
func NewMessage(role, content string, tokens int) Message {
	quoted := appendString(nil, content)
	enc := make([]byte, 0, len(`{"role":"","content":}`)+len(role)+len(quoted))
	enc = append(enc, `{"role":"`...)
	enc = append(enc, role...)
	enc = append(enc, `","content":`...)
	enc = append(enc, quoted...)
	enc = append(enc, '}')
	return Message{role: role, encoded: enc, tokens: tokens}
}

// NewRawMessage is a message given as its JSON object, sent as it is (a dataset's recorded
// messages); its tokens are unknown (0).
func NewRawMessage(role string, encoded []byte) Message {
	return Message{role: role, encoded: encoded}
}

// NewToolCallsMessage is the assistant's answer that asked for tool calls: its content (null when it
// had none) and its tool_calls exactly as streamed (docs/scenario.md: the server's own calls, never the
// client's idea of them).
func NewToolCallsMessage(content string, calls []sse.ToolCall, tokens int) Message {
	enc := []byte(`{"role":"assistant","content":`)
	if content == "" {
		enc = append(enc, "null"...)
	} else {
		enc = appendString(enc, content)
	}
	enc = append(enc, `,"tool_calls":`...)
	enc = sse.AppendToolCallsJSON(enc, calls)
	enc = append(enc, '}')
	return Message{role: "assistant", encoded: enc, tokens: tokens}
}

// NewToolMessage is one tool call's result.
func NewToolMessage(callID, content string, tokens int) Message {
	enc := append([]byte(`{"role":"tool","tool_call_id":`), appendString(nil, callID)...)
	enc = append(enc, `,"content":`...)
	enc = appendString(enc, content)
	enc = append(enc, '}')
	return Message{role: "tool", encoded: enc, tokens: tokens}
}

// Role is the message's role.
func (m Message) Role() string { return m.role }

// Tokens is the content's length in the scenario's tokenizer, as the message was made with.
func (m Message) Tokens() int { return m.tokens }

// Text is the message's content when it is text ("" for none, null, or a list of parts), and a
// message with images' text part (NewUserMessageWithImages): the completions endpoint's transcript
// and the nonce read it.
func (m Message) Text() string {
	var v struct {
		Content any `json:"content"`
	}
	_ = json.Unmarshal(m.encoded, &v)
	s, _ := v.Content.(string)
	return s
}

func appendString(buf []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(buf, q...)
}
