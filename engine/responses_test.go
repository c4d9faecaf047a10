package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plload/plload/mock"
)

// responsesScenario is scenarioYAML on the Responses API with history mode history, with target
// lines added.
func responsesScenario(base, session, load, history, targetLines string) string {
	text := scenarioYAML(base, session, load)
	return strings.Replace(text, `  headers: {X-Api-Key: "${PLLOAD_TEST_SECRET}", X-Team: blue}`+"\n",
		"  endpoint: responses\n  history: "+history+"\n"+targetLines, 1)
}

// responsesBody is what a test reads of a Responses request the mock got.
type responsesBody struct {
	size     int
	store    *bool
	previous string
	input    []map[string]any
	corr     string
}

// startResponsesMock serves the real mock on loopback, keeping each /v1/responses request's body;
// route rewrites a request's path first (nil: none).
func startResponsesMock(t *testing.T, mutate func(*mock.Config), route func(*http.Request)) (string, func() []responsesBody) {
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
	var bodies []responsesBody
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/responses" {
			raw, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(raw))
			var b struct {
				Store    *bool            `json:"store"`
				Previous string           `json:"previous_response_id"`
				Input    []map[string]any `json:"input"`
			}
			_ = json.Unmarshal(raw, &b)
			mu.Lock()
			bodies = append(bodies, responsesBody{size: len(raw), store: b.Store, previous: b.Previous, input: b.Input, corr: r.Header.Get("X-Correlation-ID")})
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
	return "http://" + ln.Addr().String() + "/v1", func() []responsesBody {
		mu.Lock()
		defer mu.Unlock()
		return append([]responsesBody(nil), bodies...)
	}
}

// bytesByTurn is the records' mean request_bytes by turn index, and how many turns each session
// played (its highest turn_index + 1), by conversation.
func bytesByTurn(t *testing.T, recs []map[string]any) (map[int]float64, map[string]int) {
	t.Helper()
	sum, n, turns := map[int]float64{}, map[int]int{}, map[string]int{}
	for _, r := range recs {
		md, m := r["metadata"].(map[string]any), r["metrics"].(map[string]any)
		v, ok := m["request_bytes"].(map[string]any)
		if !ok || float(v["value"]) <= 0 {
			t.Fatalf("a record without request_bytes: %v", m)
		}
		k := int(integer(md["turn_index"]))
		sum[k] += float(v["value"])
		n[k]++
		conv := md["conversation_id"].(string)
		turns[conv] = max(turns[conv], k+1)
	}
	for k := range sum {
		sum[k] /= float64(n[k])
	}
	return sum, turns
}

