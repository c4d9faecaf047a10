package engine

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestBaseURLUserInfoIsBasicAuth: a base_url with user info (https://user:pass@host/v1) sends
// Authorization: Basic on either HTTP client, unless an API key's Authorization is set; a server
// that echoes the password gets it masked in the record.
// Catches: plload's HTTP/1.1 client dropped the user info (net/http sends it), so the same scenario
// was refused as 401 on one client and worked on the other.
func TestBaseURLUserInfoIsBasicAuth(t *testing.T) {
	const password = "s3cret-PW9"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:"+password))
	for _, client := range []string{"", "net/http"} {
		for _, withKey := range []bool{false, true} {
			t.Run(fmt.Sprintf("client %q, API key %v", client, withKey), func(t *testing.T) {
				var mu sync.Mutex
				seen := map[string]int{}
				handler := func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					seen[r.Header.Get("Authorization")]++
					mu.Unlock()
					if r.Header.Get("Authorization") == basic {
						http.Error(w, "user bob, password "+password+": not allowed", http.StatusForbidden)
						return
					}
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, okStream)
				}
				adjust := func(text string) string {
					text = strings.Replace(text, "base_url: http://", "base_url: http://bob:"+password+"@", 1)
					if !withKey {
						text = strings.Replace(text, "  api_key_env: PLLOAD_TEST_KEY\n", "", 1)
					}
					return text
				}
				getenv := func(k string) string {
					if k == HTTPClientEnv {
						return client
					}
					return testEnv(k)
				}
				_, message, logged := runAgainst(t, handler, adjust, getenv)
				mu.Lock()
				defer mu.Unlock()
				want := basic
				if withKey {
					want = "Bearer " + secretKey
				}
				if len(seen) != 1 || seen[want] == 0 {
					t.Fatalf("Authorization headers seen %v; want every request with %q", seen, want)
				}
				if !withKey && (!strings.Contains(message, "password ***") || strings.Contains(message, password) || strings.Contains(logged, password)) {
					t.Errorf("record's message %q (want the password masked); log has the password: %v", message, strings.Contains(logged, password))
				}
			})
		}
	}
}
