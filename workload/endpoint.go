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
	if t.Endpoint == "completions" && s.Session.Tools != nil {
		c.errorf("session.tools", "the completions endpoint takes a prompt, not tools, and answers no tool calls; accepted: tools with target.endpoint chat or messages")
	}
	if !messages {
		return
	}
	if s.Session.ResponseFormat != nil {
		c.errorf("session.response_format", "the Messages API has no response_format; accepted: response_format with target.endpoint chat")
	}
	for _, k := range []string{"stream_options", "system", "max_completion_tokens"} {
		if _, set := t.ExtraBody[k]; set {
			why := map[string]string{
				"stream_options":        "the Messages API has no stream_options (its stream always carries usage)",
				"system":                "plload sends the persona as system itself",
				"max_completion_tokens": "the Messages API's limit is max_tokens, which plload always sends",
			}[k]
			c.errorf("target.extra_body."+k, "%s; accepted with endpoint messages: any other key the server takes", why)
		}
	}
	if s.has("target.max_tokens_field") && t.MaxTokensField != "max_tokens" {
		c.warnf("target.max_tokens_field", "found %s with endpoint messages, which always sends max_tokens (the API requires it); the key is ignored", t.MaxTokensField)
	}
}

// endpointName is an endpoint as a message names it ("" is the default).
func endpointName(e string) string {
	if e == "" {
		return DefaultEndpoint
	}
	return e
}
