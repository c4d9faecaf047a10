package workload

import (
	"maps"
	"strings"

	"github.com/goccy/go-yaml"
)

// Masked stands in for every secret plload writes or prints.
const Masked = "***"

// IsSecretHeader reports whether a header's value must never be written: its name mentions auth, key,
// token, cookie or secret.
func IsSecretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "cookie", "secret"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// maskValue hides v when the YAML path names a secret header.
func maskValue(path, v string) string {
	if name, ok := strings.CutPrefix(path, "target.headers."); ok && IsSecretHeader(name) {
		return Masked
	}
	return v
}

// Masked returns a copy of the scenario safe to write or print: secret header values are "***".
// api_key_env names a variable, not a key, and stays.
func (s *Scenario) Masked() *Scenario {
	c := *s
	if s.Target.Headers != nil {
		c.Target.Headers = maps.Clone(s.Target.Headers)
		for k := range c.Target.Headers {
			c.Target.Headers[k] = maskValue("target.headers."+k, c.Target.Headers[k])
		}
	}
	return &c
}

// ResolvedYAML is the scenario with every default filled and secrets masked: scenario.resolved.yaml.
// It is a valid scenario file itself (the Scenario's bookkeeping fields are unexported or yaml:"-").
func (s *Scenario) ResolvedYAML() ([]byte, error) {
	m := s.Masked()
	return yaml.MarshalWithOptions(m, yaml.IndentSequence(true))
}
