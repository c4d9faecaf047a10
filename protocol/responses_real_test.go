package protocol

import (
	"bytes"
	"errors"
	"github.com/plload/plload/llamaserver"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/plload/plload/sse"
	"github.com/plload/plload/workload"
)

// The real-server tier (PLLOAD_REAL_SERVER=require, .ci/llama-server.sh): a real llama-server
// answers plload's Responses body, streamed and not, and plload's reader takes its answer whole: no
// error, response.completed with the response's id, and a prompt count that agrees with the chat
// template's (Qwen3's: 3 tokens a request and 5 a message beside the texts; input_tokens counts the
// cached ones). A conversation with the assistant's earlier answer as an input item is taken too;
// previous_response_id (history server) is refused with llama.cpp's own message, which is what a
// run's record says (docs/apis.md).
func TestRealServerResponses(t *testing.T) {
	s, history, want := realServerTurn(t)
	api, _ := For("responses")
	post := func(streamed bool, history []Message, history2 string, prev Previous) *http.Response {
		t.Helper()
		sc := target("responses")
		sc.Target.History = history2
		if !streamed {
			sc.Target.Stream = new(bool)
		}
		b, err := NewBody(api, sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, s.URL+api.Path(), bytes.NewReader(b.BuildAfter(nil, "", history, prev, 5, false)))
		req.Header.Set("Content-Type", "application/json")
		api.SetHeaders(req.Header, "")
		resp, err := llamaserver.FreshConnections.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ok := func(resp *http.Response) *http.Response {
		t.Helper()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
		}
		return resp
	}

	resp := ok(post(true, history, workload.HistoryClient, Previous{}))
	rd := api.NewStreamReader(resp.Body, 0)
	var usage *sse.Usage
	var answer strings.Builder
	tokens, done, id := 0, false, ""
	for !done {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if ev.Err != nil {
			t.Fatalf("the server's error: %v", ev.Err)
		}
		if ev.IsToken() {
			tokens++
			answer.WriteString(ev.Content)
		}
		if ev.Usage != nil {
			usage = ev.Usage
		}
		if ev.ResponseID != "" {
			id = ev.ResponseID
		}
		done = ev.Done
	}
	rd.Release()
	resp.Body.Close()
	if !done || tokens == 0 || usage == nil || id == "" {
		t.Fatalf("response.completed %v, %d token events, usage %+v, id %q", done, tokens, usage, id)
	}
	if usage.PromptTokens != want || usage.CompletionTokens != 5 || !usage.HasCached {
		t.Errorf("streamed: usage %+v; want %d prompt tokens, 5 output, a cached count", usage, want)
	}

	// Not streamed, the same prompt again: the server's prefix cache holds it, and input_tokens
	// still counts the whole prompt.
	resp = ok(post(false, history, workload.HistoryClient, Previous{}))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c, err := api.ParseAnswer(body)
	if err != nil || c.Err != nil || c.Usage == nil || c.ResponseID == "" {
		t.Fatalf("not streamed: %v %v %s", err, c.Err, body)
	}
	if c.Usage.PromptTokens != want || c.Usage.CompletionTokens != 5 || !c.Usage.HasCached || c.Usage.CachedTokens == 0 {
		t.Errorf("not streamed: usage %+v; want %d prompt tokens, 5 output, a cache hit; body %s", c.Usage, want, body)
	}

	// The next turn, client-held: the answer goes back as an assistant item, and it is taken.
	next := append(append([]Message(nil), history...), NewMessage("assistant", answer.String(), 0), NewMessage("user", "And for two weeks?", 0))
	resp = ok(post(false, next, workload.HistoryClient, Previous{}))
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if c, err := api.ParseAnswer(body); err != nil || c.Err != nil || c.Usage == nil || c.Usage.PromptTokens <= want {
		t.Errorf("the second turn: %v %v %s", err, c.Err, body)
	}

	// Server-held: llama.cpp refuses previous_response_id, in its own words.
	resp = post(true, next, workload.HistoryServer, Previous{ID: id, Held: 3})
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "previous_response_id") {
		t.Errorf("previous_response_id: HTTP %d %s; want llama.cpp's 400 naming previous_response_id", resp.StatusCode, body)
	}
}
