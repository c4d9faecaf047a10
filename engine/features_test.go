package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// scriptedAgent is a loopback chat server that scripts tool calls: a request whose last message is
// the user's gets two tool calls, the first round's results one more, and the second round's results
// a content answer. It streams each call's arguments in pieces, by index, as vLLM's parsers do, and
// keeps every request body by X-Correlation-ID.
type scriptedAgent struct {
	mu       sync.Mutex
	requests map[string][]map[string]any
	calls    map[string][][]map[string]any // the tool_calls it streamed, per request, by session
}

func startScriptedAgent(t *testing.T) (string, *scriptedAgent) {
	t.Helper()
	a := &scriptedAgent{requests: map[string][]map[string]any{}, calls: map[string][][]map[string]any{}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		msgs, _ := body["messages"].([]any)
		rounds := 0 // tool-result rounds since the last user message
		for i := len(msgs) - 1; i >= 0; i-- {
			m := msgs[i].(map[string]any)
			if m["role"] == "user" {
				break
			}
			if m["role"] == "assistant" {
				rounds++
			}
		}
		id := r.Header.Get("X-Correlation-ID")
		a.mu.Lock()
		n := len(a.requests[id])
		a.requests[id] = append(a.requests[id], body)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		flusher := w.(http.Flusher)
		send := func(chunk string) {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			flusher.Flush()
		}
		var streamed []map[string]any
		if rounds < 2 {
			calls := 2 - rounds
			for c := range calls {
				callID := fmt.Sprintf("call_%s_%d_%d", id[:8], n, c)
				name := fmt.Sprintf("tool_%d", c)
				args := fmt.Sprintf(`{"query": "q%d \"quoted\" é", "limit": %d}`, n, c+1)
				send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}}]}`, c, callID, name))
				for piece := range slices.Chunk([]byte(args), 7) {
					p, _ := json.Marshal(string(piece))
					send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}}]}`, c, p))
				}
				streamed = append(streamed, map[string]any{"id": callID, "type": "function", "function": map[string]any{"name": name, "arguments": args}})
			}
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}}`)
		} else {
			for _, word := range []string{"All", " done", "."} {
				send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q}}]}`, word))
			}
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":3,"total_tokens":53}}`)
		}
		io.WriteString(w, "data: [DONE]\n\n")
		a.mu.Lock()
		a.calls[id] = append(a.calls[id], streamed)
		a.mu.Unlock()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: handler}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/v1", a
}

const agentSession = `  turns: {dist: constant, value: 2}
  user_input_tokens: {min: 5, max: 10}
  max_output_tokens: {min: 4, max: 8}
  think_time: {min: 10ms, max: 20ms}
  tools: {count: 3, schema_tokens: {min: 20, max: 40}, result_tokens: {min: 10, max: 30}, max_rounds: 4}`

