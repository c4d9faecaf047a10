package mock

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzRequest: no request body makes the mock panic; a bad one gets a 4xx, never a 5xx it did not
// inject.
func FuzzRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"max_completion_tokens":2,"min_tokens":5}`))
	f.Add([]byte(`{"model":"m","prompt":["a","b"],"max_tokens":1}`))
	// A 1×1 GIF as an image part, and a broken one: the image reading must refuse, never panic.
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGODlhAQABAAAAACw="}}]}],"max_tokens":1}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo"}}]}],"max_tokens":1}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":null}],"max_tokens":-1}`))
	f.Add([]byte(`{`))
	cfg := DefaultConfig()
	cfg.TTFT, cfg.TPS, cfg.DefaultMaxTokens, cfg.MaxTokensLimit = 0, 1e6, 8, 64
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			s.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s: status %d for %q: %s", path, rec.Code, body, rec.Body.String())
			}
		}
	})
}
