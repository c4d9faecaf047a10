package engine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plload/plload/mock"
)

// messagesScenario is scenarioYAML on the Messages API: the key from api_key_env alone (no
// X-Api-Key header of the user's, which would override the API's), with target lines added.
func messagesScenario(base, session, load, targetLines string) string {
	text := scenarioYAML(base, session, load)
	return strings.Replace(text, `  headers: {X-Api-Key: "${PLLOAD_TEST_SECRET}", X-Team: blue}`+"\n", "  endpoint: messages\n"+targetLines, 1)
}

// startMessagesMock serves the real mock on loopback, keeping each /v1/messages request's headers;
// route rewrites a request's path first (nil: none).
func startMessagesMock(t *testing.T, mutate func(*mock.Config), route func(*http.Request)) (string, func() []http.Header) {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.TPS = 5*time.Millisecond, 1000
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var headers []http.Header
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/messages" {
			mu.Lock()
			headers = append(headers, r.Header.Clone())
			mu.Unlock()
		}
		if route != nil {
			route(r)
		}
		srv.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: handler}
	go hs.Serve(ln)
	t.Cleanup(func() {
		srv.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String() + "/v1", func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return headers
	}
}

// A run on the Messages API against the mock: no errors; every record has content and the
// server's usage, with cached tokens once personas repeat; the key went as x-api-key with the
// API's version (never as a bearer token) and reached no file.
func TestMessagesRunOnTheMock(t *testing.T) {
	base, headers := startMessagesMock(t, nil, nil)
	res, dir, err := runScenario(t, context.Background(), messagesScenario(base, shortSessions,
		"  mode: concurrency\n  stages:\n    - {concurrency: 3, duration: 800ms}", "  cache_control: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if res[0].Errors != 0 || len(recs) < 4 {
		t.Fatalf("%d errors in %d records", res[0].Errors, len(recs))
	}
	cachedSeen := false
	for _, r := range recs {
		m := r["metrics"].(map[string]any)
		for _, k := range []string{"usage_prompt_tokens", "usage_completion_tokens", "output_sequence_length", "output_char_count", "time_to_first_token"} {
			if v, ok := m[k].(map[string]any); !ok || float(v["value"]) <= 0 {
				t.Fatalf("record without %s: %v", k, m)
			}
		}
		if osl, usage := integer(m["output_sequence_length"].(map[string]any)["value"]), integer(m["usage_completion_tokens"].(map[string]any)["value"]); osl != usage {
			t.Errorf("output_sequence_length %d, the server's output_tokens %d", osl, usage)
		}
		if v, ok := m["usage_prompt_cache_read_tokens"].(map[string]any); ok && integer(v["value"]) > 0 {
			cachedSeen = true
		}
	}
	if !cachedSeen {
		t.Error("no record had cached tokens, though 4 personas repeat across sessions")
	}
	hs := headers()
	if len(hs) != len(recs) {
		t.Errorf("%d requests for %d records", len(hs), len(recs))
	}
	for _, h := range hs {
		if h.Get("X-Api-Key") != secretKey || h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Authorization") != "" {
			t.Fatalf("headers: x-api-key %q, anthropic-version %q, authorization %q", h.Get("X-Api-Key"), h.Get("Anthropic-Version"), h.Get("Authorization"))
		}
	}
	assertNoSecrets(t, dir)
}

