package workload

// endpointRules refuses what the scenario asks of target.endpoint's API that the API cannot carry,
// and target.cache_control on an API without cache breakpoints: each error names the key (its line
// comes with it) and what the endpoint accepts (docs/scenario.md, target).
func (c *checker) endpointRules() {
	s := c.s
	t := s.Target
	messages := t.Endpoint == "messages"
	if t.CacheControl && !messages {
		c.errorf("target.cache_control", "found true with target.endpoint %s; accepted: cache_control only with endpoint messages (Anthropic's explicit prompt-cache breakpoints), or leave it out", endpointName(t.Endpoint))
	}
	if t.Endpoint == "responses" {
		c.oneOf("target.history", t.History, HistoryClient, HistoryServer)
	} else if s.has("target.history") {
		c.errorf("target.history", "found %q with target.endpoint %s; accepted: history only with endpoint responses (client or server: the Responses API's stored conversations), or leave it out", t.History, endpointName(t.Endpoint))
	}
	if t.Endpoint == "completions" && s.Session.Tools != nil {
		c.errorf("session.tools", "the completions endpoint takes a prompt, not tools, and answers no tool calls; accepted: tools with target.endpoint chat or messages")
	}
	if t.Endpoint == "responses" {
		c.responsesRules()
	}
	if !messages {
		return
	}
	if s.Session.ResponseFormat != nil {
		c.errorf("session.response_format", "the Messages API has no response_format; accepted: response_format with target.endpoint chat")
	}
	for _, k := range []string{"stream_options", "system", "max_tokens", "max_completion_tokens"} {
		if _, set := t.ExtraBody[k]; set {
			why := map[string]string{
				"stream_options":        "the Messages API has no stream_options (its stream always carries usage)",
				"system":                "plload sends the persona as system itself",
				"max_tokens":            "plload sends max_tokens itself, each request's from session.max_output_tokens (the estimates and the length checks use it)",
				"max_completion_tokens": "the Messages API's limit is max_tokens, which plload always sends",
			}[k]
			c.errorf("target.extra_body."+k, "%s; accepted with endpoint messages: any other key the server takes", why)
		}
	}
	if s.has("target.max_tokens_field") && t.MaxTokensField != "max_tokens" {
		c.warnf("target.max_tokens_field", "found %s with endpoint messages, which always sends max_tokens (the API requires it); the key is ignored", t.MaxTokensField)
	}
}

// responsesRules refuses what the Responses API has no place for: response_format (its structured
// output is text.format), and extra_body keys it renamed or plload sets itself.
func (c *checker) responsesRules() {
	s := c.s
	t := s.Target
	if s.Session.ResponseFormat != nil {
		c.errorf("session.response_format", "the Responses API has no response_format (its structured output is text.format, which target.extra_body may set); accepted: response_format with target.endpoint chat")
	}
	for _, k := range []string{"stream_options", "max_tokens", "max_completion_tokens", "instructions", "input", "store", "previous_response_id"} {
		if _, set := t.ExtraBody[k]; set {
			why := map[string]string{
				"stream_options":        "the Responses API has no stream_options (response.completed always carries usage)",
				"max_tokens":            "the Responses API's limit is max_output_tokens, which plload always sends",
				"max_completion_tokens": "the Responses API's limit is max_output_tokens, which plload always sends",
				"instructions":          "plload sends the persona as instructions itself",
				"input":                 "plload sends the conversation as input itself",
				"store":                 "plload sets store from target.history (server: true, client: false)",
				"previous_response_id":  "plload sets previous_response_id itself with target.history: server",
			}[k]
			c.errorf("target.extra_body."+k, "%s; accepted with endpoint responses: any other key the server takes", why)
		}
	}
	if s.has("target.max_tokens_field") && t.MaxTokensField != "max_output_tokens" {
		c.warnf("target.max_tokens_field", "found %s with endpoint responses, which always sends max_output_tokens (the API's only limit); the key is ignored", t.MaxTokensField)
	}
	if t.History == HistoryServer && s.Workload != nil && s.Workload.Dataset != nil && s.Workload.Dataset.History == "recorded" {
		c.errorf("target.history", "found server with workload.dataset.history recorded: the server holds its own answers, not the file's; accepted: history client with recorded answers, or dataset history live")
	}
}

// endpointName is an endpoint as a message names it ("" is the default).
func endpointName(e string) string {
	if e == "" {
		return DefaultEndpoint
	}
	return e
}
