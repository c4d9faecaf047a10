package engine

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// TestBaseURLQueryGoesAfterThePath: a base URL with a query (Azure's ?api-version=…) gets the API's
// path before the query, on every request, GET /models included; a key in that query is masked in
// what the server echoes, in the preflight's words and in run.log.
// Catches: the path was appended to the whole base, so every request went to
// /v1?api-version=…/chat/completions and the key in the query was printed in the preflight's message.
func TestBaseURLQueryGoesAfterThePath(t *testing.T) {
	const key = "sk-QSECRET99"
	var mu sync.Mutex
	seen := map[string]int{}
	handler := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery]++
		mu.Unlock()
		if r.Method == http.MethodPost && r.URL.Query().Get("api_key") == key {
			http.Error(w, "key "+key+" may not use this model", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, okStream)
	}
	adjust := func(text string) string {
		return strings.Replace(text, "/v1\n", "/v1?api-version=2024-06-01&api_key="+key+"\n", 1)
	}
	dir, message, logged := runAgainst(t, handler, adjust, testEnv)
	mu.Lock()
	want := "POST /v1/chat/completions?api-version=2024-06-01&api_key=" + key
	if len(seen) > 2 || seen[want] == 0 {
		t.Errorf("requests seen %v; want every POST as %q (and GET /v1/models with the same query)", seen, want)
	}
	mu.Unlock()
	if strings.Contains(message, key) || !strings.Contains(message, "key *** may not") {
		t.Errorf("record's message %q: want the key masked", message)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "stage_01", "run.log"))
	if strings.Contains(logged+string(data), key) {
		t.Error("the key in the base URL's query reached the log")
	}
}
