package protocol

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/sse"
	"github.com/plload/plload/workload"
)

// buildAfter renders history's Responses body with history mode mode and what the server holds.
func buildAfter(t *testing.T, mode string, history []Message, prev Previous) string {
	t.Helper()
	sc := target("responses")
	sc.Target.History = mode
	api, _ := For("responses")
	body, err := NewBody(api, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(body.BuildAfter(nil, "", history, prev, 64, true))
}

// Client-held history sends the whole conversation every turn, unstored: the persona as
// instructions, the user's messages as easy input messages, an earlier answer as an output message
// item; max_output_tokens whatever target.max_tokens_field says, and no ignore_eos (not the API's).
// Server-held history stores every answer and, once the session has one, sends only what is new
// with previous_response_id; the instructions go every time (the reference does not carry them
// over).
func TestResponsesBodyByHistoryMode(t *testing.T) {
	h := conversation()
	client := `{"model":"m","instructions":"Be brief.","input":[{"role":"user","content":"Hi"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello!"}]},` +
		`{"role":"user","content":"Say \"ok\"\nthen stop"}],"store":false,"max_output_tokens":64,"stream":true}`
	if got := buildAfter(t, workload.HistoryClient, h, Previous{ID: "resp_1", Held: 3}); got != client {
		t.Errorf("client history:\n got %s\nwant %s", got, client)
	}
	first := `{"model":"m","instructions":"Be brief.","input":[{"role":"user","content":"Hi"}],"store":true,"max_output_tokens":64,"stream":true}`
	if got := buildAfter(t, workload.HistoryServer, h[:2], Previous{}); got != first {
		t.Errorf("server history, first turn:\n got %s\nwant %s", got, first)
	}
	next := `{"model":"m","instructions":"Be brief.","input":[{"role":"user","content":"Say \"ok\"\nthen stop"}],"previous_response_id":"resp_1","store":true,"max_output_tokens":64,"stream":true}`
	if got := buildAfter(t, workload.HistoryServer, h, Previous{ID: "resp_1", Held: 3}); got != next {
		t.Errorf("server history, next turn:\n got %s\nwant %s", got, next)
	}
	// No answer with an id (the first turn failed, or the server gave none): the whole history.
	whole := strings.Replace(client, `"store":false`, `"store":true`, 1)
	if got := buildAfter(t, workload.HistoryServer, h, Previous{}); got != whole {
		t.Errorf("server history without an id:\n got %s\nwant %s", got, whole)
	}
}

// A tool round: the answer's calls go as function_call items and their results as
// function_call_output items; server-held, only the results go, after the answer that asked.
func TestResponsesBodyToolRound(t *testing.T) {
	h := []Message{
		NewMessage("system", "Use tools.", 2),
		NewMessage("user", "Weather?", 2),
		NewToolCallsMessage("Let me look.", []sse.ToolCall{{ID: "call_1", Type: "function", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, {ID: "call_2", Type: "function", Name: "get_time", Arguments: `{}`}}, 9),
		NewToolMessage("call_1", "12 °C", 3),
		NewToolMessage("call_2", "noon", 1),
	}
	client := `{"model":"m","instructions":"Use tools.","input":[{"role":"user","content":"Weather?"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]},` +
		`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},` +
		`{"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"12 °C"},` +
		`{"type":"function_call_output","call_id":"call_2","output":"noon"}],"store":false,"max_output_tokens":64,"stream":true}`
	if got := buildAfter(t, workload.HistoryClient, h, Previous{}); got != client {
		t.Errorf("client history:\n got %s\nwant %s", got, client)
	}
	server := `{"model":"m","instructions":"Use tools.","input":[{"type":"function_call_output","call_id":"call_1","output":"12 °C"},` +
		`{"type":"function_call_output","call_id":"call_2","output":"noon"}],"previous_response_id":"resp_9","store":true,"max_output_tokens":64,"stream":true}`
	if got := buildAfter(t, workload.HistoryServer, h, Previous{ID: "resp_9", Held: 3}); got != server {
		t.Errorf("server history:\n got %s\nwant %s", got, server)
	}
	// A dataset's message of chat parts: text as input_text (output_text for the assistant), an
	// image as input_image.
	parts := []Message{
		NewRawMessage("user", []byte(`{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}`)),
		NewRawMessage("assistant", []byte(`{"role":"assistant","content":[{"type":"text","text":"A dot."}]}`)),
	}
	want := `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"What is this?"},{"type":"input_image","image_url":"data:image/png;base64,AA"}]},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A dot."}]}],"store":false,"max_output_tokens":64,"stream":true}`
	if got := buildAfter(t, workload.HistoryClient, parts, Previous{}); got != want {
		t.Errorf("parts:\n got %s\nwant %s", got, want)
	}
}

// The workload's function tools go in the Responses API's flat shape, tool_choice as its word; a
// tool without a name, or a choice the API has no word for, is an error.
func TestResponsesTools(t *testing.T) {
	tools, choice, err := responsesTools([]byte(`[{"type":"function","function":{"name":"get_weather","description":"Weather now","parameters":{"type": "object","properties":{"city":{"type":"string"}}}}},{"type":"function","function":{"name":"noop"}}]`), "required")
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"function","name":"get_weather","description":"Weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}}}},{"type":"function","name":"noop"}]`
	if string(tools) != want || string(choice) != `"required"` {
		t.Errorf("tools %s choice %s; want %s \"required\"", tools, choice, want)
	}
	if _, _, err := responsesTools([]byte(`[{"type":"function","function":{}}]`), "auto"); err == nil || !strings.Contains(err.Error(), "tools[0] has no function.name") {
		t.Errorf("a nameless tool: %v", err)
	}
	if _, _, err := responsesTools([]byte(`[]`), "any"); err == nil || !strings.Contains(err.Error(), "accepted: auto, required or none") {
		t.Errorf("tool_choice any: %v", err)
	}
	sc, w := agentScenario(t)
	sc.Target.Endpoint = "responses"
	api, _ := For("responses")
	body, err := NewBody(api, sc, w)
	if err != nil {
		t.Fatal(err)
	}
	got := string(body.Build(nil, "", conversation(), 10, false))
	if !strings.Contains(got, `"tools":[{"type":"function","name":`) || strings.Contains(got, `"function":{`) {
		t.Errorf("the agent scenario's tools are not flat: %.300s", got)
	}
	for _, k := range []string{"instructions", "input", "store", "previous_response_id"} {
		sc.Target.ExtraBody = map[string]any{k: "x"}
		if _, err := NewBody(api, sc, nil); err == nil || !strings.Contains(err.Error(), "target.extra_body."+k) {
			t.Errorf("extra_body.%s: %v", k, err)
		}
	}
}

// A Responses stream as the reference shows it: a reasoning item, a message, a function call.
const responsesStream = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress"}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}

event: response.reasoning_text.delta
data: {"type":"response.reasoning_text.delta","sequence_number":3,"item_id":"rs_1","output_index":0,"content_index":0,"delta":"Think"}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"In short"}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":5,"output_index":1,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hello"}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":7,"item_id":"msg_1","output_index":1,"content_index":0,"text":"Hello"}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":8,"output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_1","output_index":2,"delta":"{\"city\":"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":10,"output_index":2,"delta":"\"Oslo\"}"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":11,"output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}

