package engine

import (
	"encoding/base64"
	"net/http"
	"net/url"

	"github.com/plload/plload/workload"
)

// targetURL is a base URL taken apart for sending: the URL the API paths are added to, without user
// info or query; the query, which every request carries after its path (Azure's ?api-version=…);
// and the user info.
type targetURL struct {
	base, query string
	// user is the base URL's user info (https://user:pass@host/v1): net/http would send it as Basic
	// authentication by itself, plload's HTTP/1.1 client would not, so the engine sends it as a
	// header on every protocol alike.
	user *url.Userinfo
	// secrets are the password and the values of secret-named query parameters
	// (workload.URLSecrets): masked in whatever a server sends back.
	secrets []string
}

// parseTarget takes raw apart; text that is not a URL is the base as it is.
func parseTarget(raw string) targetURL {
	u, err := url.Parse(raw)
	if err != nil {
		return targetURL{base: raw}
	}
	t := targetURL{query: u.RawQuery, user: u.User, secrets: workload.URLSecrets(raw)}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	t.base = u.String()
	return t
}

// at is the URL of path (/chat/completions, /models) on the target, with the base's query.
func (t targetURL) at(path string) string {
	if t.query == "" {
		return t.base + path
	}
	return t.base + path + "?" + t.query
}

// authorize sets Authorization: Basic from the user info where no Authorization header is set (an
// API key, or the user's own header, wins, as in net/http), and adds the URL's secrets, and the
// header's credential, to secrets.
func (t targetURL) authorize(h http.Header, secrets []string) []string {
	for _, s := range t.secrets {
		secrets = addSecret(secrets, s)
	}
	if t.user == nil {
		return secrets
	}
	pass, _ := t.user.Password()
	credential := base64.StdEncoding.EncodeToString([]byte(t.user.Username() + ":" + pass))
	secrets = addSecret(secrets, credential)
	if h.Get("Authorization") == "" {
		h.Set("Authorization", "Basic "+credential)
	}
	return secrets
}