// The same scenario with the conversation held by the client and by the server, against one mock:
// no errors either way; every record has the server's usage with cached tokens; server-held, the
// first turn is stored without previous_response_id and every later one names the answer before
// it and sends only the new user message, so turns ≥ 2 send fewer bytes, while the sessions play
// the same turns and the mock's prefix cache, over the whole reconstructed conversation, hits.
func TestResponsesHistoryModesOnTheMock(t *testing.T) {
	base, bodies := startResponsesMock(t, nil, nil)
	load := "  mode: concurrency\n  stages:\n    - {concurrency: 3, duration: 800ms}"
	type run struct {
		bytes     map[int]float64
		turns     map[string]int
		completed map[string]int // planned turns of the sessions that completed
	}
	runs := map[string]run{}
	for _, history := range []string{"client", "server"} {
		before := len(bodies())
		res, dir, err := runScenario(t, context.Background(), responsesScenario(base, shortSessions, load, history, ""))
		if err != nil {
			t.Fatal(err)
		}
		recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
		if res[0].Errors != 0 || len(recs) < 6 {
			t.Fatalf("%s: %d errors in %d records", history, res[0].Errors, len(recs))
		}
		cached := 0
		for _, r := range recs {
			m := r["metrics"].(map[string]any)
			for _, k := range []string{"usage_prompt_tokens", "usage_completion_tokens", "time_to_first_token", "usage_prompt_cache_read_tokens"} {
				if _, ok := m[k].(map[string]any); !ok {
					t.Fatalf("%s: a record without %s: %v", history, k, m)
				}
			}
			if integer(m["usage_prompt_cache_read_tokens"].(map[string]any)["value"]) > 0 {
				cached++
			}
		}
		if cached == 0 {
			t.Errorf("%s: no record had cached tokens", history)
		}
		b, turns := bytesByTurn(t, recs)
		completed := map[string]int{}
		for _, sr := range readRecords(t, filepath.Join(dir, "stage_01", "sessions.jsonl")) {
			if sr["outcome"] == "completed" {
				completed[sr["conversation_id"].(string)] = int(integer(sr["planned_turns"]))
			}
		}
		runs[history] = run{b, turns, completed}
		sent := bodies()[before:]
		if len(sent) != len(recs) {
			t.Fatalf("%s: %d requests for %d records", history, len(sent), len(recs))
		}
		seen := map[string]int{}
		for _, s := range sent {
			k := seen[s.corr]
			seen[s.corr]++
			switch {
			case history == "client" && (s.store == nil || *s.store || s.previous != ""):
				t.Fatalf("client history: store %v, previous_response_id %q", s.store, s.previous)
			case history == "server" && (s.store == nil || !*s.store):
				t.Fatalf("server history: store %v", s.store)
			case history == "server" && k == 0 && s.previous != "":
				t.Fatalf("a first turn named previous_response_id %q", s.previous)
			case history == "server" && k > 0 && (!strings.HasPrefix(s.previous, "resp_") || len(s.input) != 1 || s.input[0]["role"] != "user"):
				t.Fatalf("server history, request %d of a session: previous_response_id %q, input %v", k, s.previous, s.input)
			case history == "client" && len(s.input) != 2*k+1:
				t.Fatalf("client history, request %d of a session: %d input items", k, len(s.input))
			}
		}
	}
	client, server := runs["client"], runs["server"]
	for k, cb := range client.bytes {
		sb, ok := server.bytes[k]
		if !ok {
			continue
		}
		if k >= 1 && sb >= cb {
			t.Errorf("turn %d: server-held history sent %.0f bytes a request, client-held %.0f", k+1, sb, cb)
		}
	}
	if len(server.bytes) < 2 {
		t.Fatalf("the server run played turns %v", server.bytes)
	}
	// The stage's end may cut either run's last sessions short; a session both ran whole played
	// its planned turns both ways.
	both := 0
	for conv, planned := range client.completed {
		if p, ok := server.completed[conv]; ok {
			both++
			if p != planned || client.turns[conv] != planned || server.turns[conv] != planned {
				t.Errorf("%s: planned %d/%d turns, played %d client-held, %d server-held", conv, planned, p, client.turns[conv], server.turns[conv])
			}
		}
	}
	if both == 0 {
		t.Error("no session completed in both runs")
	}
}

