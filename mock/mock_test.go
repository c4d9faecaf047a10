package mock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tiktoken-go/tokenizer"
)

// start runs a mock on a free loopback port for the test and closes it at the end.
func start(t *testing.T, mutate func(*Config)) *Running {
	t.Helper()
	cfg := DefaultConfig()
	cfg.TTFT, cfg.TPS = 5*time.Millisecond, 1000
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := Start(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return r
}

func chatBody(t *testing.T, messages []map[string]string, extra map[string]any) []byte {
	t.Helper()
	body := map[string]any{"model": "m", "messages": messages, "stream": true,
		"stream_options": map[string]any{"include_usage": true}, "max_tokens": 8}
	for k, v := range extra {
		if v == nil {
			delete(body, k)
		} else {
			body[k] = v
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func post(t *testing.T, client *http.Client, url string, body []byte) *http.Response {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// event is one server-sent event as an independent, strict reader sees it.
type event struct {
	data string
	json map[string]any // nil for [DONE] or unparsable data
}

// readEvents is the test's own SSE reader: it insists on "data: " lines, each event ended by a blank
// line, and returns the events and the error that ended the body (nil for a clean EOF).
func readEvents(t *testing.T, body io.Reader) ([]event, error) {
	t.Helper()
	var events []event
	br := bufio.NewReader(body)
	var pending []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" {
				if len(pending) > 0 {
					t.Errorf("stream ended inside an event: %q", pending)
				}
				return events, nil
			}
			return events, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if len(pending) == 0 {
				t.Errorf("blank line without an event")
				continue
			}
			ev := event{data: strings.Join(pending, "\n")}
			var m map[string]any
			if json.Unmarshal([]byte(ev.data), &m) == nil {
				ev.json = m
			}
			events = append(events, ev)
			pending = nil
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Errorf("line is not a data line: %q", line)
		}
		pending = append(pending, data)
	}
}

func delta(ev event) map[string]any {
	choices, _ := ev.json["choices"].([]any)
	if len(choices) == 0 {
		return nil
	}
	c := choices[0].(map[string]any)
	if d, ok := c["delta"].(map[string]any); ok {
		return d
	}
	return map[string]any{"content": c["text"]}
}

// tokensOf splits a stream into the content and reasoning chunk texts.
func tokensOf(events []event) (content, reasoning []string) {
	for _, ev := range events {
		d := delta(ev)
		if s, _ := d["content"].(string); s != "" {
			content = append(content, s)
		}
		if s, _ := d["reasoning_content"].(string); s != "" {
			reasoning = append(reasoning, s)
		}
	}
	return content, reasoning
}

func usageOf(events []event) map[string]any {
	for _, ev := range events {
		if u, ok := ev.json["usage"].(map[string]any); ok {
			return u
		}
	}
	return nil
}

func num(m map[string]any, path ...string) int {
	var cur any = m
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	f, _ := cur.(float64)
	return int(f)
}

func TestStreamFraming(t *testing.T) {
	m := start(t, nil)
	msgs := []map[string]string{{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say something."}}
	resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, msgs, nil))
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d content-type %q", resp.StatusCode, ct)
	}
	events, err := readEvents(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if d := delta(events[0]); d["role"] != "assistant" || d["content"] != "" {
		t.Fatalf("first event is not a role-only chunk: %s", events[0].data)
	}
	content, _ := tokensOf(events)
	if len(content) != 8 {
		t.Fatalf("want 8 content chunks (max_tokens 8), got %d", len(content))
	}
	n := len(events)
	if events[n-1].data != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", events[n-1].data)
	}
	usageEv := events[n-2]
	if choices := usageEv.json["choices"].([]any); len(choices) != 0 {
		t.Fatalf("usage chunk has choices: %s", usageEv.data)
	}
	finish := events[n-3].json["choices"].([]any)[0].(map[string]any)
	if finish["finish_reason"] != "length" {
		t.Fatalf("finish chunk: %s", events[n-3].data)
	}
	u := usageOf(events)
	codec, _ := tokenizer.Get(tokenizer.O200kBase)
	want := 0
	for _, msg := range msgs {
		a, _ := codec.Count(msg["role"] + ":\n")
		b, _ := codec.Count(msg["content"])
		want += a + b
	}
	if num(u, "prompt_tokens") != want || num(u, "completion_tokens") != 8 || num(u, "total_tokens") != want+8 {
		t.Fatalf("usage %v, want prompt %d completion 8", u, want)
	}
	// Each chunk is one token: re-tokenizing the answer gives back the count the server reported.
	if got, _ := codec.Count(strings.Join(content, "")); got != 8 {
		t.Fatalf("the answer re-tokenizes to %d tokens, want 8", got)
	}
}

func TestOutputWordsAreOneTokenEach(t *testing.T) {
	codec, _ := tokenizer.Get(tokenizer.O200kBase)
	for _, w := range outputWords {
		if n, _ := codec.Count(w); n != 1 {
			t.Errorf("%q is %d tokens", w, n)
		}
	}
}

func TestMaxTokensFields(t *testing.T) {
	m := start(t, func(c *Config) { c.DefaultMaxTokens = 5 })
	msgs := []map[string]string{{"role": "user", "content": "hi"}}
	cases := []struct {
		extra map[string]any
		want  int
	}{
		{map[string]any{"max_tokens": 3}, 3},
		{map[string]any{"max_tokens": nil, "max_completion_tokens": 4}, 4},
		{map[string]any{"max_tokens": 9, "max_completion_tokens": 2}, 2},
		{map[string]any{"max_tokens": nil}, 5},
	}
	for _, tc := range cases {
		resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, msgs, tc.extra))
		events, _ := readEvents(t, resp.Body)
		resp.Body.Close()
		if c, _ := tokensOf(events); len(c) != tc.want {
			t.Errorf("%v: %d chunks, want %d", tc.extra, len(c), tc.want)
		}
	}
}