// TestAgentSessionSendsTheToolRounds: against a server that scripts two tool rounds per user turn,
// each session sends, request by request, exactly docs/scenario.md's sequence — the assistant message with
// its tool_calls as streamed (ids, names, arguments byte for byte), one tool message per call with
// its tool_call_id, the next request at once, and after the content answer the next user turn —
// every request carrying the tools; records carry tool_round 0, 1, 2 per turn and the calls.
func TestAgentSessionSendsTheToolRounds(t *testing.T) {
	base, agent := startScriptedAgent(t)
	res, dir, err := runScenario(t, context.Background(), scenarioYAML(base, agentSession,
		"  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 1s}"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Errors != 0 {
		t.Fatalf("%d errors", res[0].Errors)
	}
	agent.mu.Lock()
	defer agent.mu.Unlock()
	checked := 0
	for id, reqs := range agent.requests {
		tools := reqs[0]["tools"]
		for i, body := range reqs {
			if tools == nil || !cmp.Equal(body["tools"], tools) || body["tool_choice"] != "auto" {
				t.Fatalf("session %s request %d: tools %v, tool_choice %v; every request carries the same tools", id, i, body["tools"], body["tool_choice"])
			}
		}
		// Within a turn: request i+1's messages are request i's, the assistant's tool_calls as
		// streamed, and one tool result per call.
		for i := 0; i+1 < len(reqs); i++ {
			prev, next := reqs[i]["messages"].([]any), reqs[i+1]["messages"].([]any)
			streamed := agent.calls[id][i]
			if !cmp.Equal(next[:len(prev)], prev) {
				t.Fatalf("session %s request %d does not resend request %d's history", id, i+1, i)
			}
			added := next[len(prev):]
			if len(streamed) == 0 { // a content answer: the assistant's text, then the next user turn
				if len(added) != 2 || added[0].(map[string]any)["role"] != "assistant" || added[0].(map[string]any)["content"] != "All done." || added[1].(map[string]any)["role"] != "user" {
					t.Fatalf("session %s after the content answer sent %v", id, added)
				}
				continue
			}
			asst := added[0].(map[string]any)
			var want []any
			for _, c := range streamed {
				want = append(want, c)
			}
			if asst["role"] != "assistant" || !cmp.Equal(asst["tool_calls"], want) {
				t.Fatalf("session %s request %d: the assistant message %v, want the streamed calls %v", id, i+1, asst, want)
			}
			if len(added) != 1+len(streamed) {
				t.Fatalf("session %s request %d added %d messages for %d calls", id, i+1, len(added), len(streamed))
			}
			for c, m := range added[1:] {
				tm := m.(map[string]any)
				if tm["role"] != "tool" || tm["tool_call_id"] != streamed[c]["id"] || tm["content"] == "" {
					t.Fatalf("session %s request %d: tool message %d is %v", id, i+1, c, tm)
				}
			}
			checked++
		}
	}
	if checked < 4 {
		t.Fatalf("only %d tool rounds checked", checked)
	}
	rounds := map[string][]int{}
	for _, r := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		md, m := r["metadata"].(map[string]any), r["metrics"].(map[string]any)
		round := int(integer(md["tool_round"]))
		rounds[md["conversation_id"].(string)] = append(rounds[md["conversation_id"].(string)], round)
		calls := int(integer(m["tool_call_count"].(map[string]any)["value"]))
		if want := []int{2, 1, 0}[round]; calls != want {
			t.Fatalf("a record of round %d has %d tool calls, want %d", round, calls, want)
		}
		if round < 2 && m["time_to_first_tool_call"] == nil {
			t.Fatalf("a tool-call answer without time_to_first_tool_call: %v", m)
		}
	}
	for conv, rs := range rounds {
		for i, r := range rs {
			if r != i%3 {
				t.Fatalf("session %s: tool rounds %v, want 0, 1, 2 per turn", conv, rs)
			}
		}
	}
}

// TestMaxRoundsEndsTheTurnOnItsResults: with max_rounds 1 the second tool-call answer is not
// followed by a request: its calls and results stay in the history and the next user turn follows.
func TestMaxRoundsEndsTheTurnOnItsResults(t *testing.T) {
	base, agent := startScriptedAgent(t)
	session := strings.Replace(agentSession, "max_rounds: 4", "max_rounds: 1", 1)
	if _, _, err := runScenario(t, context.Background(), scenarioYAML(base, session, "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 600ms}")); err != nil {
		t.Fatal(err)
	}
	agent.mu.Lock()
	defer agent.mu.Unlock()
	for id, reqs := range agent.requests {
		if len(reqs) >= 3 {
			third := reqs[2]["messages"].([]any)
			last := third[len(third)-1].(map[string]any)
			before := third[len(third)-2].(map[string]any)
			if last["role"] != "user" || before["role"] != "tool" {
				t.Fatalf("session %s: the next turn after max_rounds ends on %v, %v", id, before["role"], last["role"])
			}
			return
		}
	}
	t.Fatal("no session reached its second turn")
}

// TestNonStreamedHasNoTTFT: target.stream false asks for one JSON answer; its record has the
// request latency, usage and stream: false, and no TTFT, TTFO or ITL (absent, never 0).
func TestNonStreamedHasNoTTFT(t *testing.T) {
	base, cap := startMock(t, nil)
	text := strings.Replace(scenarioYAML(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 500ms}"), "  model: m\n", "  model: m\n  stream: false\n", 1)
	text = strings.Replace(text, "slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}", "slo: {error_rate_max: 0.01}", 1)
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if len(recs) == 0 || res[0].Errors != 0 {
		t.Fatalf("%d records, %d errors", len(recs), res[0].Errors)
	}
	for _, r := range recs {
		md, m := r["metadata"].(map[string]any), r["metrics"].(map[string]any)
		for _, absent := range []string{"time_to_first_token", "time_to_first_output_token", "inter_chunk_latency", "inter_token_latency", "time_to_second_token"} {
			if _, ok := m[absent]; ok {
				t.Fatalf("a non-streamed record has %s: %v", absent, m)
			}
		}
		if md["stream"] != false || m["request_latency"] == nil || m["usage_completion_tokens"] == nil || m["output_sequence_length"] == nil {
			t.Fatalf("record %v", r)
		}
	}
	cap.mu.Lock()
	defer cap.mu.Unlock()
	for _, reqs := range cap.requests {
		for _, s := range reqs {
			if s.body["stream"] != false || s.body["stream_options"] != nil {
				t.Fatalf("a request of a non-streamed run: stream %v, stream_options %v", s.body["stream"], s.body["stream_options"])
			}
		}
	}
}

// TestBatchSendsExactlyN: load.mode batch with requests: 25 sends exactly 25 requests, at most
// max_in_flight at once, and says the count ended the stage.
func TestBatchSendsExactlyN(t *testing.T) {
	base, _ := startMock(t, func(c *mock.Config) { c.TTFT = 20 * time.Millisecond })
	res, dir, err := runScenario(t, context.Background(), scenarioYAML(base, shortSessions, "  mode: batch\n  max_in_flight: 4\n  stages:\n    - {requests: 25}"))
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if len(recs) != 25 || res[0].Issued != 25 || !res[0].EndedByCount || res[0].LastEndNs == 0 {
		t.Fatalf("%d records, %d issued, ended by count %v, last end %d", len(recs), res[0].Issued, res[0].EndedByCount, res[0].LastEndNs)
	}
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, r := range recs {
		md := r["metadata"].(map[string]any)
		edges = append(edges, edge{integer(md["request_start_ns"]), 1}, edge{integer(md["request_end_ns"]), -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.delta - b.delta
	})
	open, most := 0, 0
	for _, e := range edges {
		open += e.delta
		most = max(most, open)
	}
	if most > 4 || most < 2 {
		t.Fatalf("%d requests in flight at most, want ≤ 4 (and more than one)", most)
	}
}

// TestRequestsEndAConcurrencyStage: requests: N ends a concurrency stage of a long duration at N.
func TestRequestsEndAConcurrencyStage(t *testing.T) {
	base, _ := startMock(t, nil)
	start := time.Now()
	res, _, err := runScenario(t, context.Background(), scenarioYAML(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 3, duration: 60s, requests: 12}"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Issued != 12 || !res[0].EndedByCount || time.Since(start) > 20*time.Second {
		t.Fatalf("%d issued, ended by count %v, after %v", res[0].Issued, res[0].EndedByCount, time.Since(start))
	}
}

// TestModelMixOnTheMock: a 3:1 mix over 320 single-turn sessions (a batch) is realized within 5
// points, every request body names its record's model, and preflight refuses a model the target
// does not list, naming it.
func TestModelMixOnTheMock(t *testing.T) {
	base, cap := startMock(t, func(c *mock.Config) { c.Models = []string{"base-model", "sql-lora"} })
	text := strings.Replace(scenarioYAML(base, "  turns: {dist: constant, value: 1}\n  user_input_tokens: {min: 5, max: 10}\n  max_output_tokens: {min: 2, max: 4}\n  think_time: {min: 1ms, max: 2ms}",
		"  mode: batch\n  max_in_flight: 16\n  stages:\n    - {requests: 320}"), "  model: m\n",
		"  model: base-model\n  models: [{name: base-model, weight: 3}, {name: sql-lora, weight: 1}]\n", 1)
	_, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	byModel := map[string]int{}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	for _, r := range recs {
		byModel[r["metadata"].(map[string]any)["model"].(string)]++
	}
	if len(recs) != 320 || len(byModel) != 2 {
		t.Fatalf("%d records by model %v", len(recs), byModel)
	}
	if share := float64(byModel["base-model"]) / 320; share < 0.70 || share > 0.80 {
		t.Fatalf("base-model got %.3f of the sessions, want 0.75 ± 0.05 (%v)", share, byModel)
	}
	cap.mu.Lock()
	for _, reqs := range cap.requests {
		for _, s := range reqs {
			if m := s.body["model"]; m != "base-model" && m != "sql-lora" {
				t.Fatalf("a request asked for %v", m)
			}
		}
	}
	cap.mu.Unlock()
	sc, w := parseForPreflight(t, strings.Replace(text, "{name: sql-lora, weight: 1}", "{name: chat-lora, weight: 1}", 1))
	_, err = Preflight(context.Background(), Config{Scenario: sc, Workload: w, Getenv: testEnv})
	if err == nil || !strings.Contains(err.Error(), `"chat-lora"`) || !strings.Contains(err.Error(), "sql-lora") || !strings.Contains(err.Error(), "preflight: GET ") {
		t.Fatalf("preflight with a model the mock does not serve: %v", err)
	}
}

func parseForPreflight(t *testing.T, text string) (*workload.Scenario, *workload.Workload) {
	t.Helper()
	sc, issues := workload.Parse("t.yaml", []byte(text), workload.LoadOptions{ForRun: true, Getenv: testEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	return sc, w
}

// TestStructuredShareOnTheMock: with the mock answering invalid JSON to a known share (0.25), the
// records' structured_valid says so within sampling error, and every request carries the format.
func TestStructuredShareOnTheMock(t *testing.T) {
	base, cap := startMock(t, func(c *mock.Config) { c.JSONValidRate = 0.75 })
	session := "  turns: {dist: constant, value: 1}\n  user_input_tokens: {min: 5, max: 10}\n  max_output_tokens: {dist: constant, value: 200}\n" +
		"  response_format: {type: json_schema, schema: {type: object, properties: {answer: {type: string}}, required: [answer]}}"
	_, dir, err := runScenario(t, context.Background(), scenarioYAML(base, session, "  mode: batch\n  max_in_flight: 16\n  stages:\n    - {requests: 300}"))
	if err != nil {
		t.Fatal(err)
	}
	valid, judged := 0, 0
	for _, r := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		if v, ok := r["metadata"].(map[string]any)["structured_valid"].(bool); ok {
			judged++
			if v {
				valid++
			}
		}
	}
	if judged != 300 {
		t.Fatalf("%d of 300 answers judged", judged)
	}
	// 300 draws at 0.75: standard error 0.025; ±0.08 is over 3 of them.
	if share := float64(valid) / 300; share < 0.67 || share > 0.83 {
		t.Fatalf("valid share %.3f, the mock's 0.75", share)
	}
	cap.mu.Lock()
	defer cap.mu.Unlock()
	for _, reqs := range cap.requests {
		for _, s := range reqs {
			rf, _ := s.body["response_format"].(map[string]any)
			if rf["type"] != "json_schema" {
				t.Fatalf("a request without the response format: %v", s.body["response_format"])
			}
		}
	}
}

// TestAgentSessionOnTheMock: on the bundled mock answering every request with tools by tool calls
// (tool_call_rate 1) and max_rounds 2, each user turn sends rounds 0, 1, 2 and then the next turn;
// every request after a round carries the assistant's tool_calls and one tool message per call id.
func TestAgentSessionOnTheMock(t *testing.T) {
	base, cap := startMock(t, func(c *mock.Config) { c.ToolCallRate = 1 })
	session := strings.Replace(agentSession, "max_rounds: 4", "max_rounds: 2", 1)
	res, dir, err := runScenario(t, context.Background(), scenarioYAML(base, session, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 800ms}"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Errors != 0 {
		t.Fatalf("%d errors", res[0].Errors)
	}
	byConv := map[string][]int{}
	for _, r := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		md := r["metadata"].(map[string]any)
		byConv[md["conversation_id"].(string)] = append(byConv[md["conversation_id"].(string)], int(integer(md["tool_round"])))
	}
	for conv, rounds := range byConv {
		for i, r := range rounds {
			if r != i%3 {
				t.Fatalf("%s: rounds %v, want 0, 1, 2 per turn", conv, rounds)
			}
		}
	}
	cap.mu.Lock()
	defer cap.mu.Unlock()
	checked := 0
	for _, reqs := range cap.requests {
		for _, s := range reqs {
			msgs := s.body["messages"].([]any)
			var pending []string // call ids asked and not yet answered
			for _, m := range msgs {
				mm := m.(map[string]any)
				switch mm["role"] {
				case "assistant":
					calls, _ := mm["tool_calls"].([]any)
					for _, c := range calls {
						pending = append(pending, c.(map[string]any)["id"].(string))
					}
				case "tool":
					if len(pending) == 0 || mm["tool_call_id"] != pending[0] {
						t.Fatalf("a tool message for %v, the calls pending %v", mm["tool_call_id"], pending)
					}
					pending = pending[1:]
					checked++
				}
			}
			if len(pending) != 0 {
				t.Fatalf("calls without results: %v", pending)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no tool message was sent")
	}
}

// TestRequestsEndARequestRateStage: a request_rate stage with requests and no duration sends its
// N requests on the schedule and ends; its window runs to the last answer.
func TestRequestsEndARequestRateStage(t *testing.T) {
	base, _ := startMock(t, nil)
	res, _, err := runScenario(t, context.Background(), requestRateYAML(base, "  mode: request_rate\n  stages:\n    - {rate: 200, requests: 40}"))
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Issued != 40 || !r.EndedByCount || r.LastEndNs <= r.T0Ns {
		t.Fatalf("%d issued, ended by count %v, t0 %d, last end %d", r.Issued, r.EndedByCount, r.T0Ns, r.LastEndNs)
	}
}
