package protocol

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/plload/plload/sse"
	"github.com/plload/plload/workload"
)

// Every endpoint workload accepts has an API here, and no other: a name added to one list and not
// the other would pass validation and fail the run, or be code no scenario can reach.
func TestEveryEndpointHasItsAPI(t *testing.T) {
	want := slices.Sorted(slices.Values(workload.Endpoints))
	if got := slices.Sorted(slices.Values(append(Names(), RetrievalNames()...))); !slices.Equal(got, want) {
		t.Fatalf("protocol's APIs %v and %v; workload accepts target.endpoint %v", Names(), RetrievalNames(), want)
	}
	for _, name := range RetrievalNames() {
		if api, ok := RetrievalFor(name); !ok || api.Name() != name || !workload.IsRetrieval(name) {
			t.Fatalf("RetrievalFor(%q) = %v, %v; workload.IsRetrieval %v", name, api, ok, workload.IsRetrieval(name))
		}
	}
	for _, name := range RetrievalNames() {
		if api, _ := RetrievalFor(name); api.Path() != workload.EndpointPath(name) {
			t.Errorf("%s: path %s, workload says %s", name, api.Path(), workload.EndpointPath(name))
		}
	}
	for _, name := range Names() {
		if api, _ := For(name); api.Path() != workload.EndpointPath(name) {
			t.Errorf("%s: path %s, workload says %s", name, api.Path(), workload.EndpointPath(name))
		}
		api, err := For(name)
		if err != nil || api.Name() != name {
			t.Fatalf("For(%q) = %v, %v", name, api, err)
		}
	}
	if api, err := For(""); err != nil || api.Name() != workload.DefaultEndpoint {
		t.Errorf(`For("") = %v, %v; want the default endpoint %s`, api, err, workload.DefaultEndpoint)
	}
	if _, err := For("chat/completions"); err == nil || !strings.Contains(err.Error(), "accepted: chat, completions, messages") {
		t.Errorf("an unknown endpoint: %v; want an error naming the accepted ones", err)
	}
}

// A message keeps its content only in its JSON; Text reads it back exactly (escapes, non-ASCII,
// line breaks), and gives "" for a tool-call answer without content. The JSON is the size of the
// message: no slack kept for a session's whole life.
func TestMessageTextIsItsContent(t *testing.T) {
	for _, content := range []string{"", "plain", "a \"quoted\" line\nand a tab\t, \\ backslash", "한국어 ☃ \u2028 <b>&</b>"} {
		m := NewMessage("user", content, 3)
		if got := m.Text(); got != content {
			t.Errorf("Text() = %q, want %q", got, content)
		}
		if cap(m.encoded) != len(m.encoded) {
			t.Errorf("%q: encoded with %d bytes of slack", content, cap(m.encoded)-len(m.encoded))
		}
		if m.Role() != "user" || m.Tokens() != 3 {
			t.Errorf("role %q tokens %d, want user 3", m.Role(), m.Tokens())
		}
	}
	if got := NewToolCallsMessage("", []sse.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}, 0).Text(); got != "" {
		t.Errorf("a tool-call answer without content reads as %q", got)
	}
	if got := NewToolMessage("c1", "42 °C", 0).Text(); got != "42 °C" {
		t.Errorf("a tool result reads as %q", got)
	}
	if got := NewRawMessage("user", []byte(`{"role":"user","content":[{"type":"text","text":"parts"}]}`)).Text(); got != "" {
		t.Errorf("a message whose content is a list of parts reads as %q; want \"\"", got)
	}
}

// target is a scenario's target for body tests: model m, max_tokens, streamed.
func target(endpoint string) *workload.Scenario {
	return &workload.Scenario{Target: workload.Target{Model: "m", Endpoint: endpoint, MaxTokensField: "max_tokens"}}
}

