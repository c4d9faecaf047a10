package llamaserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/plload/plload/llamaserver"
	"github.com/plload/plload/tokenizer"
)

// An external test: llamaserver itself imports nothing of this module; checking the server's counts
// against plload's own tokenizer is a test's business.

// TestRealServerCountsAsQwen3: the tiny model on a real llama-server counts a chat's prompt as
// Qwen3's tokenizer does, plus its chat template's 3 tokens a request and 5 a message, and streams
// what plload reads: a usage chunk and the end.
func TestRealServerCountsAsQwen3(t *testing.T) {
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
	body, _ := json.Marshal(map[string]any{"max_tokens": 5, "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": []map[string]string{{"role": "system", "content": system}, {"role": "user", "content": user}}})
	resp, err := llamaserver.FreshConnections.Post(s.URL+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream, _ := io.ReadAll(resp.Body)
	var usage struct {
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	for _, line := range strings.Split(string(stream), "\n") {
		if rest, ok := strings.CutPrefix(line, "data: {"); ok && strings.Contains(rest, `"usage"`) {
			json.Unmarshal([]byte("{"+rest), &usage)
		}
	}
	want := tk.Count(system) + tk.Count(user) + 3 + 5*2
	if usage.Usage.Prompt != want || usage.Usage.Completion != 5 || !strings.Contains(string(stream), "data: [DONE]") {
		t.Errorf("prompt %d tokens (want %d), completion %d (want 5); stream:\n%s", usage.Usage.Prompt, want, usage.Usage.Completion, stream)
	}
}