func TestEOSAndIgnoreEOS(t *testing.T) {
	m := start(t, func(c *Config) { c.EOSMinFraction = 0.5 })
	seen := map[int]bool{}
	for i := range 40 {
		msgs := []map[string]string{{"role": "user", "content": fmt.Sprintf("question %d", i)}}
		for _, extra := range []map[string]any{{"max_tokens": 20}, {"max_tokens": 20, "ignore_eos": true}, {"max_tokens": 20, "min_tokens": 18}} {
			resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, msgs, extra))
			events, _ := readEvents(t, resp.Body)
			resp.Body.Close()
			n := num(usageOf(events), "completion_tokens")
			switch {
			case extra["ignore_eos"] == true && n != 20:
				t.Fatalf("ignore_eos: %d tokens, want 20", n)
			case extra["min_tokens"] != nil && n < 18:
				t.Fatalf("min_tokens 18: got %d", n)
			case n < 10 || n > 20:
				t.Fatalf("length %d outside [10, 20]", n)
			}
			if len(extra) == 1 {
				seen[n] = true
			}
		}
	}
	if len(seen) < 5 {
		t.Fatalf("natural lengths hardly vary: %v", seen)
	}
}

func TestNonStreamingAndCompletions(t *testing.T) {
	m := start(t, nil)
	msgs := []map[string]string{{"role": "user", "content": "hi"}}
	resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, msgs, map[string]any{"stream": false}))
	var out struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct{ Role, Content string }
			Text    string
		}
		Usage map[string]any
	}
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if out.Object != "chat.completion" || out.Choices[0].Message.Role != "assistant" || len(strings.Fields(out.Choices[0].Message.Content)) != 8 || num(out.Usage, "completion_tokens") != 8 {
		t.Fatalf("non-streaming chat: %+v", out)
	}
	body := []byte(`{"model":"m","prompt":"Once upon a time","max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`)
	resp = post(t, nil, m.BaseURL()+"/completions", body)
	events, err := readEvents(t, resp.Body)
	resp.Body.Close()
	if err != nil || events[0].json["object"] != "text_completion" {
		t.Fatalf("completions stream: %v %v", err, events)
	}
	if c, _ := tokensOf(events); len(c) != 6 || num(usageOf(events), "prompt_tokens") != 4 {
		t.Fatalf("completions: %d chunks, usage %v", len(c), usageOf(events))
	}
	resp = post(t, nil, m.BaseURL()+"/completions", []byte(`{"model":"m","prompt":"Once","max_tokens":3}`))
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if out.Object != "text_completion" || len(strings.Fields(out.Choices[0].Text)) != 3 {
		t.Fatalf("non-streaming completions: %+v", out)
	}
}

