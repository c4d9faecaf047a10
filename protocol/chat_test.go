package protocol

import (
	"strings"
	"testing"

	"github.com/plload/plload/sse"
)

// The chat body is the model, the history as the messages array — every message exactly as
// rendered, in order — the max-tokens field, and the stream options.
func TestChatBodyIsTheMessages(t *testing.T) {
	got := build(t, target("chat"), nil, "", conversation(), 50, false)
	want := `{"model":"m","messages":[` +
		`{"role":"system","content":"Be brief."},` +
		`{"role":"user","content":"Hi"},` +
		`{"role":"assistant","content":"Hello!"},` +
		`{"role":"user","content":"Say \"ok\"\nthen stop"}],` +
		`"max_tokens":50,"stream":true,"stream_options":{"include_usage":true}}`
	if got != want {
		t.Errorf("chat body\n got %s\nwant %s", got, want)
	}
}

// An agent round sends the answer that asked for tool calls — content null when it had none, the
// calls as the server streamed them — and one tool message per call; extra_body's keys follow in
// sorted order.
func TestChatBodyWithToolCalls(t *testing.T) {
	sc := target("chat")
	sc.Target.ExtraBody = map[string]any{"top_p": 0.9, "chat_template_kwargs": map[any]any{"enable_thinking": false}}
	calls := []sse.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, {ID: "c2", Type: "function", Name: "now", Arguments: ""}}
	h := append(conversation()[:2],
		NewToolCallsMessage("", calls, 9),
		NewToolMessage("c1", "4 °C", 3),
		NewToolMessage("c2", "noon", 1),
		NewToolCallsMessage("checking", calls[:1], 5))
	got := build(t, sc, nil, "", h, 10, false)
	want := `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},` +
		`{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},` +
		`{"id":"c2","type":"function","function":{"name":"now","arguments":""}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"4 °C"},` +
		`{"role":"tool","tool_call_id":"c2","content":"noon"},` +
		`{"role":"assistant","content":"checking","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}],` +
		`"max_tokens":10,"stream":true,"stream_options":{"include_usage":true},` +
		`"chat_template_kwargs":{"enable_thinking":false},"top_p":0.9}`
	if got != want {
		t.Errorf("chat body with tool calls\n got %s\nwant %s", got, want)
	}
}

// A dataset's recorded message goes as the file has it, whatever its content's shape.
func TestChatBodySendsRawMessagesAsTheyAre(t *testing.T) {
	raw := `{"role":"user","content":[{"type":"text","text":"parts"}],"name":"x"}`
	got := build(t, target("chat"), nil, "", []Message{NewRawMessage("user", []byte(raw))}, 1, false)
	if !strings.HasPrefix(got, `{"model":"m","messages":[`+raw+`],"max_tokens":1,`) {
		t.Errorf("raw message: %s", got)
	}
}

// A chat body is built in one allocation, at its size (bench/README.md, "CPU per chunk"), and into
// a caller's buffer in none.
func TestChatBodyAllocatesOnce(t *testing.T) {
	api, _ := For("chat")
	body, err := NewBody(api, target("chat"), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := conversation()
	if n := testing.AllocsPerRun(100, func() { _ = body.Build(nil, "", h, 100, true) }); n != 1 {
		t.Errorf("Build(nil, …) allocates %.0f times; want 1", n)
	}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = body.Build(buf, "", h, 100, true) }); n != 0 {
		t.Errorf("Build(buf, …) allocates %.0f times; want 0", n)
	}
}

// The chat API posts to /chat/completions and reads chat.completion chunks and bodies: delta
// content, reasoning and tool calls; message content and tool calls.
func TestChatReadsItsAnswers(t *testing.T) {
	api, _ := For("chat")
	if api.Path() != "/chat/completions" {
		t.Errorf("path %s", api.Path())
	}
	stream := "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"hm\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n" +
		"data: [DONE]\n\n"
	evs := readAll(t, api, stream)
	if len(evs) != 5 || evs[0].Reasoning != "hm" || evs[1].Content != "Hi" || evs[2].ToolCall != "f{}" || evs[2].FinishReason != "tool_calls" ||
		evs[3].Usage == nil || evs[3].Usage.CompletionTokens != 3 || !evs[4].Done {
		t.Errorf("chat stream read as %+v", evs)
	}
	c, err := api.ParseAnswer([]byte(`{"choices":[{"message":{"role":"assistant","content":"Hi","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`))
	if err != nil || c.Content != "Hi" || len(c.ToolCalls) != 1 || c.ToolCalls[0].Name != "f" || c.Usage == nil || c.Usage.PromptTokens != 5 {
		t.Errorf("chat answer read as %+v, %v", c, err)
	}
}

// readAll is every event of stream as api reads it, to the end.
func readAll(t *testing.T, api API, stream string) []sse.Event {
	t.Helper()
	rd := api.NewStreamReader(strings.NewReader(stream), 0)
	defer rd.Release()
	var out []sse.Event
	for {
		ev, err := rd.Next()
		if err != nil {
			return out
		}
		out = append(out, ev)
	}
}