event: response.some_future_event
data: {"type":"response.some_future_event","sequence_number":12}

event: response.completed
data: {"type":"response.completed","sequence_number":13,"response":{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":140,"input_tokens_details":{"cached_tokens":100},"output_tokens":15,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":155}}}

`

// Every event kind becomes the typed event the engine reads: the response's id, reasoning (raw
// and summary), content, the call's name and argument pieces by the item they name (by id, or by
// output index), the end with usage (prompt = input_tokens, which counts the cached ones) and a
// finish reason in chat's words; events it does not know are skipped.
func TestResponsesStreamEvents(t *testing.T) {
	api, _ := For("responses")
	got, err := readEvents(t, api, responsesStream)
	if err != nil {
		t.Fatal(err)
	}
	usage := &sse.Usage{PromptTokens: 140, HasPrompt: true, CachedTokens: 100, HasCached: true, CompletionTokens: 15, HasCompletion: true,
		TotalTokens: 155, HasTotal: true, ReasoningTokens: 4, HasReasoning: true}
	want := []sse.Event{
		{Role: "assistant", ResponseID: "resp_1"},
		{ResponseID: "resp_1"},
		{},
		{Reasoning: "Think"},
		{Reasoning: "In short"},
		{},
		{Content: "Hello"},
		{},
		{ToolCall: "get_weather", ToolCalls: []sse.ToolCallDelta{{Index: 0, ID: "call_1", Type: "function", Name: "get_weather"}}},
		{ToolCall: `{"city":`, ToolCalls: []sse.ToolCallDelta{{Index: 0, Arguments: `{"city":`}}},
		{ToolCall: `"Oslo"}`, ToolCalls: []sse.ToolCallDelta{{Index: 0, Arguments: `"Oslo"}`}}},
		{}, {},
		{ResponseID: "resp_1", Done: true, FinishReason: "tool_calls", Usage: usage},
	}
	if diff := cmp.Diff(want, got, ignoreAt); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var calls sse.ToolCallAssembler
	for _, ev := range got {
		calls.Add(ev.ToolCalls)
	}
	if c := calls.Calls(); len(c) != 1 || c[0].ID != "call_1" || c[0].Name != "get_weather" || c[0].Arguments != `{"city":"Oslo"}` {
		t.Errorf("assembled calls %+v", c)
	}
	// The poller's Feed gives the same events, byte by byte.
	rd := api.NewStreamReader(nil, 0)
	defer rd.Release()
	var fed []sse.Event
	for i := 0; i < len(responsesStream); i++ {
		rd.Feed([]byte{responsesStream[i]}, got[0].At, func(ev sse.Event, err error) bool {
			if err != nil {
				t.Fatal(err)
			}
			fed = append(fed, ev)
			return true
		})
	}
	if diff := cmp.Diff(want, fed, ignoreAt); diff != "" {
		t.Errorf("fed byte by byte (-want +got):\n%s", diff)
	}
}

// A server that sends a call's arguments only with its item (no deltas) is read too, once.
func TestResponsesArgumentsWithoutDeltas(t *testing.T) {
	api, _ := For("responses")
	stream := "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n" +
		"data: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\",\"id\":\"fc\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"\"}}\n\n" +
		"data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"id\":\"fc\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{}\"}}\n\n" +
		"data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\"}}\n\n"
	got, err := readEvents(t, api, stream)
	if err != nil {
		t.Fatal(err)
	}
	var calls sse.ToolCallAssembler
	for _, ev := range got {
		calls.Add(ev.ToolCalls)
	}
	if c := calls.Calls(); len(c) != 1 || c[0].Arguments != "{}" || got[2].ToolCall != "{}" || got[3].FinishReason != "tool_calls" {
		t.Errorf("calls %+v, events %+v", c, got)
	}
}

// llama.cpp's own stream (llama-server, captured): its deltas are the content, response.completed
// ends it with input_tokens (cached included) and the cached count, and its id is the response's.
func TestResponsesLlamaCppStream(t *testing.T) {
	stream, err := os.ReadFile("testdata/llamacpp_responses_stream.txt")
	if err != nil {
		t.Fatal(err)
	}
	api, _ := For("responses")
	got, err := readEvents(t, api, string(stream))
	if err != nil {
		t.Fatal(err)
	}
	var content strings.Builder
	tokens := 0
	last := got[len(got)-1]
	for _, ev := range got {
		if ev.IsToken() {
			tokens++
		}
		content.WriteString(ev.Content)
	}
	want := &sse.Usage{PromptTokens: 19, HasPrompt: true, CompletionTokens: 5, HasCompletion: true, TotalTokens: 24, HasTotal: true, CachedTokens: 18, HasCached: true}
	if tokens != 5 || content.String() != "DHCPภายใต้ประตู valid iss" || !last.Done || last.FinishReason != "stop" ||
		last.ResponseID != "resp_ztLG692umq9z0eBALy9LJSJlfiMS6d1h" || !cmp.Equal(last.Usage, want) {
		t.Errorf("%d token events, content %q, last %+v (usage %+v)", tokens, content.String(), last, last.Usage)
	}
}

// response.failed and error events are the server's errors with its message; response.incomplete
// at max_output_tokens is an answer cut at the limit (finish reason length), not an error.
func TestResponsesStreamErrors(t *testing.T) {
	api, _ := For("responses")
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\n"
	for name, c := range map[string]struct{ stream, message, code string }{
		"response.failed":  {created + "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"r1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model crashed\"}}}\n\n", "The model crashed", "server_error"},
		"failed, no error": {created + "data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\"}}\n\n", "the response failed (status failed) without an error message", ""},
		"error event":      {created + "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down\",\"param\":null}\n\n", "Slow down", "rate_limit_exceeded"},
		"error first":      {"event: error\ndata: {\"error\":{\"message\":\"no slots\",\"type\":\"unavailable_error\",\"code\":503}}\n\n", "no slots", "503"},
		"error, not JSON":  {created + "event: error\ndata: upstream timed out\n\n", "upstream timed out", ""},
	} {
		got, err := readEvents(t, api, c.stream)
		if err != nil || len(got) == 0 {
			t.Errorf("%s: %v", name, err)
			continue
		}
		e := got[len(got)-1].Err
		if e == nil || e.Message != c.message || e.Code != c.code {
			t.Errorf("%s: error %+v; want message %q code %q", name, e, c.message, c.code)
		}
	}
	got, err := readEvents(t, api, created+"data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n"+
		"event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"id\":\"r1\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if last := got[len(got)-1]; !last.Done || last.Err != nil || last.FinishReason != "length" || last.Usage == nil || last.Usage.CompletionTokens != 1 {
		t.Errorf("incomplete at max_output_tokens: %+v", last)
	}
	got, _ = readEvents(t, api, created+"data: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"content_filter\"}}}\n\n")
	if last := got[len(got)-1]; !last.Done || last.FinishReason != "content_filter" {
		t.Errorf("incomplete by the content filter: %+v", last)
	}
}

// Another API's stream (chat chunks, Messages events, an HTML page sent as events) is an error
// naming what was expected, at its first event; never a zero record.
func TestResponsesForeignStream(t *testing.T) {
	api, _ := For("responses")
	for name, stream := range map[string]string{
		"chat chunks": `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\ndata: [DONE]\n\n",
		"messages":    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"role\":\"assistant\"}}\n\n",
		"html":        "data: <html><body>502 Bad Gateway</body></html>\n\n",
	} {
		got, err := readEvents(t, api, stream)
		var malformed *sse.MalformedError
		if !errors.As(err, &malformed) || !strings.Contains(err.Error(), "expected the OpenAI Responses API's events") {
			t.Errorf("%s: %v (%d events); want an error naming the Responses events", name, err, len(got))
		}
	}
	_, err := readEvents(t, api, "data: {\"type\":\"response.created\",\"response\":{}}\n\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\n\n")
	if err == nil || !strings.Contains(err.Error(), "an OpenAI Responses event that is not JSON") {
		t.Errorf("a broken event: %v", err)
	}
}