// build renders history's body for sc's endpoint.
func build(t *testing.T, sc *workload.Scenario, w *workload.Workload, model string, history []Message, maxTokens int, exact bool) string {
	t.Helper()
	api, err := For(sc.Target.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	body, err := NewBody(api, sc, w)
	if err != nil {
		t.Fatal(err)
	}
	out := body.Build(nil, model, history, maxTokens, exact)
	if !json.Valid(out) {
		t.Fatalf("not JSON: %s", out)
	}
	return string(out)
}

// conversation is a system prompt, a turn answered, and a new user message with characters JSON
// escapes.
func conversation() []Message {
	return []Message{
		NewMessage("system", "Be brief.", 3),
		NewMessage("user", "Hi", 1),
		NewMessage("assistant", "Hello!", 2),
		NewMessage("user", "Say \"ok\"\nthen stop", 6),
	}
}

// The max-tokens field is the one target.max_tokens_field names, unless extra_body sets it (its
// value wins, sent once); ignore_eos goes with an exact length unless extra_body decides it.
func TestMaxTokensFieldAndIgnoreEOS(t *testing.T) {
	h := conversation()[:2]
	sc := target("chat")
	sc.Target.MaxTokensField = "max_completion_tokens"
	got := build(t, sc, nil, "", h, 64, false)
	if !strings.Contains(got, `}],"max_completion_tokens":64,"stream":true`) {
		t.Errorf("max_completion_tokens: %s", got)
	}
	if strings.Contains(got, "ignore_eos") || strings.Contains(got, `"max_tokens"`) {
		t.Errorf("an inexact request with max_completion_tokens: %s", got)
	}
	if got := build(t, sc, nil, "", h, 64, true); !strings.Contains(got, `"max_completion_tokens":64,"ignore_eos":true,"stream":true`) {
		t.Errorf("an exact request: %s", got)
	}

	sc.Target.ExtraBody = map[string]any{"max_completion_tokens": 7, "ignore_eos": false}
	got = build(t, sc, nil, "", h, 64, true)
	if strings.Count(got, "max_completion_tokens") != 1 || !strings.Contains(got, `"max_completion_tokens":7`) || strings.Contains(got, ":64") {
		t.Errorf("extra_body's max_completion_tokens should win, once: %s", got)
	}
	if strings.Count(got, "ignore_eos") != 1 || !strings.Contains(got, `"ignore_eos":false`) {
		t.Errorf("extra_body's ignore_eos should win, once: %s", got)
	}
}

// extra_body may not set a key plload sets itself: the body's own keys always, and the workload's
// features' keys when the scenario uses them.
func TestExtraBodyReservedKeys(t *testing.T) {
	for _, endpoint := range Names() { // retrieval endpoints' own keys: workload's retrievalRules
		for _, k := range workload.ReservedBodyKeys {
			sc := target(endpoint)
			sc.Target.ExtraBody = map[string]any{"temperature": 0, k: "x"}
			api, _ := For(endpoint)
			_, err := NewBody(api, sc, nil)
			if err == nil || !strings.HasPrefix(err.Error(), "target.extra_body."+k+": plload sets "+k+" itself") {
				t.Errorf("%s: extra_body.%s: %v; want the key named", endpoint, k, err)
			}
		}
	}
	sc, w := agentScenario(t)
	for _, k := range []string{"tools", "tool_choice", "response_format"} {
		sc.Target.ExtraBody = map[string]any{k: "x"}
		api, _ := For(sc.Target.Endpoint)
		if _, err := NewBody(api, sc, w); err == nil || !strings.Contains(err.Error(), "target.extra_body."+k) {
			t.Errorf("extra_body.%s beside the workload's own: %v", k, err)
		}
		if _, err := NewBody(api, sc, nil); err != nil {
			t.Errorf("extra_body.%s without a workload that sets it: %v", k, err)
		}
	}
}

// agentScenario is the repository's agent example, built: tools and a response format.
func agentScenario(t *testing.T) (*workload.Scenario, *workload.Workload) {
	t.Helper()
	sc, issues := workload.Load("../scenarios/agent.yaml", workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	return sc, w
}

// A workload's tools, tool_choice and response_format go in every body, after the input and
// before stream; their tokens are the tools block's count.
func TestWorkloadFeaturesInTheBody(t *testing.T) {
	sc, w := agentScenario(t)
	api, _ := For(sc.Target.Endpoint)
	body, err := NewBody(api, sc, w)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(body.Build(nil, "", conversation(), 10, false), &got); err != nil {
		t.Fatal(err)
	}
	tools, _ := got["tools"].([]any)
	if len(tools) != 6 || got["tool_choice"] != w.ToolChoice() || got["response_format"] == nil {
		t.Errorf("features: %d tools, tool_choice %v, response_format %v", len(tools), got["tool_choice"], got["response_format"])
	}
	if want := sc.Tokenizer().Count(string(w.ToolsJSON())); body.ToolsTokens() != want || want == 0 {
		t.Errorf("ToolsTokens %d, want %d", body.ToolsTokens(), want)
	}
	if got["model"] != "base-model" {
		t.Errorf("model %v", got["model"])
	}
	if got := string(body.Build(nil, "sql-lora", conversation(), 10, false)); !strings.HasPrefix(got, `{"model":"sql-lora",`) {
		t.Errorf("a session of target.models' sql-lora: %.40s", got)
	}
}

// A non-streamed run asks for no stream and no stream options.
func TestNotStreamedBody(t *testing.T) {
	for _, endpoint := range Names() {
		sc := target(endpoint)
		sc.Target.Stream = new(bool)
		field := "max_tokens"
		if endpoint == "responses" { // the API's only limit field
			field = "max_output_tokens"
		}
		if got := build(t, sc, nil, "", conversation()[:2], 5, false); !strings.HasSuffix(got, `"`+field+`":5,"stream":false}`) {
			t.Errorf("%s: %s", endpoint, got)
		}
	}
}
