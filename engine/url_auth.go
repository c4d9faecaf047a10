package engine

import (
	"encoding/base64"
	"net/http"
	"net/url"
)

// urlCredentials is the user info of a base URL (https://user:pass@host/v1): net/http would send it
// as Basic authentication by itself, plload's HTTP/1.1 client would not, so the engine takes it out
// of the URL and sends it as a header on every protocol alike.
type urlCredentials struct {
	user *url.Userinfo
}

// splitCredentials returns raw without its user info, and the user info (none when raw has none or
// is not a URL).
func splitCredentials(raw string) (string, urlCredentials) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw, urlCredentials{}
	}
	user := u.User
	u.User = nil
	return u.String(), urlCredentials{user: user}
}

// apply sets Authorization: Basic from the user info where no Authorization header is set (an API
// key, or the user's own header, wins, as in net/http), and adds the password and the header's
// credential to secrets.
func (c urlCredentials) apply(h http.Header, secrets []string) []string {
	if c.user == nil {
		return secrets
	}
	pass, _ := c.user.Password()
	credential := base64.StdEncoding.EncodeToString([]byte(c.user.Username() + ":" + pass))
	secrets = addSecret(addSecret(secrets, pass), credential)
	if h.Get("Authorization") == "" {
		h.Set("Authorization", "Basic "+credential)
	}
	return secrets
}
