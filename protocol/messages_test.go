package protocol

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/plload/plload/sse"
)

// The Messages body: the persona as the top-level system, the turns as messages rendered as chat
// renders them, max_tokens whatever target.max_tokens_field says, and stream without
// stream_options.
func TestMessagesBodyHasTheSystemAtTopLevel(t *testing.T) {
	sc := target("messages")
	sc.Target.MaxTokensField = "max_completion_tokens"
	got := build(t, sc, nil, "", conversation(), 50, true)
	want := `{"model":"m","system":"Be brief.","messages":[` +
		`{"role":"user","content":"Hi"},` +
		`{"role":"assistant","content":"Hello!"},` +
		`{"role":"user","content":"Say \"ok\"\nthen stop"}],` +
		`"max_tokens":50,"stream":true}`
	if got != want {
		t.Errorf("messages body\n got %s\nwant %s", got, want)
	}
	sc.Target.Stream = new(bool)
	if got := build(t, sc, nil, "", conversation()[1:2], 7, false); got != `{"model":"m","messages":[{"role":"user","content":"Hi"}],"max_tokens":7,"stream":false}` {
		t.Errorf("without a persona, not streamed: %s", got)
	}
}

// target.cache_control puts a breakpoint on the persona and on the history's last message, whose
// string content becomes a text block; nothing else changes.
func TestMessagesBodyCacheControlBreakpoints(t *testing.T) {
	sc := target("messages")
	sc.Target.CacheControl = true
	got := build(t, sc, nil, "", conversation(), 50, false)
	want := `{"model":"m","system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[` +
		`{"role":"user","content":"Hi"},` +
		`{"role":"assistant","content":"Hello!"},` +
		`{"role":"user","content":[{"type":"text","text":"Say \"ok\"\nthen stop","cache_control":{"type":"ephemeral"}}]}],` +
		`"max_tokens":50,"stream":true}`
	if got != want {
		t.Errorf("cache_control body\n got %s\nwant %s", got, want)
	}
	raw := `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`
	got = build(t, sc, nil, "", []Message{NewRawMessage("user", []byte(raw))}, 1, false)
	if !strings.Contains(got, `"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}]`) {
		t.Errorf("a list of blocks gets its breakpoint on the last: %s", got)
	}
}

// An agent round: the answer's tool calls go as tool_use blocks (after its text, input the
// arguments' object, {} for none), the run of tool results as one user message of tool_result
// blocks; with cache_control the last block carries the breakpoint.
func TestMessagesBodyToolUseAndResults(t *testing.T) {
	calls := []sse.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city": "Oslo"}`}, {ID: "c2", Name: "now", Arguments: ""}}
	h := append(conversation()[:2],
		NewToolCallsMessage("", calls, 9),
		NewToolMessage("c1", "4 °C", 3),
		NewToolMessage("c2", "noon", 1),
		NewToolCallsMessage("checking", calls[:1], 5),
		NewToolMessage("c1", "5 °C", 3))
	sc := target("messages")
	got := build(t, sc, nil, "", h, 10, false)
	want := `{"model":"m","system":"Be brief.","messages":[{"role":"user","content":"Hi"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"get_weather","input":{"city":"Oslo"}},` +
		`{"type":"tool_use","id":"c2","name":"now","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"4 °C"},{"type":"tool_result","tool_use_id":"c2","content":"noon"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"checking"},{"type":"tool_use","id":"c1","name":"get_weather","input":{"city":"Oslo"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"5 °C"}]}],` +
		`"max_tokens":10,"stream":true}`
	if got != want {
		t.Errorf("tool rounds\n got %s\nwant %s", got, want)
	}
	sc.Target.CacheControl = true
	got = build(t, sc, nil, "", h, 10, false)
	if !strings.HasSuffix(got, `{"type":"tool_result","tool_use_id":"c1","content":"5 °C","cache_control":{"type":"ephemeral"}}]}],"max_tokens":10,"stream":true}`) ||
		strings.Count(got, "cache_control") != 2 {
		t.Errorf("cache_control on the last tool result and the system only: %s", got)
	}
}

// The workload's OpenAI function tools go in the Messages API's shape, tool_choice as its object;
// their tokens are counted in that shape.
func TestMessagesBodyTools(t *testing.T) {
	sc, w := agentScenario(t)
	sc.Target.Endpoint = "messages"
	api, _ := For("messages")
	sc.Target.ExtraBody = nil
	// response_format is not the Messages API's (validate refuses it); the body is built without it.
	body, err := NewBody(api, sc, w)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tools []map[string]json.RawMessage `json:"tools"`
		// ToolChoice is the Messages API's object.
		ToolChoice map[string]string `json:"tool_choice"`
	}
	out := body.Build(nil, "", conversation(), 10, false)
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Tools) != 6 {
		t.Fatalf("%d tools: %s", len(got.Tools), out)
	}
	for i, tool := range got.Tools {
		if tool["name"] == nil || tool["input_schema"] == nil || tool["function"] != nil || tool["type"] != nil {
			t.Errorf("tools[%d] not in the Messages shape: %v", i, tool)
		}
	}
	wantChoice := map[string]string{"auto": "auto", "required": "any", "none": "none"}[w.ToolChoice()]
	if got.ToolChoice["type"] != wantChoice {
		t.Errorf("tool_choice %v for %q; want type %s", got.ToolChoice, w.ToolChoice(), wantChoice)
	}
	tools, _, _ := anthropicTools(w.ToolsJSON(), w.ToolChoice())
	if body.ToolsTokens() != sc.Tokenizer().Count(string(tools)) {
		t.Errorf("ToolsTokens %d; want the Messages tools' count %d", body.ToolsTokens(), sc.Tokenizer().Count(string(tools)))
	}
	if _, _, err := anthropicTools([]byte(`[{"type":"function","function":{"name":"f"}}]`), "sometimes"); err == nil {
		t.Error("an unknown tool_choice was accepted")
	}
	tools, _, err = anthropicTools([]byte(`[{"type":"function","function":{"name":"f"}}]`), "auto")
	if err != nil || string(tools) != `[{"name":"f","input_schema":{"type":"object"}}]` {
		t.Errorf("a tool without parameters: %s %v", tools, err)
	}
}

// system is the body's own key, beside the ones every API reserves.
func TestMessagesReservesSystem(t *testing.T) {
	sc := target("messages")
	sc.Target.ExtraBody = map[string]any{"system": "x"}
	api, _ := For("messages")
	if _, err := NewBody(api, sc, nil); err == nil || !strings.Contains(err.Error(), "target.extra_body.system") {
		t.Errorf("extra_body.system: %v", err)
	}
	if _, err := NewBody(&chat{}, sc, nil); err != nil {
		t.Errorf("chat does not set system: %v", err)
	}
}

// The key goes as x-api-key with the API's version; chat's as a bearer token; no key, no header.
func TestMessagesHeaders(t *testing.T) {
	h := http.Header{}
	messages{}.SetHeaders(h, "sk-ant-1")
	if h.Get("x-api-key") != "sk-ant-1" || h.Get("anthropic-version") != "2023-06-01" || h.Get("Authorization") != "" {
		t.Errorf("messages headers %v", h)
	}
	h = http.Header{}
	messages{}.SetHeaders(h, "")
	if _, set := h["X-Api-Key"]; set || h.Get("anthropic-version") == "" {
		t.Errorf("messages headers without a key %v", h)
	}
	h = http.Header{}
	chat{}.SetHeaders(h, "sk-1")
	if h.Get("Authorization") != "Bearer sk-1" || h.Get("x-api-key") != "" {
		t.Errorf("chat headers %v", h)
	}
}
