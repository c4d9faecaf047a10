package protocol

import (
	"encoding/json"
	"testing"

	"github.com/plload/plload/sse"
)

// The completions body is the model, the history as one transcript prompt ("role: text"
// paragraphs, then "assistant:"), the max-tokens field, ignore_eos for an exact length, and the
// stream options.
func TestCompletionsBodyIsATranscript(t *testing.T) {
	got := build(t, target("completions"), nil, "", conversation(), 50, true)
	want := `{"model":"m","prompt":"system: Be brief.\n\nuser: Hi\n\nassistant: Hello!\n\nuser: Say \"ok\"\nthen stop\n\nassistant:",` +
		`"max_tokens":50,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
	if got != want {
		t.Errorf("completions body\n got %s\nwant %s", got, want)
	}
}

// Tool-call answers and tool results enter the transcript by their text only: an answer without
// content is an empty assistant paragraph, a tool result is the tool's paragraph.
func TestCompletionsTranscriptOfToolCalls(t *testing.T) {
	calls := []sse.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}
	h := append(conversation()[:2], NewToolCallsMessage("", calls, 4), NewToolMessage("c1", "4 °C", 3))
	var got struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(build(t, target("completions"), nil, "", h, 5, false)), &got); err != nil {
		t.Fatal(err)
	}
	if want := "system: Be brief.\n\nuser: Hi\n\nassistant: \n\ntool: 4 °C\n\nassistant:"; got.Prompt != want {
		t.Errorf("transcript %q, want %q", got.Prompt, want)
	}
}

// The completions API posts to /completions and reads choices' text as content, streamed or not.
func TestCompletionsReadsItsAnswers(t *testing.T) {
	api, _ := For("completions")
	if api.Path() != "/completions" {
		t.Errorf("path %s", api.Path())
	}
	stream := "data: {\"choices\":[{\"text\":\"Hel\"}]}\n\n" +
		"data: {\"choices\":[{\"text\":\"lo\",\"finish_reason\":\"length\"}]}\n\n" +
		"data: [DONE]\n\n"
	evs := readAll(t, api, stream)
	if len(evs) != 3 || evs[0].Content != "Hel" || evs[1].Content != "lo" || evs[1].FinishReason != "length" || !evs[2].Done {
		t.Errorf("completions stream read as %+v", evs)
	}
	c, err := api.ParseAnswer([]byte(`{"choices":[{"text":"Hello","finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`))
	if err != nil || c.Content != "Hello" || c.FinishReason != "stop" || c.Usage == nil || c.Usage.CompletionTokens != 2 {
		t.Errorf("completions answer read as %+v, %v", c, err)
	}
	if c, err := api.ParseAnswer([]byte(`{"error":{"message":"bad prompt","type":"invalid_request_error"}}`)); err != nil || c.Err == nil || c.Err.Message != "bad prompt" {
		t.Errorf("an error body read as %+v, %v", c, err)
	}
}
