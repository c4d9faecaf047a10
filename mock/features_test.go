package mock

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testTools are the functions the tool tests offer: one with required parameters of several types,
// one with optional parameters only, one with none.
var testTools = []any{
	map[string]any{"type": "function", "function": map[string]any{"name": "search_docs", "description": "search",
		"parameters": map[string]any{"type": "object", "required": []any{"query", "limit", "exact"}, "properties": map[string]any{
			"query": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 20},
			"exact": map[string]any{"type": "boolean"}, "lang": map[string]any{"type": "string"}}}}},
	map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}}}},
	map[string]any{"type": "function", "function": map[string]any{"name": "now"}},
}

func toolNames() []string { return []string{"search_docs", "get_weather", "now"} }

var callID = regexp.MustCompile(`^call_[0-9a-f]{16}$`)

// assembled is one tool call put together from its streamed deltas by index.
type assembled struct {
	id, typ, name, args string
	pieces              int // argument deltas after the header
}

// streamedAnswer is what the test's own reader makes of a chat stream.
type streamedAnswer struct {
	calls   []*assembled
	content string
	finish  string
	usage   map[string]any
	done    bool
	chunks  int // chunks carrying a token (content or a tool-call delta)
}

func readAnswer(t *testing.T, events []event) streamedAnswer {
	t.Helper()
	var a streamedAnswer
	for _, ev := range events {
		if ev.data == "[DONE]" {
			a.done = true
			continue
		}
		if ev.json == nil {
			t.Fatalf("unparsable event %q", ev.data)
		}
		if u, ok := ev.json["usage"].(map[string]any); ok {
			a.usage = u
		}
		choices, _ := ev.json["choices"].([]any)
		if len(choices) == 0 {
			continue
		}
		c := choices[0].(map[string]any)
		if f, ok := c["finish_reason"].(string); ok {
			a.finish = f
		}
		d, _ := c["delta"].(map[string]any)
		if s, _ := d["content"].(string); s != "" {
			a.content += s
			a.chunks++
		}
		tcs, _ := d["tool_calls"].([]any)
		if len(tcs) > 0 {
			a.chunks++
		}
		for _, raw := range tcs {
			tc := raw.(map[string]any)
			idx := int(tc["index"].(float64))
			fn, _ := tc["function"].(map[string]any)
			if idx == len(a.calls) { // a new call: its header
				id, _ := tc["id"].(string)
				typ, _ := tc["type"].(string)
				name, _ := fn["name"].(string)
				if args, _ := fn["arguments"].(string); args != "" {
					t.Errorf("call %d: the header chunk carries arguments %q", idx, args)
				}
				a.calls = append(a.calls, &assembled{id: id, typ: typ, name: name})
				continue
			}
			if idx != len(a.calls)-1 {
				t.Fatalf("tool call delta with index %d after %d calls", idx, len(a.calls))
			}
			if _, ok := tc["id"]; ok {
				t.Errorf("call %d: an argument delta repeats the id", idx)
			}
			piece, _ := fn["arguments"].(string)
			a.calls[idx].args += piece
			a.calls[idx].pieces++
		}
	}
	return a
}

func streamChat(t *testing.T, m *Running, body []byte) streamedAnswer {
	t.Helper()
	resp := post(t, nil, m.BaseURL()+"/chat/completions", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
	}
	events, err := readEvents(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, events)
}

func userMsg(s string) []map[string]string {
	return []map[string]string{{"role": "user", "content": s}}
}

// checkArguments asserts that a call's arguments are a JSON object meeting its function's schema.
func checkArguments(t *testing.T, c *assembled) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal([]byte(c.args), &args); err != nil {
		t.Fatalf("call %s arguments %q are not a JSON object: %v", c.name, c.args, err)
	}
	switch c.name {
	case "search_docs":
		q, okQ := args["query"].(string)
		l, okL := args["limit"].(float64)
		_, okE := args["exact"].(bool)
		if !okQ || q == "" || !okL || l != float64(int(l)) || l < 1 || l > 20 || !okE {
			t.Errorf("search_docs arguments %s do not meet its schema", c.args)
		}
	case "get_weather":
		if _, ok := args["city"].(string); !ok {
			t.Errorf("get_weather arguments %s lack the string city", c.args)
		}
	case "now":
		if len(args) == 0 {
			t.Errorf("now arguments %s: want the small default object", c.args)
		}
	default:
		t.Errorf("call names %q, not one of the request's functions", c.name)
	}
}

