package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func readAll(t *testing.T, r io.Reader, max int) ([]Event, error) {
	t.Helper()
	rd := NewReader(r, max)
	var out []Event
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			var me *MalformedError
			if errors.As(err, &me) {
				out = append(out, Event{Err: &StreamError{Message: "MALFORMED"}})
				continue
			}
			return out, err
		}
		out = append(out, ev)
	}
}

var ignoreAt = cmpopts.IgnoreFields(Event{}, "At")

func TestReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Event
		err  error
	}{
		{"chat stream with role chunk, usage and done",
			"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n" +
				"data: [DONE]\n\n",
			[]Event{{Role: "assistant"}, {Content: "Hi"}, {FinishReason: "stop"},
				{Usage: &Usage{PromptTokens: 5, CompletionTokens: 1, TotalTokens: 6, HasPrompt: true, HasCompletion: true, HasTotal: true, CachedTokens: 4, HasCached: true}},
				{Done: true}}, nil},
		{"reasoning and tool calls",
			"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"reasoning\":\"ok\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]}}]}\n\n",
			[]Event{{Reasoning: "hmm"}, {Reasoning: "ok"}, {ToolCall: `f{"a":1}`, ToolCalls: []ToolCallDelta{{Name: "f", Arguments: `{"a":1}`}}}}, nil},
		{"completions text",
			"data: {\"choices\":[{\"text\":\" once\",\"finish_reason\":null}]}\n\n",
			[]Event{{Content: " once"}}, nil},
		{"comments, CRLF, no space after colon, id and retry",
			": keep-alive\r\n\r\nid: 7\r\nretry: 10\r\ndata:{\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\r\n\r\n",
			[]Event{{Comment: true, CommentText: "keep-alive"}, {Content: "x"}}, nil},
		{"a comment inside a message",
			": sent_ns=42\ndata: {\"choices\":[{\"delta\":{\"content\":\"z\"}}]}\n\n",
			[]Event{{Content: "z", CommentText: "sent_ns=42"}}, nil},
		{"multi-line data joined with newlines",
			"data: {\"choices\":\ndata: [{\"delta\":{\"content\":\"y\"}}]}\n\n",
			[]Event{{Content: "y"}}, nil},
		// Several data lines are one payload joined by "\n" (the SSE spec): the line break is part of
		// the data, so an error's text keeps it and a number split across lines is not one number.
		{"multi-line error text keeps its line break",
			"event: error\ndata: upstream\ndata: died\n\n",
			[]Event{{Err: &StreamError{Message: "upstream\ndied"}}}, nil},
		{"a number split across data lines is not joined",
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1\ndata: 2}}\n\n",
			[]Event{{Err: &StreamError{Message: "MALFORMED"}}}, nil},
		{"llama.cpp's error lines joined with newlines",
			"error: context\nerror: full\n\n",
			[]Event{{Err: &StreamError{Message: "context\nfull"}}}, nil},
		// The event name belongs to one message: the next message without an `event:` line is a plain
		// chunk again, after a dispatched event, after a name that had no data, and after a comment.
		{"event name reset after an error event",
			"event: error\ndata: overloaded\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
			[]Event{{Err: &StreamError{Message: "overloaded"}}, {Content: "a"}}, nil},
		{"event name without data is dropped",
			"event: error\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n",
			[]Event{{Content: "b"}}, nil},
		{"event name reset after a comment-only message",
			"event: error\n: ping\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"c\"}}]}\n\n",
			[]Event{{Comment: true, CommentText: "ping"}, {Content: "c"}}, nil},
		{"event: error",
			"event: error\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":503}}\n\n",
			[]Event{{Err: &StreamError{Message: "overloaded", Type: "server_error", Code: "503"}}}, nil},
		{"error object in a chunk",
			"data: {\"error\":{\"message\":\"context too long\",\"type\":\"invalid_request_error\"}}\n\n",
			[]Event{{Err: &StreamError{Message: "context too long", Type: "invalid_request_error"}}}, nil},
		{"llama.cpp's error line",
			"error: {\"code\":500,\"message\":\"context full\",\"type\":\"server_error\"}\n\n",
			[]Event{{Err: &StreamError{Message: "context full", Type: "server_error"}}}, nil},
		{"error as text",
			"event: error\ndata: upstream died\n\n",
			[]Event{{Err: &StreamError{Message: "upstream died"}}}, nil},
		{"top-level cache synonym and empty usage",
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"cache_read_input_tokens\":8}}\n\n" +
				"data: {\"choices\":[],\"usage\":{}}\n\n",
			[]Event{{Usage: &Usage{PromptTokens: 9, HasPrompt: true, CachedTokens: 8, HasCached: true}}, {}}, nil},
		{"malformed JSON, then the stream goes on",
			"data: {\"choices\":[{\"delta\":{\"content\":\" br\n\ndata: [DONE]\n\n",
			[]Event{{Err: &StreamError{Message: "MALFORMED"}}, {Done: true}}, nil},
		{"last message without its blank line",
			"data: [DONE]\n",
			[]Event{{Done: true}}, nil},
		{"cut inside a message",
			"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choi",
			[]Event{{Content: "a"}}, io.ErrUnexpectedEOF},
		{"event over the limit",
			"data: " + strings.Repeat("x", 300) + "\n\n",
			nil, ErrEventTooLarge},
		{"many data lines over the limit",
			strings.Repeat("data: xxxxxxxxxx\n", 40) + "\n",
			nil, ErrEventTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := readAll(t, r, 256)
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				if diff := cmp.Diff(tc.want, got, ignoreAt, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("events differ (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestTimestampIsTheCompletingRead: an event is stamped when the read that delivered its last byte
// returned, even if it sat in the buffer afterwards, and not when it was parsed.
func TestTimestampIsTheCompletingRead(t *testing.T) {
	pr, pw := io.Pipe()
	rd := NewReader(pr, 0)
	go func() {
		pw.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":"))
		time.Sleep(30 * time.Millisecond) // the second event is completed by a later read
		pw.Write([]byte("{\"content\":\"b\"}}]}\n\n"))
		pw.Close()
	}()
	first, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	parsedAfter := time.Now()
	second, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if first.At.After(parsedAfter) || second.At.Sub(first.At) < 25*time.Millisecond {
		t.Fatalf("first at %v, second %v after it", first.At, second.At.Sub(first.At))
	}
	if first.Content != "a" || second.Content != "b" {
		t.Fatalf("contents %q %q", first.Content, second.Content)
	}
}

func TestIsToken(t *testing.T) {
	for ev, want := range map[*Event]bool{{Role: "assistant"}: false, {Content: ""}: false, {Content: " x"}: true,
		{Reasoning: "r"}: true, {ToolCall: "f"}: true, {Done: true}: false} {
		if ev.IsToken() != want {
			t.Errorf("%+v: IsToken %v", ev, !want)
		}
	}
}

// FuzzReader: no input panics or grows past the limit.
func FuzzReader(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: error\ndata: {\"error\":\"x\"}\n\n: c\r\n\r\n"))
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1e300}}\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"chatcmpl-tool-1\",\"type\":\"function\",\"index\":0,\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"a\\\": \"}}]},\"finish_reason\":null}]}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := NewReader(strings.NewReader(string(data)), 512)
		var calls ToolCallAssembler
		defer func() {
			if b := AppendToolCallsJSON(nil, calls.Calls()); !json.Valid(b) {
				t.Fatalf("assembled tool calls make invalid JSON: %s", b)
			}
		}()
		for range 10000 {
			ev, err := rd.Next()
			if err != nil {
				var me *MalformedError
				if errors.As(err, &me) {
					continue
				}
				return
			}
			calls.Add(ev.ToolCalls)
			if len(ev.Content)+len(ev.Reasoning)+len(ev.ToolCall) > 512 {
				t.Fatalf("event larger than the limit: %d bytes", len(ev.Content))
			}
		}
	})
}