// A non-streamed answer: llama.cpp's own, and the reference's items (reasoning, message, function
// call) with usage; an error body or a failed response is the server's error; another API's answer
// or a page is an error naming what was expected.
func TestResponsesParseAnswer(t *testing.T) {
	api, _ := For("responses")
	whole, err := os.ReadFile("testdata/llamacpp_responses_whole.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := api.ParseAnswer(whole)
	want := &sse.Usage{PromptTokens: 10, HasPrompt: true, CompletionTokens: 5, HasCompletion: true, TotalTokens: 15, HasTotal: true, HasCached: true}
	if err != nil || c.Content != "argued𬌗 representation'])[在这种" || c.ResponseID != "resp_Y8E2aPlarE5suCfJfinGwXtRmHNcEgJ5" || c.FinishReason != "stop" || !cmp.Equal(c.Usage, want) {
		t.Errorf("llama.cpp's answer: %+v %v (usage %+v)", c, err, c.Usage)
	}
	c, err = api.ParseAnswer([]byte(`{"id":"resp_2","object":"response","status":"completed","output":[` +
		`{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"Briefly"}]},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},` +
		`{"type":"function_call","id":"fc","call_id":"call_7","name":"get_time","arguments":"{}"}],` +
		`"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":32},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":3}}}`))
	if err != nil || c.Reasoning != "Briefly" || c.Content != "Checking." || c.FinishReason != "tool_calls" || c.ResponseID != "resp_2" ||
		len(c.ToolCalls) != 1 || c.ToolCalls[0] != (sse.ToolCall{ID: "call_7", Type: "function", Name: "get_time", Arguments: "{}"}) ||
		c.Usage == nil || c.Usage.CachedTokens != 32 || c.Usage.ReasoningTokens != 3 || !c.Usage.HasReasoning {
		t.Errorf("the reference's answer: %+v %v", c, err)
	}
	refused, _ := os.ReadFile("testdata/llamacpp_responses_prev_refused.json")
	if c, err := api.ParseAnswer(refused); err != nil || c.Err == nil || c.Err.Message != "llama.cpp does not support 'previous_response_id'." || c.Err.Code != "400" {
		t.Errorf("llama.cpp's refusal: %+v %v", c.Err, err)
	}
	if c, err := api.ParseAnswer([]byte(`{"id":"r","object":"response","status":"failed","error":{"code":"server_error","message":"boom"}}`)); err != nil || c.Err == nil || c.Err.Message != "boom" {
		t.Errorf("a failed response: %+v %v", c.Err, err)
	}
	if c, err := api.ParseAnswer([]byte(`{"id":"r","object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"cut"}]}]}`)); err != nil || c.FinishReason != "length" || c.Err != nil {
		t.Errorf("an incomplete response: %+v %v", c, err)
	}
	for name, body := range map[string]string{
		"chat":     `{"id":"c","object":"chat.completion","choices":[{"message":{"content":"hi"}}]}`,
		"messages": `{"type":"message","content":[{"type":"text","text":"hi"}]}`,
		"html":     `<html>502</html>`,
	} {
		var malformed *sse.MalformedError
		if _, err := api.ParseAnswer([]byte(body)); !errors.As(err, &malformed) || !strings.Contains(err.Error(), "OpenAI Responses answer") {
			t.Errorf("%s: %v; want an error naming the Responses answer", name, err)
		}
	}
}

// Fuzz the Responses reader and answer parser: never a panic, whatever the server sends.
func FuzzResponsesAnswer(f *testing.F) {
	f.Add([]byte(responsesStream))
	if b, err := os.ReadFile("testdata/llamacpp_responses_stream.txt"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"id":"r","object":"response","output":[{"type":"function_call","arguments":"{"}]}`))
	api, _ := For("responses")
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := api.NewStreamReader(bytes.NewReader(data), 1<<16)
		for range len(data) + 2 { // a message takes at least a byte: past that, Next repeats itself
			if _, err := rd.Next(); err != nil {
				var malformed *sse.MalformedError
				if !errors.As(err, &malformed) {
					break
				}
			}
		}
		rd.Release()
		_, _ = api.ParseAnswer(data)
	})
}