// An agent session on the Messages API: the mock answers with tool_use blocks, the session sends
// their results back as tool_result blocks, and runs its rounds (0, 1, 2 per turn) without an error.
func TestMessagesAgentSessionOnTheMock(t *testing.T) {
	base, _ := startMessagesMock(t, func(c *mock.Config) { c.ToolCallRate = 1 }, nil)
	session := strings.Replace(agentSession, "max_rounds: 4", "max_rounds: 2", 1)
	res, dir, err := runScenario(t, context.Background(), messagesScenario(base, session,
		"  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 800ms}", ""))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Errors != 0 {
		t.Fatalf("%d errors", res[0].Errors)
	}
	rounds := map[string][]int{}
	calls := 0
	for _, r := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		md, m := r["metadata"].(map[string]any), r["metrics"].(map[string]any)
		conv := md["conversation_id"].(string)
		rounds[conv] = append(rounds[conv], int(integer(md["tool_round"])))
		n := int(integer(m["tool_call_count"].(map[string]any)["value"]))
		calls += n
		if round := int(integer(md["tool_round"])); round < 2 && (n == 0 || m["time_to_first_tool_call"] == nil) {
			t.Fatalf("round %d answered %d tool calls: %v", round, n, m)
		}
		if v, ok := m["tool_call_invalid_arguments"].(map[string]any); ok && integer(v["value"]) != 0 {
			t.Fatalf("tool calls with arguments that are not JSON: %v", m)
		}
	}
	for conv, rs := range rounds {
		for i, r := range rs {
			if r != i%3 {
				t.Fatalf("%s: rounds %v, want 0, 1, 2 per turn", conv, rs)
			}
		}
	}
	if calls == 0 {
		t.Fatal("no tool calls")
	}
}

// Not streamed: the whole message is read, with its usage.
func TestMessagesNotStreamedOnTheMock(t *testing.T) {
	base, _ := startMessagesMock(t, nil, nil)
	text := messagesScenario(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 500ms}", "  stream: false\n")
	text = strings.Replace(text, "slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}", "slo: {error_rate_max: 0.01}", 1)
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if res[0].Errors != 0 || len(recs) == 0 {
		t.Fatalf("%d errors in %d records", res[0].Errors, len(recs))
	}
	for _, r := range recs {
		m := r["metrics"].(map[string]any)
		if m["usage_prompt_tokens"] == nil || m["output_char_count"] == nil || m["time_to_first_token"] != nil {
			t.Fatalf("metrics %v", m)
		}
	}
}

// The mock's injected errors reach the records as the server's: a streamed error event with its
// message, a 429 with Anthropic's error body.
func TestMessagesServerErrorsReachTheRecords(t *testing.T) {
	base, _ := startMessagesMock(t, func(c *mock.Config) { c.ErrorRate = 1 }, nil)
	res, dir, err := runScenario(t, context.Background(), messagesScenario(base, shortSessions,
		"  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 200ms}", ""))
	if !errors.Is(err, ErrStageFailed) {
		t.Fatalf("every request failed, yet: %v", err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if len(recs) == 0 || res[0].Errors != len(recs) {
		t.Fatalf("%d errors in %d records", res[0].Errors, len(recs))
	}
	for _, r := range recs {
		e, _ := r["error"].(map[string]any)
		if e == nil || !strings.Contains(e["message"].(string), "mock: injected internal server error") || !strings.Contains(e["message"].(string), "api_error") {
			t.Fatalf("error %v", r["error"])
		}
	}
}

// A server that answers a Messages request with chat chunks gets error records that say what was
// expected, never records of nothing.
func TestMessagesForeignAnswerIsAnError(t *testing.T) {
	base, _ := startMessagesMock(t, nil, func(r *http.Request) {
		if r.URL.Path == "/v1/messages" {
			r.URL.Path = "/v1/chat/completions" // the chat API's answer to the same messages
		}
	})
	res, dir, err := runScenario(t, context.Background(), messagesScenario(base, shortSessions,
		"  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 200ms}", ""))
	if !errors.Is(err, ErrStageFailed) {
		t.Fatalf("every request failed, yet: %v", err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if len(recs) == 0 || res[0].Errors != len(recs) {
		t.Fatalf("%d errors in %d records", res[0].Errors, len(recs))
	}
	for _, r := range recs {
		e, _ := r["error"].(map[string]any)
		if e == nil || !strings.Contains(e["message"].(string), "an unexpected event in the stream: expected the Anthropic Messages API's events") {
			t.Fatalf("error %v", r["error"])
		}
	}
}