// messages is every message read through r (At cleared: it differs between readers), with each
// error's text, up to 1,000 messages.
func messages(r io.Reader, max int) []string {
	rd := NewReader(r, max)
	defer rd.Release()
	var out []string
	for range 1000 {
		ev, err := rd.Next()
		ev.At = time.Time{}
		out = append(out, fmt.Sprintf("%+v %v", ev, err))
		if err != nil && !errors.As(err, new(*MalformedError)) {
			break
		}
	}
	return out
}

// A Reader released in the middle of a message (an event name, a comment and a data line read, the
// stream abandoned) and taken again reads the next stream as a new Reader would.
func TestReaderReleasedMidMessage(t *testing.T) {
	second := "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n"
	want := messages(strings.NewReader(second), 512)
	for range 20 { // the pool may hand back another Reader; twenty rounds reuse the released one
		cut := errors.New("connection reset")
		rd := NewReader(io.MultiReader(strings.NewReader("event: error\n: note\ndata: {\"a\":1}\ndata: 2\n"), iotest.ErrReader(cut)), 512)
		if _, err := rd.Next(); !errors.Is(err, cut) {
			t.Fatalf("the cut stream read as %v, want %v", err, cut)
		}
		rd.Release()
		if got := messages(strings.NewReader(second), 512); !cmp.Equal(got, want) {
			t.Fatalf("after a release mid-message: %v, want %v", got, want)
		}
	}
}

