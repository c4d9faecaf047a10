package workload

import (
	"strings"
	"testing"
)

// What an endpoint's API cannot carry is refused at its key's line, saying what is accepted;
// messages itself, with cache_control, is valid, and so is responses with either history (client
// by default).
func TestEndpointRules(t *testing.T) {
	const tools = "  tools: {count: 2, schema_tokens: {min: 20, max: 40}}"
	cases := []struct {
		name    string
		edits   []edit
		warning bool
		path    string
		line    int
		message string
	}{
		{"cache_control needs messages", []edit{{5, "  model: m\n  cache_control: true"}}, false, "target.cache_control", 6,
			"found true with target.endpoint chat; accepted: cache_control only with endpoint messages"},
		{"completions takes no tools", []edit{{5, "  model: m\n  endpoint: completions"}, {9, "session:\n" + tools}}, false, "session.tools", 11,
			"the completions endpoint takes a prompt, not tools"},
		{"messages has no response_format", []edit{{5, "  model: m\n  endpoint: messages"}, {9, "session:\n  response_format: {type: json_object}"}}, false, "session.response_format", 11,
			"the Messages API has no response_format; accepted: response_format with target.endpoint chat"},
		{"messages has no stream_options", []edit{{5, "  model: m\n  endpoint: messages\n  extra_body: {stream_options: {include_usage: true}}"}}, false, "target.extra_body.stream_options", 7,
			"the Messages API has no stream_options"},
		{"messages sends its own system", []edit{{5, "  model: m\n  endpoint: messages\n  extra_body: {system: x}"}}, false, "target.extra_body.system", 7,
			"plload sends the persona as system itself"},
		{"messages sends its own max_tokens", []edit{{5, "  model: m\n  endpoint: messages\n  extra_body: {max_tokens: 5}"}}, false, "target.extra_body.max_tokens", 7,
			"plload sends max_tokens itself"},
		{"messages ignores max_tokens_field", []edit{{5, "  model: m\n  endpoint: messages\n  max_tokens_field: max_completion_tokens"}}, true, "target.max_tokens_field", 7,
			"always sends max_tokens"},
		{"history needs responses", []edit{{5, "  model: m\n  history: server"}}, false, "target.history", 6,
			`found "server" with target.endpoint chat; accepted: history only with endpoint responses (client or server`},
		{"history on messages", []edit{{5, "  model: m\n  endpoint: messages\n  history: client"}}, false, "target.history", 7,
			`found "client" with target.endpoint messages; accepted: history only with endpoint responses`},
		{"history is client or server", []edit{{5, "  model: m\n  endpoint: responses\n  history: both"}}, false, "target.history", 7,
			`found "both"; accepted: client, server`},
		{"responses has no response_format", []edit{{5, "  model: m\n  endpoint: responses"}, {9, "session:\n  response_format: {type: json_object}"}}, false, "session.response_format", 11,
			"the Responses API has no response_format"},
		{"responses sets store itself", []edit{{5, "  model: m\n  endpoint: responses\n  extra_body: {store: true}"}}, false, "target.extra_body.store", 7,
			"plload sets store from target.history"},
		{"responses sends max_output_tokens", []edit{{5, "  model: m\n  endpoint: responses\n  extra_body: {max_tokens: 9}"}}, false, "target.extra_body.max_tokens", 7,
			"the Responses API's limit is max_output_tokens"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, issues := Parse("t.yaml", []byte(applyEdits(tc.edits...)), LoadOptions{Getenv: noEnv})
			for _, is := range issues {
				if is.Path == tc.path && is.Line == tc.line && strings.Contains(is.Message, tc.message) && (is.Severity == SeverityWarning) == tc.warning {
					return
				}
			}
			t.Errorf("want %s at line %d: %q; got:\n%s", tc.path, tc.line, tc.message, dump(issues))
		})
	}
	_, issues := Parse("t.yaml", []byte(applyEdits(edit{5, "  model: m\n  endpoint: messages\n  cache_control: true"}, edit{9, "session:\n" + tools})), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Errorf("messages with cache_control and tools: %v", err)
	}
	for _, history := range []string{"", "\n  history: client", "\n  history: server"} {
		sc, issues := Parse("t.yaml", []byte(applyEdits(edit{5, "  model: m\n  endpoint: responses" + history}, edit{9, "session:\n" + tools})), LoadOptions{Getenv: noEnv})
		if err := issues.Err(); err != nil {
			t.Errorf("responses with tools%s: %v", history, err)
		} else if want := strings.TrimPrefix(history, "\n  history: "); sc.Target.History != want && !(want == "" && sc.Target.History == HistoryClient) {
			t.Errorf("responses%s: history %q", history, sc.Target.History)
		}
	}
}

// LimitField is the field each request's output limit goes in, as sent: max_tokens_field for chat
// and completions, the API's own for messages and responses (whatever max_tokens_field says), so
// stage.json and the report name what the server got.
func TestLimitField(t *testing.T) {
	for _, tc := range []struct{ endpoint, field, want string }{
		{"chat", "max_completion_tokens", "max_completion_tokens"},
		{"completions", "max_tokens", "max_tokens"},
		{"messages", "max_completion_tokens", "max_tokens"},
		{"responses", "max_completion_tokens", "max_output_tokens"},
	} {
		if got := (Target{Endpoint: tc.endpoint, MaxTokensField: tc.field}).LimitField(); got != tc.want {
			t.Errorf("%s with max_tokens_field %s: LimitField %q; want %q", tc.endpoint, tc.field, got, tc.want)
		}
	}
}

// A version written as another number is suggested as the one it equals, not the one fewest edits
// away ("2.0" is HTTP/2; "1.1" is as close by edits).
func TestHTTPVersionSuggestion(t *testing.T) {
	for found, want := range map[string]string{"2.0": `(did you mean "2"?)`, "1.10": `(did you mean "1.1"?)`, "atuo": `(did you mean "auto"?)`} {
		_, issues := Parse("t.yaml", []byte(applyEdits(edit{5, "  model: m\n  http: \"" + found + "\""})), LoadOptions{Getenv: noEnv})
		got := ""
		for _, is := range issues.Errors() {
			if is.Path == "target.http" {
				got = is.Message
			}
		}
		if !strings.Contains(got, want) {
			t.Errorf("http %q: %q; want it to say %s", found, got, want)
		}
	}
}
