package mock

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// responsesEvents splits a Responses stream into its events (name, and data as JSON), insisting
// that each event's name and its data's type agree.
func responsesEvents(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, block := range strings.Split(strings.TrimSpace(body), "\n\n") {
		var name, data string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case strings.HasPrefix(line, ":"):
			default:
				t.Fatalf("a line that is neither event, data nor comment: %q", line)
			}
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev["type"] != name {
			t.Fatalf("event %q with data %s (%v)", name, data, err)
		}
		out = append(out, ev)
	}
	return out
}

// respond posts a Responses body and returns the status and the body.
func respond(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp := post(t, nil, url+"/responses", []byte(body))
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// responseUsage is a response object's usage: input tokens and cached ones.
func responseUsage(t *testing.T, resp map[string]any) (input, cached int) {
	t.Helper()
	u, ok := resp["usage"].(map[string]any)
	if !ok {
		t.Fatalf("no usage in %v", resp)
	}
	return int(u["input_tokens"].(float64)), int(u["input_tokens_details"].(map[string]any)["cached_tokens"].(float64))
}

// A streamed answer is the reference's event sequence: response.created (with the id) first, the
// message item with one output_text.delta per token, its done events, and the response with the
// output and usage (input_tokens counting the cached ones) last: cut at max_output_tokens, as
// ignore_eos makes it, that is response.incomplete, for the reason max_output_tokens.
func TestResponsesStream(t *testing.T) {
	m := start(t, nil)
	status, body := respond(t, m.BaseURL(), `{"model":"m","instructions":"Be brief.","input":[{"role":"user","content":"Hello there"}],"max_output_tokens":6,"stream":true,"ignore_eos":true}`)
	if status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", status, body)
	}
	evs := responsesEvents(t, body)
	first, last := evs[0], evs[len(evs)-1]
	id := first["response"].(map[string]any)["id"].(string)
	if first["type"] != "response.created" || !strings.HasPrefix(id, "resp_") || last["type"] != "response.incomplete" {
		t.Fatalf("first %v, last %v", first["type"], last["type"])
	}
	deltas, text := 0, ""
	for i, ev := range evs {
		if int(ev["sequence_number"].(float64)) != i {
			t.Fatalf("event %d has sequence_number %v", i, ev["sequence_number"])
		}
		if ev["type"] == "response.output_text.delta" {
			deltas++
			text += ev["delta"].(string)
		}
	}
	resp := last["response"].(map[string]any)
	out := resp["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
	reason := resp["incomplete_details"].(map[string]any)["reason"]
	if deltas != 6 || out != text || resp["id"] != id || resp["status"] != "incomplete" || reason != "max_output_tokens" {
		t.Errorf("%d deltas, output %q (streamed %q), id %v, status %v (%v)", deltas, out, text, resp["id"], resp["status"], reason)
	}
	if input, cached := responseUsage(t, resp); input <= 0 || cached < 0 || cached > input {
		t.Errorf("usage %v", resp["usage"])
	}
}

// A stored answer holds its conversation: the next turn sent with previous_response_id and only the
// new message is the same prompt as the whole conversation sent again (the same input_tokens), and
// the prefix cache hits it; a response never stored, or stored with store false, is
// previous_response_not_found, as OpenAI answers it.
func TestResponsesStoredConversation(t *testing.T) {
	m := start(t, nil)
	// Instructions long enough to fill the cache's blocks.
	instructions := strings.Repeat("You are a patient baker who answers in one short sentence. ", 8)
	status, body := respond(t, m.BaseURL(), fmt.Sprintf(`{"model":"m","instructions":%q,"input":[{"role":"user","content":"Name a bread."}],"max_output_tokens":5,"stream":false,"store":true}`, instructions))
	if status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", status, body)
	}
	var first map[string]any
	json.Unmarshal([]byte(body), &first)
	answer := first["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
	status, body = respond(t, m.BaseURL(), fmt.Sprintf(`{"model":"m","instructions":%q,"previous_response_id":%q,"input":[{"role":"user","content":"And a cake?"}],"max_output_tokens":5,"store":true}`, instructions, first["id"]))
	if status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", status, body)
	}
	var second map[string]any
	json.Unmarshal([]byte(body), &second)
	held, heldCached := responseUsage(t, second)
	status, body = respond(t, m.BaseURL(), fmt.Sprintf(`{"model":"m","instructions":%q,"input":[{"role":"user","content":"Name a bread."},`+
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":%q}]},{"role":"user","content":"And a cake?"}],"max_output_tokens":5,"store":false}`, instructions, answer))
	if status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", status, body)
	}
	var whole map[string]any
	json.Unmarshal([]byte(body), &whole)
	sent, sentCached := responseUsage(t, whole)
	if block := m.cache.block; held != sent || heldCached == 0 || sentCached != sent/block*block {
		t.Errorf("server-held: %d input tokens, %d cached; client-held: %d input, %d cached (the same prompt, every whole block cached the second time)", held, heldCached, sent, sentCached)
	}
	// The same conversation gets the same answer whoever held it (the plan is drawn from the
	// conversation, not the body, which differs in store and previous_response_id), so the two
	// history modes compare like for like.
	if a, b := outputText(t, second), outputText(t, whole); a != b {
		t.Errorf("the same conversation answered %q when the server held it, %q when the client did", a, b)
	}
	for name, id := range map[string]any{"unknown": "resp_nope", "store false": whole["id"]} {
		status, body = respond(t, m.BaseURL(), fmt.Sprintf(`{"model":"m","previous_response_id":%q,"input":"hi"}`, id))
		if status != http.StatusBadRequest || !strings.Contains(body, `"code":"previous_response_not_found"`) || !strings.Contains(body, `"param":"previous_response_id"`) {
			t.Errorf("%s: HTTP %d %s", name, status, body)
		}
	}
}

// The store is bounded: past its cap the oldest response is forgotten.
func TestResponsesStoreEvictsTheOldest(t *testing.T) {
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := newResponsesHandler(s)
	h.cap = 2
	for _, id := range []string{"a", "b", "a", "c"} {
		h.keep(id, []message{{Role: "user"}})
	}
	for id, want := range map[string]bool{"a": false, "b": true, "c": true} {
		if _, ok := h.conversation(id); ok != want {
			t.Errorf("%s held %v, want %v", id, ok, want)
		}
	}
}

// Bad input is a 400 naming what is accepted; an injected failure, streamed, is response.failed.
func TestResponsesBadInputAndFailures(t *testing.T) {
	m := start(t, nil)
	for body, want := range map[string]string{
		`{"model":"m"}`: "input: Field required",
		`{"model":"m","input":[{"type":"web_search_call"}]}`:           "input[0].type: accepted: message, function_call, function_call_output or reasoning",
		`{"model":"m","input":[{"role":"tool","content":"x"}]}`:        "input[0].role: accepted: user, assistant, system or developer",
		`{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`:   `tools[0]: accepted: {\"type\": \"function\", \"name\": ...}`,
		`{"model":"m","input":"hi","max_output_tokens":-1}`:            "max_output_tokens",
		`{"model":"m","input":[{"role":"user","content":[{"x":1}]}],"`: "not valid JSON",
	} {
		if status, got := respond(t, m.BaseURL(), body); status != http.StatusBadRequest || !strings.Contains(got, want) {
			t.Errorf("%s: HTTP %d %s; want 400 saying %q", body, status, got, want)
		}
	}
	failing := start(t, func(c *Config) { c.ErrorRate = 1 })
	status, body := respond(t, failing.BaseURL(), `{"model":"m","input":"hi","stream":true}`)
	if status != http.StatusOK || !strings.Contains(body, "event: response.failed") || !strings.Contains(body, "mock: injected internal server error") {
		t.Errorf("streamed failure: HTTP %d %s", status, body)
	}
	if status, body = respond(t, failing.BaseURL(), `{"model":"m","input":"hi"}`); status != http.StatusInternalServerError {
		t.Errorf("whole failure: HTTP %d %s", status, body)
	}
}

// Fuzz the mock's reading of a Responses request (its input items, tools and tool_choice): never
// a panic, whatever a client sends.
func FuzzResponsesRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","instructions":"x","input":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}],"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}}`))
	f.Add([]byte(`{"input":"hi","tool_choice":{}}`))
	f.Add([]byte(`{"input":[{"type":"function_call_output","output":[{"type":"input_text"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var rr responsesRequest
		if json.Unmarshal(data, &rr) != nil {
			return
		}
		in, err := messagesOf(rr.Input)
		if err != nil {
			return
		}
		_, _ = rr.chatRequest(in[:len(in)/2], in[len(in)/2:])
	})
}

// outputText is a response object's first output message's text.
func outputText(t *testing.T, resp map[string]any) string {
	t.Helper()
	out, _ := resp["output"].([]any)
	if len(out) == 0 {
		t.Fatalf("no output in %v", resp)
	}
	content, _ := out[0].(map[string]any)["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content in %v", out[0])
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}
