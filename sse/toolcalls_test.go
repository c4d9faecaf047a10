package sse

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// vLLM's chunks for two parallel calls (hermes-style parser): a role chunk, each call's first delta
// with id, type, name and empty arguments, then argument pieces by index, interleaved, and a final
// chunk with finish_reason tool_calls.
var vllmToolStream = []string{
	`{"id":"chatcmpl-9f","object":"chat.completion.chunk","created":1732000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9f","object":"chat.completion.chunk","created":1732000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-1a2b","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9f","object":"chat.completion.chunk","created":1732000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \""}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9f","object":"chat.completion.chunk","created":1732000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-3c4d","type":"function","index":1,"function":{"name":"get_time","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9f","object":"chat.completion.chunk","created":1732000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\": \"Europe/Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9f","object":"chat.completion.chunk","created":1732000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9f","object":"chat.completion.chunk","created":1732000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}]}`,
}

func TestToolCallDeltas(t *testing.T) {
	var in strings.Builder
	for _, c := range vllmToolStream {
		in.WriteString("data: " + c + "\n\n")
	}
	in.WriteString("data: {\"choices\":[{\"delta\":{\"content\":\"plain\"}}]}\n\ndata: [DONE]\n\n")
	want := []Event{
		{Role: "assistant"},
		{ToolCall: "get_weather", ToolCalls: []ToolCallDelta{{Index: 0, ID: "chatcmpl-tool-1a2b", Type: "function", Name: "get_weather"}}},
		{ToolCall: `{"city": "`, ToolCalls: []ToolCallDelta{{Index: 0, Arguments: `{"city": "`}}},
		{ToolCall: "get_time", ToolCalls: []ToolCallDelta{{Index: 1, ID: "chatcmpl-tool-3c4d", Type: "function", Name: "get_time"}}},
		{ToolCall: `{"tz": "Europe/Paris"}`, ToolCalls: []ToolCallDelta{{Index: 1, Arguments: `{"tz": "Europe/Paris"}`}}},
		{ToolCall: `Paris"}`, ToolCalls: []ToolCallDelta{{Index: 0, Arguments: `Paris"}`}}},
		{FinishReason: "tool_calls"},
		{Content: "plain"},
		{Done: true},
	}
	for _, r := range []io.Reader{strings.NewReader(in.String()), iotest.OneByteReader(strings.NewReader(in.String()))} {
		got, err := readAll(t, r, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, ignoreAt); diff != "" {
			t.Fatalf("events differ (-want +got):\n%s", diff)
		}
		for i, ev := range got {
			if ev.Content == "plain" && ev.ToolCalls != nil {
				t.Errorf("event %d: a chunk without tool_calls has ToolCalls %v", i, ev.ToolCalls)
			}
		}
		var a ToolCallAssembler
		for _, ev := range got {
			a.Add(ev.ToolCalls)
		}
		wantCalls := []ToolCall{
			{ID: "chatcmpl-tool-1a2b", Type: "function", Name: "get_weather", Arguments: `{"city": "Paris"}`},
			{ID: "chatcmpl-tool-3c4d", Type: "function", Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`},
		}
		if diff := cmp.Diff(wantCalls, a.Calls()); diff != "" {
			t.Fatalf("assembled calls differ (-want +got):\n%s", diff)
		}
	}
	// Every chunk of the stream takes the fast path and decodes as encoding/json does.
	for _, c := range vllmToolStream {
		var fast, slow Event
		if !fastDecode([]byte(c), &fast) {
			t.Errorf("slow path for %s", c)
			continue
		}
		if err := decodeSlow([]byte(c), &slow); err != nil || cmp.Diff(slow, fast) != "" {
			t.Errorf("%s: %v %s", c, err, cmp.Diff(slow, fast))
		}
	}
}

// TestToolCallDeltaShapes: the forms a delta's fields take across servers.
func TestToolCallDeltaShapes(t *testing.T) {
	for _, tc := range []struct {
		data string
		want []ToolCallDelta
		fast bool
	}{
		{`{"choices":[{"delta":{"tool_calls":[]}}]}`, nil, true},
		{`{"choices":[{"delta":{"tool_calls":null,"content":"x"}}]}`, nil, true},
		{`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":null,"type":null,"function":null}]}}]}`, []ToolCallDelta{{}}, true},
		// Two deltas in one chunk (OpenAI sends parallel calls' first deltas this way at times).
		{`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"b","function":{"name":"g","arguments":"[]"}}]}}]}`,
			[]ToolCallDelta{{Index: 0, ID: "a", Name: "f", Arguments: "{}"}, {Index: 1, ID: "b", Name: "g", Arguments: "[]"}}, true},
		{`{"choices":[{"delta":{"tool_calls":[{"index":12,"function":{"arguments":"\u00e9\n\"q\""}}]}}]}`, []ToolCallDelta{{Index: 12, Arguments: "é\n\"q\""}}, true},
		// Odd indices go to encoding/json, which takes them too.
		{`{"choices":[{"delta":{"tool_calls":[{"index":1.0,"function":{"arguments":"x"}}]}}]}`, []ToolCallDelta{{Index: 1, Arguments: "x"}}, false},
		{`{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}`, []ToolCallDelta{{Index: -1}}, false},
		{`{"choices":[{"delta":{"tool_calls":[{"index":1e99}]}}]}`, []ToolCallDelta{{Index: 1<<31 - 1}}, false},
		{`{"choices":[{"delta":{"tool_calls":[{"Index":3}]}}]}`, []ToolCallDelta{{Index: 3}}, false},
	} {
		var fast Event
		if got := fastDecode([]byte(tc.data), &fast); got != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.data, got, tc.fast)
		}
		var ev Event
		if err := decodeChunk([]byte(tc.data), &ev); err != nil {
			t.Errorf("%s: %v", tc.data, err)
			continue
		}
		if diff := cmp.Diff(tc.want, ev.ToolCalls); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.data, diff)
		}
	}
}