// FuzzReaderSplits: however the stream is split into reads, the messages are the same. Read whole,
// most messages take the in-place path (a data line with its blank line already buffered); read a
// byte at a time, none can, so every message goes through the copying path.
func FuzzReaderSplits(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n"), 512)
	f.Add([]byte(": sent_ns=5\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\nevent: error\ndata: x\n\n"), 64)
	f.Add([]byte("data: 1\ndata: 2\n\ndata:{\"choices\":[]}\n\ndata: [DONE]"), 8)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		max = 1 + int(uint(max)%600)
		whole := messages(bytes.NewReader(data), max)
		bytewise := messages(iotest.OneByteReader(bytes.NewReader(data)), max)
		if diff := cmp.Diff(bytewise, whole); diff != "" {
			t.Fatalf("read whole vs a byte at a time (-bytewise +whole):\n%s", diff)
		}
	})
}

// FuzzFastDecode: wherever the fast decoder answers, it answers as encoding/json does.
func FuzzFastDecode(f *testing.F) {
	f.Add([]byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" w\u00e9\n"},"logprobs":null,"finish_reason":null}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":"stop"},{"delta":{"reasoning":"r"}}],"x":[1,{"a":[true,false,null,-1.5e3]}]}`))
	f.Add([]byte(`{"choices":[{"text":" t","finish_reason":null}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"a"},"delta":{"content":"b"}}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"a"}}],"usage":null,"error":null,"n":[-0,0.5e-7,1E+400,12]}`))
	f.Add([]byte(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-1a2b","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\": \"\u00e9\n\"}"}},{"index":0,"id":null,"function":null}]}}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":1.5},{"index":-0},{"index":1234567890},null]}}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"\ud83d\ude00 \udc00 \/\b\f\u0000\u00E9","reasoning":"\"q\"\\"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast Event
		if !fastDecode(data, &fast) {
			return
		}
		var slow Event
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, data)
		}
		if err := decodeSlow(data, &slow); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("fast and slow decoders differ on %q (-slow +fast):\n%s", data, diff)
		}
	})
}