func TestModelsHealthMetrics(t *testing.T) {
	m := start(t, func(c *Config) { c.Model = "my-model" })
	if code, body := get(t, m, "/v1/models"); code != 200 || !strings.Contains(body, `"id":"my-model"`) {
		t.Fatalf("/v1/models: %d %s", code, body)
	}
	if code, _ := get(t, m, "/health"); code != 200 {
		t.Fatalf("/health: %d", code)
	}
	resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, []map[string]string{{"role": "user", "content": "hi"}}, nil))
	readEvents(t, resp.Body)
	resp.Body.Close()
	code, body := get(t, m, "/metrics")
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:generation_tokens_total{model_name=\"my-model\"} 8",
		"vllm:prompt_tokens_total", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:kv_cache_usage_perc",
		"vllm:time_to_first_token_seconds_bucket", "plload_mock_send_lateness_seconds{model_name=\"my-model\",quantile=\"0.99\"}",
		"plload_mock_send_lateness_max_seconds", `plload_mock_requests_total{model_name="my-model",outcome="ok"} 1`} {
		if code != 200 || !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	code, body = get(t, m, "/mock/stats")
	var st LatenessStats
	if json.Unmarshal([]byte(body), &st); code != 200 || st.Chunks != 8 {
		t.Fatalf("/mock/stats: %d %s", code, body)
	}
}

// collect runs one streaming request and returns its text and status.
func collect(t *testing.T, url string, body []byte) (int, string) {
	t.Helper()
	resp := post(t, nil, url, body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, ""
	}
	events, _ := readEvents(t, resp.Body)
	c, _ := tokensOf(events)
	return 200, strings.Join(c, "")
}

func TestDeterminism(t *testing.T) {
	cfg := func(seed uint64) func(*Config) {
		return func(c *Config) { c.Seed, c.ErrorRate, c.EOSMinFraction = seed, 0.3, 0.3 }
	}
	a, b, other := start(t, cfg(1)), start(t, cfg(1)), start(t, cfg(2))
	differs, errs := 0, 0
	for i := range 30 {
		body := chatBody(t, []map[string]string{{"role": "user", "content": fmt.Sprintf("q%d", i)}}, map[string]any{"max_tokens": 30})
		codeA, textA := collect(t, a.BaseURL()+"/chat/completions", body)
		codeA2, textA2 := collect(t, a.BaseURL()+"/chat/completions", body)
		codeB, textB := collect(t, b.BaseURL()+"/chat/completions", body)
		if codeA != codeA2 || codeA != codeB || textA != textA2 || textA != textB {
			t.Fatalf("request %d: same seed and body gave different answers: %d %q / %d %q / %d %q", i, codeA, textA, codeA2, textA2, codeB, textB)
		}
		if codeA == 500 {
			errs++
		}
		if c, text := collect(t, other.BaseURL()+"/chat/completions", body); c != codeA || text != textA {
			differs++
		}
	}
	if errs == 0 || errs == 30 || differs < 10 {
		t.Fatalf("error outcomes %d/30 at rate 0.3, %d/30 differ under another seed", errs, differs)
	}
}

func TestPrefixCacheGrows(t *testing.T) {
	m := start(t, func(c *Config) { c.CacheCapacity = 4096 })
	system := strings.Repeat("You are a helpful assistant who answers questions about gardening. ", 20)
	history := []map[string]string{{"role": "system", "content": system}}
	var cached []int
	prompt := 0
	for turn := range 4 {
		history = append(history, map[string]string{"role": "user", "content": fmt.Sprintf("Question number %d about roses?", turn)})
		resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, history, nil))
		events, _ := readEvents(t, resp.Body)
		resp.Body.Close()
		content, _ := tokensOf(events)
		history = append(history, map[string]string{"role": "assistant", "content": strings.Join(content, "")})
		u := usageOf(events)
		got := num(u, "prompt_tokens_details", "cached_tokens")
		if got%16 != 0 || got > num(u, "prompt_tokens") || (turn > 0 && got < prompt/16*16) {
			t.Fatalf("turn %d: cached %d of %d; the previous prompt had %d tokens", turn, got, num(u, "prompt_tokens"), prompt)
		}
		prompt = num(u, "prompt_tokens")
		cached = append(cached, got)
	}
	if cached[0] != 0 || !(cached[1] < cached[2] && cached[2] < cached[3]) {
		t.Fatalf("cached tokens do not grow with the shared history: %v", cached)
	}
	// Other prompts push the session out of a 4096-token LRU.
	for i := range 12 {
		other := []map[string]string{{"role": "user", "content": strings.Repeat(fmt.Sprintf("unrelated text %d ", i), 100)}}
		resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, other, nil))
		readEvents(t, resp.Body)
		resp.Body.Close()
	}
	resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, history[:2], nil))
	events, _ := readEvents(t, resp.Body)
	resp.Body.Close()
	if got := num(usageOf(events), "prompt_tokens_details", "cached_tokens"); got != 0 {
		t.Fatalf("evicted prefix still reported as cached: %d", got)
	}
}

