package protocol

import (
	"strings"
	"testing"

	"github.com/plload/plload/workload"
)

// benchHistory is a 20-turn chat: a 2 KB system prompt, then 1 KB user and assistant messages.
func benchHistory() []Message {
	h := []Message{NewMessage("system", strings.Repeat("You are a helpful assistant. ", 70), 400)}
	for i := range 40 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		h = append(h, NewMessage(role, strings.Repeat("Some words of the turn, \"quoted\". ", 30), 200))
	}
	return h
}

func benchBody(b *testing.B, endpoint string) {
	sc := &workload.Scenario{Target: workload.Target{Model: "m", Endpoint: endpoint, MaxTokensField: "max_tokens",
		ExtraBody: map[string]any{"temperature": 0.7}}}
	api, err := For(endpoint)
	if err != nil {
		b.Fatal(err)
	}
	body, err := NewBody(api, sc, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := benchHistory()
	b.ReportAllocs()
	for b.Loop() {
		_ = body.Build(nil, "", h, 100, true)
	}
}

func BenchmarkBodyChat(b *testing.B)        { benchBody(b, "chat") }
func BenchmarkBodyCompletions(b *testing.B) { benchBody(b, "completions") }