// TestContentChunkAllocations: tool-call parsing costs a content chunk nothing: its one allocation is
// its text.
func TestContentChunkAllocations(t *testing.T) {
	data := []byte(`{"id":"chatcmpl-1a2b3c","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}`)
	var ev Event
	if n := testing.AllocsPerRun(100, func() { ev = Event{}; _ = decodeChunk(data, &ev) }); n > 1 {
		t.Errorf("%v allocations per content chunk, want 1", n)
	}
	if ev.ToolCalls != nil || ev.Content != " word" {
		t.Errorf("%+v", ev)
	}
}

func TestToolCallAssembler(t *testing.T) {
	var a ToolCallAssembler
	if a.Calls() != nil {
		t.Fatal("a new assembler has calls")
	}
	// Index 1 arrives first; no type given; name repeated on every delta (some parsers do) is not doubled.
	a.Add([]ToolCallDelta{{Index: 1, ID: "b", Name: "g", Arguments: `{"x"`}})
	a.Add([]ToolCallDelta{{Index: 0, ID: "a", Type: "function", Name: "f"}})
	a.Add([]ToolCallDelta{{Index: 1, Name: "g", Arguments: `:1}`}, {Index: 0, Arguments: "{}"}})
	a.Add(nil)
	want := []ToolCall{{ID: "a", Type: "function", Name: "f", Arguments: "{}"}, {ID: "b", Type: "function", Name: "g", Arguments: `{"x":1}`}}
	if diff := cmp.Diff(want, a.Calls()); diff != "" {
		t.Fatalf("(-want +got)\n%s", diff)
	}
	// Reset, then a server that numbers every call 0: a new id starts a new call.
	a.Reset()
	if a.Calls() != nil {
		t.Fatal("calls after Reset")
	}
	a.Add([]ToolCallDelta{{ID: "c1", Name: "f", Arguments: `{"a":`}})
	a.Add([]ToolCallDelta{{Arguments: `1}`}})
	a.Add([]ToolCallDelta{{ID: "c2", Name: "h", Arguments: `{}`}})
	a.Add([]ToolCallDelta{{ID: "c2", Arguments: ``}}) // the same id again continues its call
	want = []ToolCall{{ID: "c1", Type: "function", Name: "f", Arguments: `{"a":1}`}, {ID: "c2", Type: "function", Name: "h", Arguments: `{}`}}
	if diff := cmp.Diff(want, a.Calls()); diff != "" {
		t.Fatalf("after Reset (-want +got)\n%s", diff)
	}
	// Calls returns copies: more deltas do not change what was returned.
	got := a.Calls()
	a.Add([]ToolCallDelta{{ID: "c2", Arguments: "zz"}})
	if got[1].Arguments != "{}" {
		t.Fatalf("returned call changed: %q", got[1].Arguments)
	}
}