func TestFirstTokenDelay(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TTFT, cfg.CacheTTFTFactor, cfg.PrefillPerToken = 300*time.Millisecond, 0.1, time.Millisecond
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		prompt, cached int
		want           time.Duration
	}{
		{100, 0, 300*time.Millisecond + 100*time.Millisecond},
		{100, 100, 30 * time.Millisecond},
		{100, 50, 165*time.Millisecond + 50*time.Millisecond},
	}
	for _, tc := range cases {
		x := &exchange{s: s, prompt: tc.prompt, cached: tc.cached}
		if got := x.firstTokenDelay(); got != tc.want {
			t.Errorf("prompt %d cached %d: TTFT %s, want %s", tc.prompt, tc.cached, got, tc.want)
		}
	}
}

func TestReasoningAndUsageOptions(t *testing.T) {
	m := start(t, func(c *Config) { c.ReasoningTokens = 3 })
	msgs := []map[string]string{{"role": "user", "content": "think"}}
	resp := post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, msgs, nil))
	events, _ := readEvents(t, resp.Body)
	resp.Body.Close()
	content, reasoning := tokensOf(events)
	if len(reasoning) != 3 || len(content) != 5 || delta(events[1])["reasoning_content"] == nil {
		t.Fatalf("want 3 reasoning chunks first then 5 content, got %d / %d", len(reasoning), len(content))
	}
	u := usageOf(events)
	if num(u, "completion_tokens") != 8 || num(u, "completion_tokens_details", "reasoning_tokens") != 3 {
		t.Fatalf("usage %v", u)
	}
	// Without stream_options.include_usage there is no usage chunk.
	resp = post(t, nil, m.BaseURL()+"/chat/completions", chatBody(t, msgs, map[string]any{"stream_options": nil}))
	events, _ = readEvents(t, resp.Body)
	resp.Body.Close()
	if usageOf(events) != nil {
		t.Fatal("usage sent without include_usage")
	}
	n := start(t, func(c *Config) { c.NoUsage = true })
	resp = post(t, nil, n.BaseURL()+"/chat/completions", chatBody(t, msgs, nil))
	events, _ = readEvents(t, resp.Body)
	resp.Body.Close()
	if usageOf(events) != nil || events[len(events)-1].data != "[DONE]" {
		t.Fatal("--no-usage still sent usage")
	}
}

