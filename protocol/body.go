package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/plload/plload/workload"
)

// Body renders a stage's request bodies for its API. The parts that never change (model, options,
// extra_body) are rendered once per stage; the API lays out each turn's history between them.
type Body struct {
	api    API
	input  inputOptions // what the API's input takes from the scenario besides the history
	prefix []byte       // `{"model":...` of target.model
	// prefixes are the prefixes of target.models' names, for sessions that ask for one of them.
	prefixes  map[string][]byte
	maxField  string // "" when extra_body sets the max-tokens field itself
	fixedTail []byte // `,"stream":true,...}` with extra_body
	// exactOK: extra_body does not set ignore_eos, so a trace's exact output lengths may.
	exactOK bool
	// toolsTokens is the tools block's length in the scenario's tokenizer: a server counts it
	// in every request's prompt, so the client's count of the prompt does too.
	toolsTokens int
}

// NewBody renders the fixed parts of sc's requests to api, with what the workload w (nil: none)
// adds to every request: tools, tool_choice, response_format. A key of target.extra_body that
// plload sets itself is an error naming it.
func NewBody(api API, sc *workload.Scenario, w *workload.Workload) (*Body, error) {
	t := sc.Target
	shape := api.shape()
	b := &Body{api: api, maxField: t.LimitField(), input: inputOptions{cacheControl: t.CacheControl, serverHistory: t.History == workload.HistoryServer}}
	modelPrefix := func(name string) []byte {
		model, _ := json.Marshal(name)
		return append([]byte(`{"model":`), model...)
	}
	b.prefix = modelPrefix(t.Model)
	for _, m := range t.Models {
		if b.prefixes == nil {
			b.prefixes = map[string][]byte{}
		}
		b.prefixes[m.Name] = modelPrefix(m.Name)
	}
	reserved := append(slices.Clone(workload.ReservedBodyKeys), shape.reserved...)
	var features bytes.Buffer // what the session's workload adds to every request (docs/scenario.md)
	if w != nil {
		if tools := w.ToolsJSON(); tools != nil {
			reserved = append(reserved, "tools", "tool_choice")
			choice := appendString(nil, w.ToolChoice())
			if shape.tools != nil {
				var err error
				if tools, choice, err = shape.tools(tools, w.ToolChoice()); err != nil {
					return nil, fmt.Errorf("session.tools: %w", err)
				}
			}
			features.WriteString(`,"tools":`)
			features.Write(tools)
			b.toolsTokens = sc.Tokenizer().Count(string(tools))
			features.WriteString(`,"tool_choice":`)
			features.Write(choice)
		}
		if rf := w.ResponseFormatJSON(); rf != nil {
			reserved = append(reserved, "response_format")
			features.WriteString(`,"response_format":`)
			features.Write(rf)
		}
	}
	keys := make([]string, 0, len(t.ExtraBody))
	for k := range t.ExtraBody {
		if slices.Contains(reserved, k) {
			return nil, fmt.Errorf("target.extra_body.%s: plload sets %s itself; remove it from extra_body", k, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var tail bytes.Buffer
	tail.Write(features.Bytes())
	if sc.Streamed() {
		tail.WriteString(`,"stream":true`)
		if _, set := t.ExtraBody["stream_options"]; !set && shape.streamOptions {
			tail.WriteString(`,"stream_options":{"include_usage":true}`)
		}
	} else {
		tail.WriteString(`,"stream":false`)
	}
	for _, k := range keys {
		v, err := json.Marshal(workload.JSONValue(t.ExtraBody[k]))
		if err != nil {
			return nil, fmt.Errorf("target.extra_body.%s: %w", k, err)
		}
		kq, _ := json.Marshal(k)
		tail.WriteByte(',')
		tail.Write(kq)
		tail.WriteByte(':')
		tail.Write(v)
	}
	tail.WriteByte('}')
	b.fixedTail = tail.Bytes()
	if _, set := t.ExtraBody[b.maxField]; set {
		b.maxField = "" // the user's extra_body value wins
	}
	_, ignoreSet := t.ExtraBody["ignore_eos"]
	b.exactOK = !ignoreSet && shape.ignoreEOS
	return b, nil
}

// shape is how an API's body differs in its fixed parts: what Body renders once per stage.
type shape struct {
	// streamOptions: a streamed request asks for usage with stream_options.include_usage.
	streamOptions bool
	// ignoreEOS: an exact output length is asked for with ignore_eos (vLLM's, SGLang's).
	ignoreEOS bool
	// reserved are the body's keys the API sets itself beyond workload.ReservedBodyKeys.
	reserved []string
	// tools renders the workload's tools (OpenAI's function tools) and tool_choice in the API's
	// own shape; nil: as they are.
	tools func(tools []byte, choice string) (toolsJSON, choiceJSON []byte, err error)
}

// openAIShape is the fixed parts of OpenAI's chat and completions bodies.
var openAIShape = shape{streamOptions: true, ignoreEOS: true}

// inputOptions are the scenario's choices an API's input (appendInput) follows besides the history.
type inputOptions struct {
	// cacheControl marks prompt-cache breakpoints (target.cache_control; Messages only).
	cacheControl bool
	// serverHistory: the server holds the conversation (target.history: server; Responses only);
	// previous is what it holds of this request's session (set per request by BuildAfter).
	serverHistory bool
	previous      Previous
}

// Previous is what the server holds of a session's conversation under target.history: server: the
// id of the session's last answer, and how many of the history's messages that answer stands for
// (those sent before it and the answer itself). The zero value is nothing: the history goes whole.
type Previous struct {
	ID   string
	Held int
}

// ToolsTokens is the tools block's length in the scenario's tokenizer (0 without tools): part of
// every request's prompt as the server counts it. A nil Body (a retrieval stage's) has none.
func (b *Body) ToolsTokens() int {
	if b == nil {
		return 0
	}
	return b.toolsTokens
}

// Build renders the request for the history (ending with the new user message) to model (""
// target.model) into buf (nil: a buffer sized to fit). exact asks for exactly maxTokens
// (ignore_eos, which vLLM and SGLang honour), unless extra_body decides.
func (b *Body) Build(buf []byte, model string, history []Message, maxTokens int, exact bool) []byte {
	return b.BuildAfter(buf, model, history, Previous{}, maxTokens, exact)
}

// BuildAfter is Build for a session whose server holds prev of its history (target.history:
// server): an API that can refer to it (Responses' previous_response_id) sends only the rest; every
// other API, and every other history mode, ignores prev.
func (b *Body) BuildAfter(buf []byte, model string, history []Message, prev Previous, maxTokens int, exact bool) []byte {
	prefix := b.prefix
	if p, ok := b.prefixes[model]; ok {
		prefix = p
	}
	if buf == nil {
		if n := b.api.inputSize(history); n > 0 {
			// Sized to fit: a guessed size either copies the body again as it grows or zeroes
			// kilobytes it never uses, on every request (bench/README.md, "CPU per chunk").
			buf = make([]byte, 0, len(prefix)+len(b.fixedTail)+96+n) // 96: the max-tokens field, its value and ignore_eos
		}
	}
	buf = append(buf[:0], prefix...)
	input := b.input
	input.previous = prev
	buf = b.api.appendInput(buf, history, input)
	if b.maxField != "" {
		buf = append(buf, `,"`...)
		buf = append(buf, b.maxField...)
		buf = append(buf, `":`...)
		buf = strconv.AppendInt(buf, int64(maxTokens), 10)
	}
	if exact && b.exactOK {
		buf = append(buf, `,"ignore_eos":true`...)
	}
	return append(buf, b.fixedTail...)
}
