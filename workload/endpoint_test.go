package workload

import (
	"strings"
	"testing"
)

// What an endpoint's API cannot carry is refused at its key's line, saying what is accepted;
// messages itself, with cache_control, is valid.
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
		{"messages ignores max_tokens_field", []edit{{5, "  model: m\n  endpoint: messages\n  max_tokens_field: max_completion_tokens"}}, true, "target.max_tokens_field", 7,
			"always sends max_tokens"},
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
}