func TestAppendToolCallsJSON(t *testing.T) {
	if got := string(AppendToolCallsJSON(nil, nil)); got != "[]" {
		t.Errorf("no calls: %s", got)
	}
	got := string(AppendToolCallsJSON([]byte("x"), []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a": 1}`}}))
	if want := `x[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	calls := []ToolCall{
		{ID: "chatcmpl-tool-1", Type: "function", Name: "search", Arguments: "{\"q\": \"say \\\"hi\\\"\\n\",\n\t\"u\": \"héllo 世界 🙂\"}"},
		{ID: "c\"2", Type: "function", Name: "f\\g", Arguments: "\x00\x1f\u2028\u2029</script>&"},
		{ID: "", Type: "function", Name: "", Arguments: ""},
	}
	b := AppendToolCallsJSON(nil, calls)
	if !json.Valid(b) {
		t.Fatalf("not JSON: %s", b)
	}
	var back []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var round []ToolCall
	for _, c := range back {
		round = append(round, ToolCall{ID: c.ID, Type: c.Type, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	if diff := cmp.Diff(calls, round); diff != "" {
		t.Fatalf("round trip (-want +got)\n%s", diff)
	}
	// Invalid UTF-8 comes out as encoding/json writes it.
	b = AppendToolCallsJSON(nil, []ToolCall{{Arguments: "a\xffb"}})
	if err := json.Unmarshal(b, &back); err != nil || back[0].Function.Arguments != "a\ufffdb" {
		t.Fatalf("%s: %v %q", b, err, back[0].Function.Arguments)
	}
}

func TestParseCompletion(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Completion
	}{
		{"chat with content and usage",
			`{"id":"chatcmpl-1","object":"chat.completion","created":1732000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there.","refusal":null,"tool_calls":[]},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}},"prompt_logprobs":null}`,
			Completion{Content: "Hello there.", FinishReason: "stop", Usage: &Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15, HasPrompt: true, HasCompletion: true, HasTotal: true, CachedTokens: 8, HasCached: true}}},
		{"chat with tool calls",
			`{"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"chatcmpl-tool-1a2b","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},{"id":"chatcmpl-tool-3c4d","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":200,"completion_tokens":30,"total_tokens":230}}`,
			Completion{FinishReason: "tool_calls",
				ToolCalls: []ToolCall{{ID: "chatcmpl-tool-1a2b", Type: "function", Name: "get_weather", Arguments: `{"city": "Paris"}`}, {ID: "chatcmpl-tool-3c4d", Type: "function", Name: "get_time", Arguments: "{}"}},
				Usage:     &Usage{PromptTokens: 200, CompletionTokens: 30, TotalTokens: 230, HasPrompt: true, HasCompletion: true, HasTotal: true}}},
		{"tool call arguments as an object, no type",
			`{"choices":[{"message":{"tool_calls":[{"id":"x","function":{"name":"f","arguments":{"a": [1, 2]}}}]},"finish_reason":"tool_calls"}]}`,
			Completion{FinishReason: "tool_calls", ToolCalls: []ToolCall{{ID: "x", Type: "function", Name: "f", Arguments: `{"a":[1,2]}`}}}},
		{"reasoning_content",
			`{"choices":[{"message":{"role":"assistant","reasoning_content":"Let me think.","content":"42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":6}}}`,
			Completion{Content: "42", Reasoning: "Let me think.", FinishReason: "stop", Usage: &Usage{PromptTokens: 5, CompletionTokens: 9, HasPrompt: true, HasCompletion: true, ReasoningTokens: 6, HasReasoning: true}}},
		{"reasoning and reasoning_content with the same text count once",
			`{"choices":[{"message":{"reasoning":"Hmm.","reasoning_content":"Hmm.","content":"ok"},"finish_reason":"stop"}]}`,
			Completion{Content: "ok", Reasoning: "Hmm.", FinishReason: "stop"}},
		{"reasoning only",
			`{"choices":[{"message":{"reasoning":"Hmm.","content":"ok"},"finish_reason":"stop"}]}`,
			Completion{Content: "ok", Reasoning: "Hmm.", FinishReason: "stop"}},
		{"content as parts",
			`{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`,
			Completion{Content: "ab", FinishReason: "stop"}},
		{"completions text",
			`{"id":"cmpl-3","object":"text_completion","choices":[{"index":0,"text":" upon a time","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":4,"total_tokens":8,"completion_tokens":4}}`,
			Completion{Content: " upon a time", FinishReason: "length", Usage: &Usage{PromptTokens: 4, CompletionTokens: 4, TotalTokens: 8, HasPrompt: true, HasCompletion: true, HasTotal: true}}},
		{"empty usage is nil",
			`{"choices":[{"message":{"content":"x"}}],"usage":{}}`,
			Completion{Content: "x"}},
		{"error body",
			`{"error":{"message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}}`,
			Completion{Err: &StreamError{Message: "This model's maximum context length is 4096 tokens.", Type: "BadRequestError", Code: "400"}}},
		{"vLLM's older error body",
			`{"object":"error","message":"The model does not exist.","type":"NotFoundError","param":null,"code":404}`,
			Completion{Err: &StreamError{Message: "The model does not exist.", Type: "NotFoundError"}}},
		{"error as text",
			`{"error":"overloaded"}`,
			Completion{Err: &StreamError{Message: "overloaded"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCompletion([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestParseCompletionGarbage(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"<html><body>502 Bad Gateway</body></html>", `response is not the JSON of a completion (invalid character '<' looking for beginning of value): "<html><body>502 Bad Gateway</body></html>"`},
		{"", "empty response body"},
		{" \n", "empty response body"},
		{`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`, `response has no choices and no error: "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[]}"`},
		{`[1,2]`, `response is not the JSON of a completion (json: cannot unmarshal array into Go value of type sse.completionJSON): "[1,2]"`},
		{`{"choices":[{"message":{"content":"cut`, `response is not the JSON of a completion (unexpected end of JSON input): "{\"choices\":[{\"message\":{\"content\":\"cut"`},
		// Not cut here: the engine masks secrets in the payload before it cuts it (ErrorWith).
		{strings.Repeat("x", 300), `response is not the JSON of a completion (invalid character 'x' looking for beginning of value): "` + strings.Repeat("x", 300) + `"`},
	} {
		_, err := ParseCompletion([]byte(tc.body))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%.40q:\n got  %v\n want %s", tc.body, err, tc.want)
		}
	}
}

// A garbage body's payload is kept whole up to MalformedDataMax, for the engine to mask and then
// cut, and ErrorWith shows what the caller made of it.
func TestMalformedPayloadIsBounded(t *testing.T) {
	_, err := ParseCompletion([]byte(strings.Repeat("y", MalformedDataMax+100)))
	var me *MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want a *MalformedError", err)
	}
	if len(me.Data) != MalformedDataMax {
		t.Errorf("payload kept: %d bytes, want %d", len(me.Data), MalformedDataMax)
	}
	want := `response is not the JSON of a completion (invalid character 'y' looking for beginning of value): "***"`
	if got := me.ErrorWith("***"); got != want {
		t.Errorf("ErrorWith:\n got  %s\n want %s", got, want)
	}
}

// FuzzParseCompletion: no body panics; what parses has valid UTF-8 text or came so from the server.
func FuzzParseCompletion(f *testing.F) {
	f.Add([]byte(`{"choices":[{"message":{"content":"a","reasoning":"b","tool_calls":[{"id":"x","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`{"object":"error","message":"m","code":400}`))
	f.Add([]byte(`{"choices":[{"text":"t"}]}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ParseCompletion(body)
		if err != nil {
			return
		}
		b := AppendToolCallsJSON(nil, c.ToolCalls)
		if !json.Valid(b) {
			t.Fatalf("tool calls of %q make invalid JSON %s", body, b)
		}
	})
}

// FuzzAppendToolCallsJSON: any text round-trips through encoding/json (invalid UTF-8 as U+FFFD).
func FuzzAppendToolCallsJSON(f *testing.F) {
	f.Add("id", "name", "{\"q\": \"line\\n\\\"quoted\\\"\"}\n\t\u2028é🙂")
	f.Add("", "", "\x00\xff\xfe")
	f.Fuzz(func(t *testing.T, id, name, args string) {
		calls := []ToolCall{{ID: id, Type: "function", Name: name, Arguments: args}}
		b := AppendToolCallsJSON(nil, calls)
		var back []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		}
		if err := json.Unmarshal(b, &back); err != nil || len(back) != 1 {
			t.Fatalf("%s: %v", b, err)
		}
		viaJSON := func(s string) string { // encoding/json writes each invalid byte as U+FFFD
			b, _ := json.Marshal(s)
			var back string
			_ = json.Unmarshal(b, &back)
			return back
		}
		if back[0].ID != viaJSON(id) || back[0].Function.Name != viaJSON(name) || back[0].Function.Arguments != viaJSON(args) {
			t.Fatalf("%q %q %q came back as %+v", id, name, args, back[0])
		}
		if utf8.ValidString(args) && back[0].Function.Arguments != args {
			t.Fatalf("%q came back as %q", args, back[0].Function.Arguments)
		}
	})
}

// TestFastUnescape: escaped strings decode on the fast path as encoding/json decodes them, surrogate
// escapes included (a pair becomes its rune, a lone half U+FFFD).
func TestFastUnescape(t *testing.T) {
	for _, tc := range []struct {
		lit  string
		fast bool
	}{
		{`"{\"city\": \"Paris\"}"`, true},
		{`"a\/b\\c\b\f\n\r\t\u0000\u001F\u00e9\u4E16\uFFFF"`, true},
		{`"` + strings.Repeat(`\"x`, 100) + `"`, true}, // longer than the stack buffer
		{`"\ud83d\ude00"`, true},
		{`"\udc00"`, true},
	} {
		data := `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":` + tc.lit + `}}]}}]}`
		var fast, slow Event
		if got := fastDecode([]byte(data), &fast); got != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.lit, got, tc.fast)
		}
		var want string
		if err := json.Unmarshal([]byte(tc.lit), &want); err != nil {
			t.Fatal(err)
		}
		if err := decodeChunk([]byte(data), &slow); err != nil || slow.ToolCall != want {
			t.Errorf("%s: %v %q, want %q", tc.lit, err, slow.ToolCall, want)
		}
		if tc.fast && fast.ToolCall != want {
			t.Errorf("%s: fast %q, want %q", tc.lit, fast.ToolCall, want)
		}
	}
}