func TestToolCallsStreamedInPieces(t *testing.T) {
	const tps = 200
	m := start(t, func(c *Config) { c.ToolCallRate, c.TPS = 1, tps })
	for i := range 8 {
		body := chatBody(t, userMsg(fmt.Sprintf("look something up %d", i)), map[string]any{"tools": testTools, "max_tokens": 64})
		began := time.Now()
		a := streamChat(t, m, body)
		took := time.Since(began)
		if a.finish != "tool_calls" || !a.done || a.content != "" {
			t.Fatalf("finish %q, done %v, content %q: want tool_calls, [DONE], no content", a.finish, a.done, a.content)
		}
		if len(a.calls) < 1 || len(a.calls) > 2 {
			t.Fatalf("%d calls, want 1 or 2", len(a.calls))
		}
		chunks := 0
		for _, c := range a.calls {
			if !callID.MatchString(c.id) || c.typ != "function" || !slices.Contains(toolNames(), c.name) {
				t.Errorf("call header id %q type %q name %q", c.id, c.typ, c.name)
			}
			if c.pieces < 3 || c.pieces > 6 {
				t.Errorf("call %s: arguments in %d pieces, want 3–6", c.name, c.pieces)
			}
			checkArguments(t, c)
			chunks += 1 + c.pieces
		}
		if len(a.calls) == 2 && a.calls[0].name == a.calls[1].name {
			t.Errorf("both calls name %s", a.calls[0].name)
		}
		if a.chunks != chunks || num(a.usage, "completion_tokens") != chunks {
			t.Errorf("%d tool-call chunks, usage %v: want completion_tokens %d", a.chunks, a.usage, chunks)
		}
		// Paced like tokens: one chunk per 1/tps after the first.
		if least := time.Duration(chunks-1) * time.Second / tps; took < least {
			t.Errorf("%d chunks in %s, want at least %s at %d tok/s", chunks, took, least, tps)
		}
	}
}

