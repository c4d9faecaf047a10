package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestURLSecrets: the credentials the engine masks in servers' words: a password, and a secret-named
// query value as written and unescaped; an api-version is not one.
func TestURLSecrets(t *testing.T) {
	got := URLSecrets("https://bob:pw-SENTINEL@h/v1?api-version=2024-06-01&access_token=a%2Fb&key=k1")
	if diff := cmp.Diff([]string{"pw-SENTINEL", "a%2Fb", "a/b", "k1"}, got); diff != "" {
		t.Errorf("URLSecrets (-want +got):\n%s", diff)
	}
	if got := URLSecrets("http://127.0.0.1:8000/v1"); got != nil {
		t.Errorf("a plain URL has secrets %v", got)
	}
}

// TestServerRoot: where a server's /metrics is, beside its API: the version and the query cut.
func TestServerRoot(t *testing.T) {
	for raw, want := range map[string]string{
		"http://h:8000/v1":                        "http://h:8000",
		"http://h:8000/v1/":                       "http://h:8000",
		"https://h/openai/v1?api-version=2024-06": "https://h/openai",
		"http://u:p@h:8000":                       "http://u:p@h:8000",
	} {
		if got := ServerRoot(raw); got != want {
			t.Errorf("ServerRoot(%q) = %q, want %q", raw, got, want)
		}
	}
}
