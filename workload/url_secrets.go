package workload

import (
	"fmt"
	"net/url"
	"strings"
)

// A URL can carry credentials too: the password of its user info (https://user:pass@host/v1) and
// the value of a query parameter whose name says secret (?api_key=…, by IsSecretHeader's words).

// secretQueryValue says whether one name=value part of a query is a secret, and its value.
func secretQueryValue(part string) (string, bool) {
	name, value, found := strings.Cut(part, "=")
	key, err := url.QueryUnescape(name)
	return value, found && err == nil && value != "" && IsSecretHeader(key)
}

// MaskURL writes raw with its credentials as ***. A ${NAME} reference names a variable, not a
// secret, and stays; so does text that is not a URL.
func MaskURL(raw string) string {
	// url.Parse refuses braces in user info and hosts: each ${NAME} stands aside as a plain word
	// while the URL is read, and comes back after.
	refs := envRef.FindAllString(raw, -1)
	word := func(i int) string { return fmt.Sprintf("plloadenvref%dx", i) }
	plain := raw
	for i, ref := range refs {
		plain = strings.Replace(plain, ref, word(i), 1)
	}
	isRef := func(v string) bool { return strings.HasPrefix(v, "plloadenvref") }
	u, err := url.Parse(plain)
	if err != nil || (u.User == nil && u.RawQuery == "") {
		return raw
	}
	changed := false
	if pass, ok := u.User.Password(); ok && !isRef(pass) {
		u.User = url.UserPassword(u.User.Username(), "plloadmaskedx") // url would escape "***"
		changed = true
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			if value, secret := secretQueryValue(p); secret && !isRef(value) {
				parts[i] = p[:len(p)-len(value)] + Masked
				changed = true
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	if !changed {
		return raw
	}
	out := strings.Replace(u.String(), "plloadmaskedx", Masked, 1)
	for i, ref := range refs {
		out = strings.Replace(out, word(i), ref, 1)
	}
	return out
}

// URLSecrets are the credentials in a URL as sent (its ${NAME}s expanded): the password, and each
// secret-named query value as written and unescaped. The engine masks them in what servers send back.
func URLSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if pass, ok := u.User.Password(); ok && pass != "" {
		out = append(out, pass)
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		if value, secret := secretQueryValue(p); secret {
			out = append(out, value)
			if plain, err := url.QueryUnescape(value); err == nil && plain != value {
				out = append(out, plain)
			}
		}
	}
	return out
}

// ServerRoot is a base URL without its API version: the query, a trailing / and a trailing /v1 cut
// (http://host:8000/v1?api-version=x gives http://host:8000), where a server's /metrics and the
// mock's /dcgm/metrics are.
func ServerRoot(baseURL string) string {
	root, _, _ := strings.Cut(baseURL, "?")
	root, _, _ = strings.Cut(root, "#")
	return strings.TrimSuffix(strings.TrimRight(root, "/"), "/v1")
}