func TestBadRequests(t *testing.T) {
	m := start(t, nil)
	for _, body := range []string{`{`, `{"model":"m","messages":[]}`, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":0}`,
		`{"model":"m","messages":[{"role":"user","content":7}]}`} {
		resp := post(t, nil, m.BaseURL()+"/chat/completions", []byte(body))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"type":"invalid_request_error"`) {
			t.Errorf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
}

// faultResult is what a client saw of one faulty request.
type faultResult struct {
	status  int
	header  http.Header
	body    string
	events  []event
	readErr error
}

func faulty(t *testing.T, mutate func(*Config), timeout time.Duration) faultResult {
	t.Helper()
	m := start(t, func(c *Config) {
		c.TTFT, c.TPS = time.Millisecond, 2000
		mutate(c)
	})
	client := &http.Client{Timeout: timeout}
	body := chatBody(t, []map[string]string{{"role": "user", "content": "hello"}}, map[string]any{"max_tokens": 10})
	resp, err := client.Post(m.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return faultResult{readErr: err}
	}
	defer resp.Body.Close()
	r := faultResult{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		r.body = string(b)
		return r
	}
	r.events, r.readErr = readEvents(t, resp.Body)
	return r
}

func TestFaults(t *testing.T) {
	rate := func(k FaultKind) func(*Config) {
		return func(c *Config) { c.Faults = map[FaultKind]float64{k: 1} }
	}
	t.Run("error 500", func(t *testing.T) {
		r := faulty(t, func(c *Config) { c.ErrorRate = 1 }, 5*time.Second)
		if r.status != 500 || !strings.Contains(r.body, `"code":500`) {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("rate limit 429", func(t *testing.T) {
		r := faulty(t, func(c *Config) { c.RateLimitRate, c.RetryAfter = 1, 2*time.Second }, 5*time.Second)
		if r.status != 429 || r.header.Get("Retry-After") != "2" || !strings.Contains(r.body, "rate_limit") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("html 503", func(t *testing.T) {
		r := faulty(t, rate(FaultHTML503), 5*time.Second)
		if r.status != 503 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, "<html>") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("cut", func(t *testing.T) {
		r := faulty(t, rate(FaultCut), 5*time.Second)
		c, _ := tokensOf(r.events)
		if !errors.Is(r.readErr, io.ErrUnexpectedEOF) || len(c) != 5 {
			t.Fatalf("want an unexpected EOF after 5 of 10 tokens, got %v after %d", r.readErr, len(c))
		}
	})
	t.Run("reset", func(t *testing.T) {
		r := faulty(t, rate(FaultReset), 5*time.Second)
		c, _ := tokensOf(r.events)
		if !errors.Is(r.readErr, syscall.ECONNRESET) || len(c) != 5 {
			t.Fatalf("want a connection reset after 5 tokens, got %v after %d", r.readErr, len(c))
		}
	})
	t.Run("stall", func(t *testing.T) {
		r := faulty(t, rate(FaultStall), 300*time.Millisecond)
		c, _ := tokensOf(r.events)
		var timeout interface{ Timeout() bool }
		if !errors.As(r.readErr, &timeout) || !timeout.Timeout() || len(c) != 5 {
			t.Fatalf("want the client's timeout after 5 tokens, got %v after %d", r.readErr, len(c))
		}
	})
	t.Run("malformed", func(t *testing.T) {
		r := faulty(t, rate(FaultMalformed), 5*time.Second)
		bad := 0
		for _, ev := range r.events {
			if ev.json == nil && ev.data != "[DONE]" {
				bad++
			}
		}
		if r.readErr != nil || bad != 1 || r.events[len(r.events)-1].data != "[DONE]" {
			t.Fatalf("want exactly one unparsable chunk in a complete stream: %d, %v", bad, r.readErr)
		}
	})
	t.Run("no done", func(t *testing.T) {
		r := faulty(t, rate(FaultNoDone), 5*time.Second)
		c, _ := tokensOf(r.events)
		if r.readErr != nil || len(c) != 10 || usageOf(r.events) == nil || r.events[len(r.events)-1].data == "[DONE]" {
			t.Fatalf("want a clean end with usage and no [DONE]: %v, %d tokens", r.readErr, len(c))
		}
	})
}

// metricValue reads one unlabelled-by-us sample from /metrics.
func metricValue(t *testing.T, m *Running, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), name+"{") {
			var v float64
			fmt.Sscan(sc.Text()[strings.LastIndexByte(sc.Text(), ' ')+1:], &v)
			return v
		}
	}
	return -1
}

// waitFor polls cond until it holds, for at most 30 s: a bound for a busy machine (two busy loops
// beside go test ./... once took more than 5 s to bring two requests to the mock), not a timing claim.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMaxConcurrencyQueues(t *testing.T) {
	m := start(t, func(c *Config) { c.MaxConcurrency, c.TTFT = 1, time.Hour })
	body := chatBody(t, []map[string]string{{"role": "user", "content": "hi"}}, nil)
	ctxA, cancelA := context.WithCancel(context.Background())
	reqA, _ := http.NewRequestWithContext(ctxA, "POST", m.BaseURL()+"/chat/completions", bytes.NewReader(body))
	respA, err := http.DefaultClient.Do(reqA)
	if err != nil {
		t.Fatal(err)
	}
	defer respA.Body.Close()
	gotB := make(chan int, 1)
	go func() {
		resp, err := http.Post(m.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			gotB <- -1
			return
		}
		resp.Body.Close()
		gotB <- resp.StatusCode
	}()
	waitFor(t, "one waiting request", func() bool { return metricValue(t, m, "vllm:num_requests_waiting") == 1 })
	if metricValue(t, m, "vllm:num_requests_running") != 1 {
		t.Fatal("want one running request")
	}
	select {
	case <-gotB:
		t.Fatal("the second request was admitted while the only slot was taken")
	default:
	}
	cancelA()
	select {
	case code := <-gotB:
		if code != 200 {
			t.Fatalf("second request: %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second request was not admitted after the first left")
	}
}

func TestCloseEndsStallsWithoutLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := DefaultConfig()
	cfg.TTFT, cfg.Faults = time.Millisecond, map[FaultKind]float64{FaultStall: 1}
	m, err := Start(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	transport := &http.Transport{}
	client := &http.Client{Transport: transport}
	body := chatBody(t, []map[string]string{{"role": "user", "content": "hi"}}, map[string]any{"max_tokens": 4})
	errs := make(chan error, 5)
	for range 5 {
		go func() {
			resp, err := client.Post(m.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(body))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	waitFor(t, "5 running requests", func() bool { return metricValue(t, m, "vllm:num_requests_running") == 5 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	for range 5 {
		<-errs
	}
	transport.CloseIdleConnections()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before+1 })
}

func TestStartRefusesBadConfigAndBusyPort(t *testing.T) {
	bad := DefaultConfig()
	bad.TPS = 0
	if _, err := Start(bad, ""); err == nil || !strings.Contains(err.Error(), "--tps") {
		t.Fatalf("bad config: %v", err)
	}
	m := start(t, nil)
	if _, err := Start(DefaultConfig(), m.Addr()); err == nil || !strings.Contains(err.Error(), "listening on") {
		t.Fatalf("busy port: %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8000": true, "[::1]:80": true, "localhost:1": true, "127.1.2.3:5": true,
		":8000": false, "0.0.0.0:8000": false, "10.0.0.1:80": false, "example.com:80": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) != %v", addr, want)
		}
	}
}

func TestJitterIsSeededAndBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TTFT, cfg.Jitter = 100*time.Millisecond, 0.5
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	delays := map[time.Duration]bool{}
	for i := range 50 {
		body := []byte(fmt.Sprintf(`{"messages":[{"role":"user","content":"%d"}]}`, i))
		var req request
		json.Unmarshal(body, &req)
		a := &exchange{s: s, plan: s.newPlan(body, &req, 10)}
		b := &exchange{s: s, plan: s.newPlan(body, &req, 10)}
		da, db := a.firstTokenDelay(), b.firstTokenDelay()
		if da != db {
			t.Fatalf("same body, different jitter: %s vs %s", da, db)
		}
		if da < 50*time.Millisecond || da > 150*time.Millisecond {
			t.Fatalf("TTFT %s outside 100ms ± 50%%", da)
		}
		delays[da] = true
	}
	if len(delays) < 40 {
		t.Fatalf("jitter hardly varies: %d distinct TTFTs of 50", len(delays))
	}
}

// TestSharesProcessLeavesACore: a mock in its client's process prepares at most GOMAXPROCS−1
// requests at once, gives its share back on every path (errors and injected faults too), and still
// answers every request.
func TestSharesProcessLeavesACore(t *testing.T) {
	m := start(t, func(c *Config) { c.SharesProcess = true; c.ErrorRate = 0.3 })
	if want := max(1, runtime.GOMAXPROCS(0)-1); cap(m.cpu) != want {
		t.Fatalf("cores for preparing requests: %d, want %d", cap(m.cpu), want)
	}
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			m.withCPU(func() bool {
				n := running.Add(1)
				for o := most.Load(); n > o && !most.CompareAndSwap(o, n); o = most.Load() {
				}
				time.Sleep(5 * time.Millisecond)
				running.Add(-1)
				return true
			})
		})
	}
	wg.Wait()
	if most.Load() > int32(cap(m.cpu)) {
		t.Errorf("%d requests prepared at once, more than the share of %d", most.Load(), cap(m.cpu))
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, body := range []string{`{`, `{"model":"m","messages":[]}`} {
		resp := post(t, client, m.BaseURL()+"/chat/completions", []byte(body))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%s: HTTP %d, want 400", body, resp.StatusCode)
		}
	}
	codes := make([]int, 16)
	for i := range codes {
		wg.Go(func() {
			body := chatBody(t, []map[string]string{{"role": "user", "content": strings.Repeat(fmt.Sprintf("request %d asks ", i), 2000)}}, nil)
			resp, err := client.Post(m.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil { // codes[i] stays 0: not answered
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	answered := map[int]int{}
	for _, c := range codes {
		answered[c]++
	}
	if answered[200]+answered[500] != len(codes) || answered[200] == 0 || answered[500] == 0 {
		t.Errorf("answers by status: %v; want every request answered, some 200 and some injected 500", answered)
	}
}