// answerKind posts a non-streamed chat request and says "tool" or "content".
func answerKind(t *testing.T, url string, body []byte) string {
	resp, err := http.Post(url, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content   *string
				ToolCalls []any `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
		t.Errorf("HTTP %d: %v", resp.StatusCode, err)
		return ""
	}
	c := out.Choices[0]
	switch {
	case len(c.Message.ToolCalls) > 0 && c.FinishReason == "tool_calls" && c.Message.Content == nil:
		return "tool"
	case len(c.Message.ToolCalls) == 0 && c.FinishReason != "tool_calls" && c.Message.Content != nil:
		return "content"
	}
	t.Errorf("inconsistent answer %+v", c)
	return ""
}

// kinds sends n requests (every other one a tool round: history ending in a tool result), 16 at a
// time, and returns each answer's kind.
func kinds(t *testing.T, m *Running, n int, extra map[string]any) []string {
	t.Helper()
	out := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		var msgs []map[string]any
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("question %d", i)})
		if i%2 == 1 {
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_0123456789abcdef", "type": "function",
					"function": map[string]any{"name": "now", "arguments": `{"query":"x","limit":1}`}}}},
				map[string]any{"role": "tool", "tool_call_id": "call_0123456789abcdef", "content": "the result"})
		}
		body := map[string]any{"model": "m", "messages": msgs, "stream": false, "max_tokens": 4, "tools": testTools}
		for k, v := range extra {
			body[k] = v
		}
		b, _ := json.Marshal(body)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = answerKind(t, m.BaseURL()+"/chat/completions", b)
		}()
	}
	wg.Wait()
	return out
}

func countOf(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

func TestToolCallRate(t *testing.T) {
	const n = 400
	for _, tc := range []struct {
		rate   float64
		lo, hi int
	}{{0, 0, 0}, {1, n, n}, {0.5, n/2 - 40, n/2 + 40}} {
		m := start(t, func(c *Config) { c.ToolCallRate, c.Seed, c.TTFT = tc.rate, 7, 0 })
		got := kinds(t, m, n, nil)
		t.Logf("rate %g: %d of %d answers with tool calls", tc.rate, countOf(got, "tool"), n)
		if tools := countOf(got, "tool"); tools < tc.lo || tools > tc.hi || tools+countOf(got, "content") != n {
			t.Errorf("rate %g: %d of %d answers with tool calls, want %d–%d", tc.rate, tools, n, tc.lo, tc.hi)
		}
		// Tool rounds (history ending in a tool message) follow the same rule.
		var rounds []string
		for i := 1; i < n; i += 2 {
			rounds = append(rounds, got[i])
		}
		if tc.rate == 0.5 {
			if r := countOf(rounds, "tool"); r < n/4-30 || r > n/4+30 {
				t.Errorf("rate 0.5: %d of %d tool rounds answered with tool calls", r, n/2)
			}
			again := kinds(t, start(t, func(c *Config) { c.ToolCallRate, c.Seed, c.TTFT = tc.rate, 7, 0 }), n, nil)
			if !slices.Equal(got, again) {
				t.Error("rate 0.5: the same seed and bodies decided differently")
			}
		}
	}
}

func TestToolChoice(t *testing.T) {
	always := start(t, func(c *Config) { c.ToolCallRate, c.TTFT = 1, 0 })
	if got := kinds(t, always, 40, map[string]any{"tool_choice": "none"}); countOf(got, "content") != 40 {
		t.Errorf("tool_choice none at rate 1: %d of 40 content answers", countOf(got, "content"))
	}
	never := start(t, func(c *Config) { c.ToolCallRate, c.TTFT = 0, 0 })
	if got := kinds(t, never, 40, map[string]any{"tool_choice": "required"}); countOf(got, "tool") != 40 {
		t.Errorf("tool_choice required at rate 0: %d of 40 tool answers", countOf(got, "tool"))
	}
	named := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
	for i := range 10 {
		a := streamChat(t, never, chatBody(t, userMsg(fmt.Sprint("weather ", i)), map[string]any{"tools": testTools, "tool_choice": named}))
		if len(a.calls) != 1 || a.calls[0].name != "get_weather" || a.finish != "tool_calls" {
			t.Fatalf("named tool_choice at rate 0: %d calls, finish %q", len(a.calls), a.finish)
		}
		checkArguments(t, a.calls[0])
	}
	resp := post(t, nil, never.BaseURL()+"/chat/completions", chatBody(t, userMsg("x"), map[string]any{"tools": testTools,
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "missing"}}}))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("tool_choice naming an absent function: HTTP %d, want 400", resp.StatusCode)
	}
	// Without tools the rate does not matter: prose, as before.
	if a := streamChat(t, always, chatBody(t, userMsg("plain"), nil)); len(a.calls) != 0 || a.finish != "length" || a.chunks != 8 {
		t.Errorf("no tools at rate 1: %d calls, finish %q, %d chunks", len(a.calls), a.finish, a.chunks)
	}
}

func TestToolCallsNonStreamed(t *testing.T) {
	m := start(t, func(c *Config) { c.ToolCallRate = 1 })
	resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, userMsg("find it"), map[string]any{"tools": testTools, "stream": false}))
	defer resp.Body.Close()
	var out struct {
		Object  string
		Choices []struct {
			Message struct {
				Role      string
				Content   *string
				ToolCalls []struct {
					ID       string
					Type     string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage map[string]any
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
	}
	c := out.Choices[0]
	if out.Object != "chat.completion" || c.FinishReason != "tool_calls" || c.Message.Role != "assistant" || c.Message.Content != nil || len(c.Message.ToolCalls) == 0 {
		t.Fatalf("non-streamed tool answer: %+v", out)
	}
	for _, tc := range c.Message.ToolCalls {
		if !callID.MatchString(tc.ID) || tc.Type != "function" {
			t.Errorf("call id %q type %q", tc.ID, tc.Type)
		}
		checkArguments(t, &assembled{name: tc.Function.Name, args: tc.Function.Arguments})
	}
	if num(out.Usage, "completion_tokens") < 4 {
		t.Errorf("usage %v: the tool-call text counts as completion tokens", out.Usage)
	}
}

func TestModels(t *testing.T) {
	m := start(t, func(c *Config) { c.Model, c.Models = "base-model", []string{"sql-lora", "base-model", "chat-lora"} })
	resp, err := http.Get(m.BaseURL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	var ids []string
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	if list.Object != "list" || !slices.Equal(ids, []string{"base-model", "sql-lora", "chat-lora"}) {
		t.Fatalf("/v1/models lists %v, want base-model, sql-lora, chat-lora once each", ids)
	}
	for _, name := range ids {
		if a := streamChat(t, m, chatBody(t, userMsg("hi"), map[string]any{"model": name})); !a.done {
			t.Errorf("model %s: the stream did not finish", name)
		}
	}
	for _, path := range []string{"/chat/completions", "/completions"} {
		body := chatBody(t, userMsg("hi"), map[string]any{"model": "x", "prompt": "hi"})
		resp := post(t, nil, m.BaseURL()+path, body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct {
				Message, Type string
				Code          int
			}
		}
		if resp.StatusCode != http.StatusNotFound || json.Unmarshal(b, &e) != nil || e.Error.Message != "The model `x` does not exist." ||
			e.Error.Type != "NotFoundError" || e.Error.Code != 404 {
			t.Errorf("%s with an unknown model: HTTP %d %s", path, resp.StatusCode, b)
		}
	}
	bad := DefaultConfig()
	bad.Models = []string{"a", ""}
	if bad.Validate() == nil {
		t.Error("an empty model name passes Validate")
	}
}

var answerSchema = map[string]any{"type": "object", "required": []any{"title", "year", "score", "ok", "tags", "author"},
	"properties": map[string]any{
		"title": map[string]any{"type": "string"}, "year": map[string]any{"type": "integer"},
		"score": map[string]any{"type": "number"}, "ok": map[string]any{"type": "boolean"},
		"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"author": map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		"note":   map[string]any{"type": "string"}}}

// meetsSchema checks answerSchema's required properties and their types.
func meetsSchema(doc map[string]any) bool {
	title, ok1 := doc["title"].(string)
	year, ok2 := doc["year"].(float64)
	_, ok3 := doc["score"].(float64)
	_, ok4 := doc["ok"].(bool)
	tags, ok5 := doc["tags"].([]any)
	author, ok6 := doc["author"].(map[string]any)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || title == "" || year != float64(int(year)) || len(tags) == 0 {
		return false
	}
	for _, tag := range tags {
		if _, ok := tag.(string); !ok {
			return false
		}
	}
	_, ok := author["name"].(string)
	return ok
}

func TestStructuredOutputValid(t *testing.T) {
	m := start(t, func(c *Config) { c.TPS = 1e4 }) // JSONValidRate 1 by default
	formats := map[string]any{
		"json_object": map[string]any{"type": "json_object"},
		"json_schema": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": answerSchema, "strict": true}},
	}
	for name, rf := range formats {
		for i := range 20 {
			a := streamChat(t, m, chatBody(t, userMsg(fmt.Sprint("answer ", i)), map[string]any{"response_format": rf, "max_tokens": 60}))
			var doc map[string]any
			if err := json.Unmarshal([]byte(a.content), &doc); err != nil {
				t.Fatalf("%s: content %q is not a JSON object: %v", name, a.content, err)
			}
			if name == "json_schema" && !meetsSchema(doc) {
				t.Errorf("json_schema: %s does not meet the schema's required properties", a.content)
			}
			if a.chunks < 5 || a.finish != "stop" || num(a.usage, "completion_tokens") != a.chunks || a.chunks > 60 {
				t.Errorf("%s: %d content chunks, finish %q, usage %v", name, a.chunks, a.finish, a.usage)
			}
		}
	}
	// Non-streamed: the same document as the message content.
	resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, userMsg("q"), map[string]any{"stream": false, "response_format": formats["json_schema"], "max_tokens": 100}))
	var out struct {
		Choices []struct{ Message struct{ Content string } }
	}
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	var doc map[string]any
	if len(out.Choices) != 1 || json.Unmarshal([]byte(out.Choices[0].Message.Content), &doc) != nil || !meetsSchema(doc) {
		t.Errorf("non-streamed json_schema answer: %+v", out)
	}
	// A cap below the document cuts it: invalid, finish_reason length.
	a := streamChat(t, m, chatBody(t, userMsg("short"), map[string]any{"response_format": formats["json_schema"], "max_tokens": 5}))
	if a.chunks != 5 || a.finish != "length" || json.Valid([]byte(a.content)) {
		t.Errorf("json_schema cut at 5 tokens: %d chunks, finish %q, content %q", a.chunks, a.finish, a.content)
	}
}

func TestStructuredOutputInvalidShare(t *testing.T) {
	const n = 400
	m := start(t, func(c *Config) { c.JSONValidRate, c.Seed, c.TTFT, c.TPS = 0.75, 3, 0, 1e5 })
	rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": answerSchema}}
	valid := make([]bool, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		body := chatBody(t, userMsg(fmt.Sprint("item ", i)), map[string]any{"response_format": rf, "max_tokens": 120, "stream": false})
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			resp, err := http.Post(m.BaseURL()+"/chat/completions", "application/json", strings.NewReader(string(body)))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var out struct {
				Choices []struct {
					Message      struct{ Content string }
					FinishReason string `json:"finish_reason"`
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
				t.Errorf("HTTP %d: %v", resp.StatusCode, err)
				return
			}
			content, finish := out.Choices[0].Message.Content, out.Choices[0].FinishReason
			var doc map[string]any
			valid[i] = json.Unmarshal([]byte(content), &doc) == nil && meetsSchema(doc)
			if !valid[i] && (finish != "stop" || !strings.HasPrefix(content, "{")) {
				t.Errorf("an invalid answer %q ends with %q: want a truncated document, finish stop", content, finish)
			}
		}()
	}
	wg.Wait()
	invalid := n - countOfBool(valid)
	t.Logf("%d of %d invalid", invalid, n)
	if share := float64(invalid) / n; share < 0.19 || share > 0.31 {
		t.Errorf("%d of %d answers invalid (%.3f), want about 0.25", invalid, n, share)
	}
}

func countOfBool(xs []bool) int {
	n := 0
	for _, x := range xs {
		if x {
			n++
		}
	}
	return n
}