// An agent session with the conversation held by the server: the mock answers with function
// calls, and each tool round sends only the function_call_output items of its calls, naming the
// answer that asked for them; rounds 0, 1, 2 per turn, no errors, streamed and not.
func TestResponsesAgentSessionServerHistory(t *testing.T) {
	for _, streamed := range []bool{true, false} {
		base, bodies := startResponsesMock(t, func(c *mock.Config) { c.ToolCallRate = 1 }, nil)
		session := strings.Replace(agentSession, "max_rounds: 4", "max_rounds: 2", 1)
		text := responsesScenario(base, session, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 800ms}", "server", "")
		if !streamed {
			text = strings.Replace(text, "  history: server\n", "  history: server\n  stream: false\n", 1)
			text = strings.Replace(text, "slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}", "slo: {error_rate_max: 0.01}", 1)
		}
		res, dir, err := runScenario(t, context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
		if res[0].Errors != 0 || len(recs) < 3 {
			t.Fatalf("streamed %v: %d errors in %d records", streamed, res[0].Errors, len(recs))
		}
		calls := 0
		for _, r := range recs {
			md, m := r["metadata"].(map[string]any), r["metrics"].(map[string]any)
			n := int(integer(m["tool_call_count"].(map[string]any)["value"]))
			calls += n
			if round := int(integer(md["tool_round"])); round < 2 && n == 0 {
				t.Fatalf("streamed %v: round %d answered no tool calls: %v", streamed, round, m)
			}
		}
		if calls == 0 {
			t.Fatal("no tool calls")
		}
		outputs := 0
		for _, b := range bodies() {
			if b.previous == "" {
				continue
			}
			// What is new since the answer named: its calls' results (function_call_output items),
			// then, when the turn ended on them (max_rounds) or after a text answer, the next user
			// message.
			k := 0
			for k < len(b.input) && b.input[k]["type"] == "function_call_output" {
				k++
			}
			if k > 0 {
				outputs++
			}
			if rest := b.input[k:]; len(rest) > 1 || len(rest) == 1 && rest[0]["role"] != "user" || len(b.input) == 0 {
				t.Fatalf("streamed %v: a request after a stored answer sent %v", streamed, b.input)
			}
		}
		if outputs == 0 {
			t.Fatalf("streamed %v: no tool round sent its function_call_output items alone", streamed)
		}
	}
}

// The mock's injected errors reach the records as the server's: streamed, response.failed with its
// message; a server that forgot the previous response answers 400 previous_response_not_found,
// and the record says so.
func TestResponsesServerErrorsReachTheRecords(t *testing.T) {
	base, _ := startResponsesMock(t, func(c *mock.Config) { c.ErrorRate = 1 }, nil)
	res, dir, err := runScenario(t, context.Background(), responsesScenario(base, shortSessions,
		"  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 200ms}", "client", ""))
	if !errors.Is(err, ErrStageFailed) {
		t.Fatalf("every request failed, yet: %v", err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if len(recs) == 0 || res[0].Errors != len(recs) {
		t.Fatalf("%d errors in %d records", res[0].Errors, len(recs))
	}
	for _, r := range recs {
		e, _ := r["error"].(map[string]any)
		if e == nil || !strings.Contains(e["message"].(string), "mock: injected internal server error") {
			t.Fatalf("error %v", r["error"])
		}
	}

	// Every later turn names a response the server does not hold: a mock started afresh for each
	// request forgets them all.
	var fresh http.Handler
	restart := func() {
		srv, err := mock.New(func() mock.Config { c := mock.DefaultConfig(); c.TTFT, c.TPS = time.Millisecond, 1000; return c }())
		if err != nil {
			t.Fatal(err)
		}
		fresh = srv
	}
	restart()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := fresh
		restart()
		mu.Unlock()
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	defer hs.Close()
	res, dir, err = runScenario(t, context.Background(), responsesScenario("http://"+ln.Addr().String()+"/v1", shortSessions,
		"  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 300ms}", "server", ""))
	if err != nil && !errors.Is(err, ErrStageFailed) {
		t.Fatal(err)
	}
	notFound := 0
	for _, r := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		md := r["metadata"].(map[string]any)
		e, _ := r["error"].(map[string]any)
		switch {
		case integer(md["turn_index"]) == 0 && e != nil:
			t.Fatalf("a first turn failed: %v", e)
		case integer(md["turn_index"]) > 0 && (e == nil || !strings.Contains(e["message"].(string), "previous_response_not_found")):
			t.Fatalf("a later turn with a forgotten previous response: %v", r["error"])
		case e != nil:
			notFound++
		}
	}
	if notFound == 0 || res[0].Errors != notFound {
		t.Fatalf("%d records named previous_response_not_found, %d errors", notFound, res[0].Errors)
	}
}

// A server that answers a Responses request with chat chunks, or a chat completion, gets error
// records that say what was expected, never records of nothing.
func TestResponsesForeignAnswerIsAnError(t *testing.T) {
	for _, streamed := range []bool{true, false} {
		chat := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":%t}`, streamed)
		base, _ := startResponsesMock(t, nil, func(r *http.Request) {
			if r.URL.Path == "/v1/responses" { // the chat API's answer instead
				r.URL.Path = "/v1/chat/completions"
				r.Body, r.ContentLength = io.NopCloser(strings.NewReader(chat)), int64(len(chat))
			}
		})
		text := responsesScenario(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 200ms}", "client", "")
		want := "expected the OpenAI Responses API's events"
		if !streamed {
			text = strings.Replace(text, "  history: client\n", "  history: client\n  stream: false\n", 1)
			want = `response is not an OpenAI Responses answer (expected "object": "response"`
			text = strings.Replace(text, "slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}", "slo: {error_rate_max: 0.01}", 1)
		}
		_, dir, err := runScenario(t, context.Background(), text)
		if !errors.Is(err, ErrStageFailed) {
			t.Fatalf("streamed %v: every request failed, yet: %v", streamed, err)
		}
		recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
		if len(recs) == 0 {
			t.Fatal("no records")
		}
		for _, r := range recs {
			e, _ := r["error"].(map[string]any)
			if e == nil || !strings.Contains(e["message"].(string), want) {
				t.Fatalf("streamed %v: error %v; want one saying %q", streamed, r["error"], want)
			}
		}
	}
}
