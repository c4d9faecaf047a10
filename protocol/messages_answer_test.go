package protocol

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plload/plload/sse"
)

// A Messages stream as Anthropic's reference shows it: thinking, text, a tool_use block, pings.
const messagesStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":30,"cache_read_input_tokens":100,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Oslo\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: some_future_event
data: {"type":"some_future_event","x":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":15}}

event: message_stop
data: {"type":"message_stop"}

`

// readEvents reads a stream with the API's reader to its end (or its first error).
func readEvents(t *testing.T, api API, stream string) ([]sse.Event, error) {
	t.Helper()
	rd := api.NewStreamReader(strings.NewReader(stream), 0)
	defer rd.Release()
	var out []sse.Event
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

var ignoreAt = cmpopts.IgnoreFields(sse.Event{}, "At")

// Every event kind becomes the typed event the engine reads: role, usage (prompt = input + both
// cache counters, cached = cache reads), reasoning, content, the tool call's name and argument
// pieces by block index, a ping as a keep-alive, the stop reason in chat's words, the end.
func TestMessagesStreamEvents(t *testing.T) {
	api, _ := For("messages")
	got, err := readEvents(t, api, messagesStream)
	if err != nil {
		t.Fatal(err)
	}
	prompt := &sse.Usage{PromptTokens: 142, HasPrompt: true, CachedTokens: 100, HasCached: true}
	final := &sse.Usage{PromptTokens: 142, HasPrompt: true, CachedTokens: 100, HasCached: true, CompletionTokens: 15, HasCompletion: true}
	want := []sse.Event{
		{Role: "assistant", Usage: prompt},
		{},
		{Comment: true},
		{Reasoning: "Let me think"},
		{}, {}, {},
		{Content: "Hello"},
		{},
		{ToolCall: "get_weather", ToolCalls: []sse.ToolCallDelta{{Index: 2, ID: "toolu_1", Type: "function", Name: "get_weather"}}},
		{ToolCalls: []sse.ToolCallDelta{{Index: 2}}},
		{ToolCall: `{"city": "Oslo"}`, ToolCalls: []sse.ToolCallDelta{{Index: 2, Arguments: `{"city": "Oslo"}`}}},
		{}, {},
		{FinishReason: "tool_calls", Usage: final},
		{Done: true},
	}
	if diff := cmp.Diff(want, got, ignoreAt); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var calls sse.ToolCallAssembler
	for _, ev := range got {
		calls.Add(ev.ToolCalls)
	}
	if c := calls.Calls(); len(c) != 1 || c[0].ID != "toolu_1" || c[0].Name != "get_weather" || c[0].Arguments != `{"city": "Oslo"}` {
		t.Errorf("assembled calls %+v", c)
	}
}

// The poller's Feed gives the same events, byte by byte.
func TestMessagesStreamFedByteByByte(t *testing.T) {
	api, _ := For("messages")
	want, _ := readEvents(t, api, messagesStream)
	rd := api.NewStreamReader(nil, 0)
	defer rd.Release()
	var got []sse.Event
	emit := func(ev sse.Event, err error) bool {
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if err == nil {
			got = append(got, ev)
		}
		return err == nil
	}
	for i := range len(messagesStream) {
		rd.Feed([]byte(messagesStream[i:i+1]), time.Now(), emit)
	}
	rd.End(emit)
	if diff := cmp.Diff(want, got, ignoreAt); diff != "" {
		t.Errorf("fed events (-read +fed):\n%s", diff)
	}
}

// Each stop reason in chat's words; an unknown one as it is.
func TestMessagesStopReasons(t *testing.T) {
	for stop, want := range map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls", "refusal": "refusal"} {
		if got := finishReason(stop); got != want {
			t.Errorf("stop_reason %s: %s, want %s", stop, got, want)
		}
	}
}

// A server's error event ends the stream with its message and type, however it is framed; a
// usage without cache counters has no cached tokens (missing is not zero).
func TestMessagesStreamErrors(t *testing.T) {
	api, _ := For("messages")
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"role\":\"assistant\",\"usage\":{\"input_tokens\":7,\"output_tokens\":0}}}\n\n"
	for name, tail := range map[string]string{
		"event":       "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		"data only":   "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		"OpenAI body": "event: error\ndata: {\"error\":{\"code\":500,\"message\":\"Overloaded\",\"type\":\"overloaded_error\"}}\n\n",
	} {
		got, err := readEvents(t, api, start+tail)
		if err != nil || len(got) != 2 {
			t.Fatalf("%s: %v %+v", name, err, got)
		}
		if got[0].Usage == nil || got[0].Usage.PromptTokens != 7 || got[0].Usage.HasCached || got[0].Usage.HasCompletion {
			t.Errorf("%s: usage %+v; want 7 prompt tokens, no cached or output count", name, got[0].Usage)
		}
		if e := got[1].Err; e == nil || e.Message != "Overloaded" || e.Type != "overloaded_error" {
			t.Errorf("%s: error %+v", name, e)
		}
	}
	got, err := readEvents(t, api, "event: error\ndata: upstream gone\n\n")
	if err != nil || len(got) != 1 || got[0].Err == nil || got[0].Err.Message != "upstream gone" {
		t.Errorf("a text error: %v %+v", err, got)
	}
}

// Another API's stream (chat chunks, Responses events, an HTML page sent as events) is an error
// naming what was expected, at its first event; never a zero record.
func TestMessagesForeignStream(t *testing.T) {
	api, _ := For("messages")
	for name, stream := range map[string]string{
		"chat chunks": `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\ndata: [DONE]\n\n",
		"responses":   "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{}}\n\n",
		"html":        "data: <html><body>502 Bad Gateway</body></html>\n\n",
	} {
		got, err := readEvents(t, api, stream)
		var malformed *sse.MalformedError
		if !errors.As(err, &malformed) || !strings.Contains(err.Error(), "expected the Anthropic Messages API's events") {
			t.Errorf("%s: %v (%d events); want an error naming the Messages events", name, err, len(got))
		}
	}
	// A stream that begins past message_start (llama.cpp's server sent one) is still this API's: its
	// text is read, its usage comes from message_delta, and it ends at message_stop.
	got, err := readEvents(t, api, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"+
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":1}}\n\n"+
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	text, done := "", false
	for _, ev := range got {
		text += ev.Content
		done = done || ev.Done
	}
	if err != nil || text != "hi" || !done {
		t.Errorf("a stream from content_block_start: %v, text %q, done %v", err, text, done)
	}
	// After message_start, data that is not JSON is a malformed event, not another API.
	_, err = readEvents(t, api, "data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\n\n")
	if err == nil || !strings.Contains(err.Error(), "an Anthropic Messages event that is not JSON") {
		t.Errorf("a broken event: %v", err)
	}
}

