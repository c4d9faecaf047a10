package protocol

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/plload/plload/llamaserver"
	"github.com/plload/plload/sse"
	"github.com/plload/plload/tokenizer"
)

// The real-server tier (PLLOAD_REAL_SERVER=require, .ci/llama-server.sh): a real llama-server
// answers plload's Messages body, streamed and not, and plload's reader takes its answer whole: no
// error, the end event, and a prompt count that agrees with the chat template's (Qwen3's: 3 tokens
// a request and 5 a message beside the texts, as TestRealServerCountsAsQwen3 finds for chat). The
// body is protocol's own, so what is checked is what a run sends.
func TestRealServerMessages(t *testing.T) {
	s, history, want := realServerTurn(t)
	api, _ := For("messages")
	post := func(streamed bool) *http.Response {
		t.Helper()
		sc := target("messages")
		if !streamed {
			sc.Target.Stream = new(bool)
		}
		b, err := NewBody(api, sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, s.URL+api.Path(), bytes.NewReader(b.Build(nil, "", history, 5, false)))
		req.Header.Set("Content-Type", "application/json")
		api.SetHeaders(req.Header, "")
		resp, err := llamaserver.FreshConnections.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
		}
		return resp
	}

	resp := post(true)
	rd := api.NewStreamReader(resp.Body, 0)
	var usage *sse.Usage
	tokens, done := 0, false
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
		}
		if ev.Usage != nil {
			usage = ev.Usage
		}
		done = ev.Done
	}
	rd.Release()
	resp.Body.Close()
	if !done || tokens == 0 || usage == nil {
		t.Fatalf("message_stop %v, %d token events, usage %+v", done, tokens, usage)
	}
	if usage.PromptTokens != want || usage.CompletionTokens != 5 {
		t.Errorf("streamed: prompt %d tokens (want %d), output %d (want 5)", usage.PromptTokens, want, usage.CompletionTokens)
	}

	// Not streamed, the same prompt again: the server's prefix cache holds it, and the whole
	// prompt is still input plus cache reads.
	resp = post(false)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c, err := api.ParseAnswer(body)
	if err != nil || c.Err != nil || c.Usage == nil {
		t.Fatalf("not streamed: %v %v %s", err, c.Err, body)
	}
	if c.Usage.PromptTokens != want || c.Usage.CompletionTokens != 5 || !c.Usage.HasCached || c.Usage.CachedTokens == 0 {
		t.Errorf("not streamed: usage %+v; want %d prompt tokens, 5 output, a cache hit; body %s", c.Usage, want, body)
	}
}

// realServerTurn is a real llama-server of one slot, a first turn (a system prompt and a user
// message), and the prompt tokens Qwen3's chat template makes of it: the texts, 3 tokens a request
// and 5 a message.
func realServerTurn(t *testing.T) (*llamaserver.Server, []Message, int) {
	t.Helper()
	s := llamaserver.Require(t, llamaserver.ModelOptions{}, llamaserver.Options{Slots: 1, Context: 2048})
	path, err := llamaserver.TokenizerJSON()
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	system, user := "You are a patient assistant for a bakery.", "Which of your breads keep best for a week?"
	history := []Message{NewMessage("system", system, 0), NewMessage("user", user, 0)}
	return s, history, tk.Count(system) + tk.Count(user) + 3 + 5*2
}