func TestFastDecodeLeavesOddKeysToEncodingJSON(t *testing.T) {
	for _, data := range []string{
		`{"ChoiCes":[{"delta":{"content":"a"}}]}`,
		"{\"choice\u017f\":[{\"delta\":{\"content\":\"a\"}}]}", // ſ folds to s
		`{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
	} {
		var ev Event
		if fastDecode([]byte(data), &ev) {
			t.Errorf("fast path took %q", data)
		}
		var slow Event
		if err := decodeChunk([]byte(data), &slow); err != nil || slow.Content == "" {
			t.Errorf("%q: %v %+v", data, err, slow)
		}
	}
}

// TestFastDecodeTakesCommonChunks: the chunks real servers send on every token take the fast path
// (no reflection) and decode as encoding/json would; bad literals never do.
func TestFastDecodeTakesCommonChunks(t *testing.T) {
	for _, data := range []string{
		// OpenAI with stream_options.include_usage: usage is null on every chunk.
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		// vLLM: no usage key, token ids and stop_reason.
		`{"id":"cmpl-2","object":"chat.completion.chunk","created":1732000000,"model":"m","choices":[{"index":0,"delta":{"content":" there"},"logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[1,-2,3.5e-3,0]}]}`,
		// llama.cpp: timings with fractions and exponents, an error that is null.
		`{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"x"}}],"created":1,"timings":{"predicted_ms":12.25,"predicted_per_second":8.1E+1},"error":null}`,
	} {
		var fast, slow Event
		if !fastDecode([]byte(data), &fast) {
			t.Errorf("slow path for a common chunk: %s", data)
			continue
		}
		if err := decodeSlow([]byte(data), &slow); err != nil || cmp.Diff(slow, fast) != "" {
			t.Errorf("%s: %v %s", data, err, cmp.Diff(slow, fast))
		}
	}
	for _, lit := range []string{"01", "1.", ".5", "-", "1e", "1e+", "tru", "nul", "+1", "0x1", "--1"} {
		data := `{"choices":[],"x":` + lit + `}`
		var ev Event
		if fastDecode([]byte(data), &ev) {
			t.Errorf("fast path accepted the literal %s", lit)
		}
	}
}

// TestErrorTexts: the messages a record's error carries name what the server said and what it sent.
func TestErrorTexts(t *testing.T) {
	cause := errors.New("unexpected end of JSON input")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&StreamError{Message: "overloaded", Type: "server_error"}, "server error in stream: overloaded (server_error)"},
		{&StreamError{Message: "context full"}, "server error in stream: context full"},
		{&StreamError{Message: "slow down", Code: "rate_limit_exceeded"}, "server error in stream: slow down (code rate_limit_exceeded)"},
		{&StreamError{Message: "boom", Type: "server_error", Code: "server_error"}, "server error in stream: boom (server_error)"},
		{&StreamError{Message: "busy", Type: "invalid_request_error", Code: "429"}, "server error in stream: busy (invalid_request_error, code 429)"},
		{&MalformedError{Data: `{"choi`, Err: cause}, `malformed JSON chunk (unexpected end of JSON input): "{\"choi"`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
	if !errors.Is(&MalformedError{Err: cause}, cause) {
		t.Error("a MalformedError does not unwrap to its cause")
	}
}

// fed is messages for a Reader fed with Feed, the stream cut into pieces whose lengths cuts gives
// (1–64 bytes each, in turn; the last piece is the rest).
func fed(data, cuts []byte, max int) []string {
	rd := NewReader(nil, max)
	defer rd.Release()
	var out []string
	emit := func(ev Event, err error) bool {
		ev.At = time.Time{}
		out = append(out, fmt.Sprintf("%+v %v", ev, err))
		return len(out) < 1000 && (err == nil || errors.As(err, new(*MalformedError)))
	}
	for i := 0; len(data) > 0; i++ {
		n := len(data)
		if len(cuts) > 0 {
			n = min(n, 1+int(cuts[i%len(cuts)])%64)
		}
		if !rd.Feed(data[:n], time.Time{}, emit) {
			return out
		}
		data = data[n:]
	}
	rd.End(emit)
	return out
}

// FuzzFeedIsNext: a stream pushed in pieces through Feed gives the messages Next pulls from it, errors
// included, up to the first error that ends a stream.
func FuzzFeedIsNext(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n"), []byte{7, 200}, 512)
	f.Add([]byte(": sent_ns=5\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\nevent: error\ndata: x\n\n"), []byte{0}, 64)
	f.Add([]byte("data: 1\ndata: 2\n\ndata:{\"choices\":[]}\n\ndata: [DONE]"), []byte{}, 8)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a very long answer indeed\"}}]}\n\n"), []byte{3}, 8)
	f.Fuzz(func(t *testing.T, data, cuts []byte, max int) {
		max = 1 + int(uint(max)%600)
		pulled := messages(bytes.NewReader(data), max)
		pushed := fed(data, cuts, max)
		if diff := cmp.Diff(pulled, pushed); diff != "" {
			t.Fatalf("pulled by Next vs pushed by Feed (-pulled +pushed):\n%s", diff)
		}
	})
}