// A non-streamed answer: its blocks (thinking, text, tool_use with its input as the arguments), stop
// reason and usage; an error body comes back as the server's error; another API's answer or a page
// is an error naming what was expected.
func TestMessagesParseAnswer(t *testing.T) {
	api, _ := For("messages")
	got, err := api.ParseAnswer([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m",
		"content":[{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"text","text":"Sure."},
		{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city": "Oslo"}}],
		"stop_reason":"tool_use","usage":{"input_tokens":5,"cache_read_input_tokens":20,"cache_creation_input_tokens":0,"output_tokens":9}}`))
	want := sse.Completion{Content: "Sure.", Reasoning: "hmm", FinishReason: "tool_calls",
		ToolCalls: []sse.ToolCall{{ID: "toolu_1", Type: "function", Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		Usage:     &sse.Usage{PromptTokens: 25, HasPrompt: true, CachedTokens: 20, HasCached: true, CompletionTokens: 9, HasCompletion: true}}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("answer %v (-want +got):\n%s", err, diff)
	}
	got, err = api.ParseAnswer([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`))
	if err != nil || got.Err == nil || got.Err.Message != "max_tokens: Field required" || got.Err.Type != "invalid_request_error" {
		t.Errorf("error body: %v %+v", err, got.Err)
	}
	for name, body := range map[string]string{
		"chat completion": `{"id":"c","object":"chat.completion","choices":[{"message":{"content":"hi"}}]}`,
		"html":            `<html>502</html>`,
	} {
		if _, err := api.ParseAnswer([]byte(body)); err == nil || !strings.Contains(err.Error(), "Anthropic Messages answer") {
			t.Errorf("%s: %v; want an error naming the Messages answer", name, err)
		}
	}
	if _, err := api.ParseAnswer(nil); err == nil {
		t.Error("an empty body was an answer")
	}
}

// FuzzMessagesAnswer: any bytes, as a stream or a whole body, give events or errors, never a panic;
// a stream's reading ends.
func FuzzMessagesAnswer(f *testing.F) {
	f.Add([]byte(messagesStream))
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"message\":\"x\"}}\n\n"))
	f.Add([]byte(`{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}],"usage":{"input_tokens":1e400}}`))
	api, _ := For("messages")
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := api.NewStreamReader(bytes.NewReader(data), 1<<16)
		for range len(data) + 2 {
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

// llama.cpp's own Messages stream without message_start (captured byte for byte through a proxy, as
// llama-server sent it): the server sends message_start only with the first decoded token, and when
// that token is part of a multibyte character it holds it back, so the stream begins at
// content_block_start (in 19 of 800 answers of the tiny model). It reads as an answer: its text,
// and usage from message_delta alone (output tokens; the prompt's count came in the event that was
// never sent).
func TestMessagesLlamaCppStreamWithoutMessageStart(t *testing.T) {
	stream, err := os.ReadFile("testdata/llamacpp_messages_no_message_start.txt")
	if err != nil {
		t.Fatal(err)
	}
	api, _ := For("messages")
	got, err := readEvents(t, api, string(stream))
	if err != nil {
		t.Fatal(err)
	}
	tokens, finish := 0, ""
	var usage *sse.Usage
	for _, ev := range got {
		if ev.IsToken() {
			tokens++
		}
		if ev.FinishReason != "" {
			finish = ev.FinishReason
		}
		if ev.Usage != nil {
			usage = ev.Usage
		}
	}
	if tokens != 11 || !got[len(got)-1].Done || finish != "length" || usage == nil || usage.CompletionTokens != 14 || usage.HasPrompt {
		t.Errorf("%d token events, finish %q, usage %+v, last %+v", tokens, finish, usage, got[len(got)-1])
	}
}
