package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Servers that misbehave the way real ones (and proxies) were seen to: echo the API key in
// what plload keeps, redirect, compress, stream more than asked. Each test runs the engine against
// one on loopback and reads what it kept.

// leakKey is the API key of the leak tests: uppercase letters outside hex, so that no 4-byte run of
// it turns up by chance in a UUID or a number of the results.
const leakKey = "sk-QZXJWVKPYRMZQXJWKVPYZMQXWJ"

func leakEnv(k string) string {
	if k == "PLLOAD_TEST_KEY" {
		return leakKey
	}
	return testEnv(k)
}

// quickStage is a one-session stage that sends a few requests.
const quickStage = "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 200ms}"

// runAgainst runs a quick stage against handler and returns the run directory, its first record's
// error message ("" when none) and what the engine logged (the terminal's text).
func runAgainst(t *testing.T, handler http.HandlerFunc, adjustText func(string) string, getenv func(string) string) (dir, message, logged string) {
	t.Helper()
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	text := scenarioYAML(ts.URL+"/v1", shortSessions, quickStage)
	if adjustText != nil {
		text = adjustText(text)
	}
	var log syncBuffer
	_, dir, err := runScenarioConfig(t, context.Background(), text, func(c *Config) {
		c.Getenv = getenv
		c.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	if err != nil && !errors.Is(err, ErrStageFailed) {
		t.Fatalf("run: %v", err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	if e, ok := recs[0]["error"].(map[string]any); ok {
		message, _ = e["message"].(string)
	}
	return dir, message, log.String()
}

// syncBuffer is a bytes.Buffer the engine's goroutines may log into at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// assertNoKeyRun fails when text holds any 4-byte run of leakKey.
func assertNoKeyRun(t *testing.T, where, text string) {
	t.Helper()
	for i := 0; i+4 <= len(leakKey); i++ {
		if j := strings.Index(text, leakKey[i:i+4]); j >= 0 {
			t.Errorf("%s holds %q of the API key: …%s…", where, leakKey[i:i+4], text[max(0, j-20):min(len(text), j+30)])
			return
		}
	}
}

// TestEchoedKeyIsMaskedAtEveryCut: a server echoes the API key so that it straddles each place
// where plload cuts server text — the 4 KiB kept of an error body, the 512 bytes kept of a non-SSE
// answer, the 200 bytes kept of a malformed chunk, the 4 KiB kept of an in-stream error and of a
// garbage non-streamed answer's 200 bytes. Nothing of the key may reach the records, run.log or the log (the
// terminal): it is masked whole before the cut, and a start of it left at a cut is masked too.
// Catches: cutting before masking, which left the key's first bytes in every file.
func TestEchoedKeyIsMaskedAtEveryCut(t *testing.T) {
	straddle := func(before int) string { return strings.Repeat("x", before-10) } // the key's first 10 bytes fall before the cut
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		text    func(string) string
	}{
		{"4 KiB error body", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, straddle(4<<10)+leakKey+" and more")
		}, nil},
		{"512-byte peek at a non-SSE answer", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, straddle(512)+leakKey+" and more")
		}, nil},
		{"200-byte cut of a malformed chunk", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: "+straddle(200)+leakKey+"\n\ndata: [DONE]\n\n")
		}, nil},
		{"4 KiB in-stream error", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: error\ndata: "+straddle(4<<10-len("server error in stream: "))+leakKey+"\n\n")
		}, nil},
		{"200 bytes of a garbage non-streamed answer", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, straddle(200)+leakKey+" and more")
		}, func(text string) string {
			text = strings.Replace(text, "slo: {ttft_p95: 1s, itl_p95: 100ms, ", "slo: {", 1)
			return strings.Replace(text, "  model: m\n", "  model: m\n  stream: false\n", 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, message, logged := runAgainst(t, tc.handler, tc.text, leakEnv)
			assertNoKeyRun(t, "the log", logged)
			filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, _ := os.ReadFile(path)
				assertNoKeyRun(t, path, string(data))
				return nil
			})
			assertNoSecrets(t, dir)
			if !strings.Contains(message, "***") {
				t.Errorf("the record's message shows no masked key, so the test placed none in view: %.300q", message)
			}
		})
	}
}

// TestScrubCut: the one masking function, at the edges: a secret across the cut, a start of a
// secret left at the end by an earlier cut, a short start that is not masked, a cut inside a
// multibyte character.
func TestScrubCut(t *testing.T) {
	secrets := []string{"sk-ABCDEFGH", "abc"} // "abc": under 4 bytes, never masked
	for _, tc := range []struct {
		text  string
		limit int
		want  string
	}{
		{"error: sk-ABCDEFGH!", 12, "error: ***!"},
		{"error: sk-ABCDEFGH!", 9, "error: **"}, // masked before the cut: nothing of the key left
		{"error: sk-ABCD", -1, "error: ***"},    // cut before it got here
		{"error: sk-", -1, "error: sk-"},        // 3 bytes of a start: kept
		{"abc abc", -1, "abc abc"},
		{"héllo", 2, "h"},                                               // never half a character
		{"\x80\x80\x80\x80\x80\x80\x80\x80", 5, "\x80\x80\x80\x80\x80"}, // not UTF-8: cut where the limit is, not to nothing
	} {
		if got := scrubCut(tc.text, tc.limit, secrets); got != tc.want {
			t.Errorf("scrubCut(%q, %d) = %q, want %q", tc.text, tc.limit, got, tc.want)
		}
	}
	// Two secrets overlapping in the text are masked together: masked one after the other, the
	// second's tail ("ijkl") stayed.
	if got := scrubCut("x abcdEFGHijkl y", -1, []string{"abcdEFGH", "EFGHijkl"}); got != "x *** y" {
		t.Errorf("overlapping secrets: %q, want %q", got, "x *** y")
	}
	// At the end, the longest start of any secret is masked, not the first found.
	if got := scrubCut("key sk-ABCDEFG", -1, []string{"ABCDEFGHIJ", "sk-ABCDEFGH"}); got != "key ***" {
		t.Errorf("trailing starts: %q, want %q", got, "key ***")
	}
}

// TestHeaderSecretsMaskTheKeyAlone: a key given as target.headers' "Authorization: Bearer
// ${VAR}" is masked when a server echoes the key alone (the header's whole value never appears),
// and so is its URL-encoded form.
// Catches: only the whole header value ("Bearer sk-…") counted as a secret, so the echoed key
// reached every file whole.
func TestHeaderSecretsMaskTheKeyAlone(t *testing.T) {
	const key = "sk-HDRKEY/QZXJ+WVKP"
	getenv := func(k string) string { return map[string]string{"OPENAI_API_KEY": key}[k] }
	secrets := headerSecrets(nil, "Bearer ${OPENAI_API_KEY}", "Bearer "+key, getenv)
	for _, text := range []string{
		"Incorrect API key provided: " + key + ".",
		"redirect to /login?key=" + url.QueryEscape(key),
	} {
		got := scrubCut(text, -1, secrets)
		for i := 0; i+4 <= len(key); i++ {
			if strings.Contains(got, key[i:i+4]) {
				t.Errorf("scrubCut(%q) = %q: %q of the key is left", text, got, key[i:i+4])
				break
			}
		}
	}
}

// redirectTarget counts the requests it gets and answers each with a good stream.
func redirectTarget(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, okStream)
	}))
	t.Cleanup(ts.Close)
	return ts, &hits
}

// TestRedirectsAreNotFollowed: a target that answers 307 or 302 pointing at another server. No
// request (and no key) may reach that server, on either HTTP client: every record is an error
// naming the status and the Location, and the preflight stops the run naming the Location.
// Catches: following the redirect, which measured a server the user never named with the key sent
// to it (307), or turned each POST into a GET (302).
func TestRedirectsAreNotFollowed(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusFound} {
		for _, client := range []string{"", "net/http"} {
			t.Run(fmt.Sprintf("%d %s", status, client), func(t *testing.T) {
				elsewhere, hits := redirectTarget(t)
				location := elsewhere.URL + "/v1/chat/completions"
				redirect := func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Location", location)
					w.WriteHeader(status)
				}
				getenv := func(k string) string {
					if k == HTTPClientEnv {
						return client
					}
					return testEnv(k)
				}
				_, message, _ := runAgainst(t, redirect, nil, getenv)
				if !strings.Contains(message, "redirects to "+location) || !strings.Contains(message, "target.base_url") {
					t.Errorf("record's message %q does not name the Location %s", message, location)
				}
				ts := httptest.NewServer(http.HandlerFunc(redirect))
				defer ts.Close()
				sc, w := parseForPreflight(t, scenarioYAML(ts.URL+"/v1", shortSessions, quickStage))
				_, err := Preflight(context.Background(), Config{Scenario: sc, Workload: w, Getenv: getenv})
				if err == nil || !strings.Contains(err.Error(), "redirects to "+location) || !strings.Contains(err.Error(), "point target.base_url there") {
					t.Errorf("preflight: %v; want it to stop naming the Location", err)
				}
				if n := hits.Load(); n != 0 {
					t.Errorf("the server redirected to got %d requests; want none", n)
				}
			})
		}
	}
}

// TestCompressedAnswerIsNamed: every request asks for Accept-Encoding: identity (on both HTTP
// clients); a server that gzips the stream anyway gets records that name the Content-Encoding, and
// the preflight stops the run naming it.
// Catches: no Accept-Encoding sent, and a gzipped stream recorded as "stream ended without data:
// [DONE] after 0 token events".
func TestCompressedAnswerIsNamed(t *testing.T) {
	for _, client := range []string{"", "net/http"} {
		t.Run("client "+client, func(t *testing.T) {
			var asked sync.Map // Accept-Encoding values seen
			gz := func(w http.ResponseWriter, r *http.Request) {
				asked.Store(fmt.Sprintf("%q", r.Header.Values("Accept-Encoding")), true)
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				fmt.Fprint(zw, okStream)
				zw.Close()
			}
			getenv := func(k string) string {
				if k == HTTPClientEnv {
					return client
				}
				return testEnv(k)
			}
			_, message, _ := runAgainst(t, gz, nil, getenv)
			want := "the server compressed the stream (Content-Encoding: gzip) though plload asked for identity"
			if !strings.Contains(message, want) {
				t.Errorf("record's message %q, want it to say %q", message, want)
			}
			ts := httptest.NewServer(http.HandlerFunc(gz))
			defer ts.Close()
			sc, w := parseForPreflight(t, scenarioYAML(ts.URL+"/v1", shortSessions, quickStage))
			if _, err := Preflight(context.Background(), Config{Scenario: sc, Workload: w, Getenv: getenv}); err == nil || !strings.Contains(err.Error(), "Content-Encoding: gzip") {
				t.Errorf("preflight: %v; want it to stop naming the Content-Encoding", err)
			}
			asked.Range(func(k, _ any) bool {
				if k != `["identity"]` {
					t.Errorf("a request asked for Accept-Encoding %s; want [\"identity\"]", k)
				}
				return true
			})
		})
	}
}

// TestEventLimitNamesTheDefault: a server sends one SSE line over the default limit; the record
// names the limit that applied (4 MiB), not the unset option's 0.
// Catches: "one SSE event was over the 0-byte limit".
func TestEventLimitNamesTheDefault(t *testing.T) {
	huge := strings.Repeat("a", 4<<20+1)
	_, message, _ := runAgainst(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: "+huge+"\n\n")
	}, nil, testEnv)
	if !strings.Contains(message, "4 MiB limit") || strings.Contains(message, " 0-byte") {
		t.Errorf("record's message %q; want it to name the 4 MiB limit", message)
	}
}

// TestPreflightSaysWhatTheStreamDid: the preflight asks for one token; a server that streams five
// token events and then neither ends the stream nor answers more gets a message that says so, not
// one about a server too slow for one token.
// Catches: "the server took longer than target.timeout (…) for one token" after 5 chunks.
func TestPreflightSaysWhatTheStreamDid(t *testing.T) {
	chunk := "data: {\"choices\":[{\"delta\":{\"content\":\"w\"}}]}\n\n"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, strings.Repeat(chunk, 5))
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // stalls until the client gives up
	}))
	defer ts.Close()
	text := strings.Replace(scenarioYAML(ts.URL+"/v1", shortSessions, quickStage), "timeout: 10s", "timeout: 300ms", 1)
	sc, w := parseForPreflight(t, text)
	_, err := Preflight(context.Background(), Config{Scenario: sc, Workload: w, Getenv: testEnv})
	if err == nil || !strings.Contains(err.Error(), "streamed 5 token events") || !strings.Contains(err.Error(), "did not end the stream") {
		t.Errorf("preflight: %v; want it to say that 5 token events came and the stream never ended", err)
	}
}

type connRequestsKey struct{}

// TestRetryAfterAReadRequestSaysSo: a server that reads the second request on each kept-alive
// connection (its second POST: the RTT probes' GETs are answered) in full and then closes the connection without answering. plload sends it again on a
// new connection, as it does when a server closed the connection before the request went out; but
// this server may have done the work, and the run says so rather than that the request never
// reached it — on both HTTP clients.
// Catches: run.log (and docs/scenario.md) saying such a request never reached the server.
func TestRetryAfterAReadRequestSaysSo(t *testing.T) {
	for _, client := range []string{"", "net/http"} {
		t.Run("client "+client, func(t *testing.T) {
			var dropped atomic.Int64 // requests read in full, then left unanswered
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.Context().Value(connRequestsKey{}).(*atomic.Int64).Add(1) == 2 {
					io.Copy(io.Discard, r.Body)
					conn, _, err := http.NewResponseController(w).Hijack()
					if err == nil {
						dropped.Add(1)
						conn.Close()
					}
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, okStream)
			}))
			ts.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
				return context.WithValue(ctx, connRequestsKey{}, new(atomic.Int64))
			}
			ts.Start()
			t.Cleanup(ts.Close)
			getenv := func(k string) string {
				if k == HTTPClientEnv {
					return client
				}
				return testEnv(k)
			}
			var log syncBuffer
			res, dir, err := runScenarioConfig(t, context.Background(), scenarioYAML(ts.URL+"/v1", shortSessions, quickStage), func(c *Config) {
				c.Getenv = getenv
				c.Log = slog.New(slog.NewTextHandler(&log, nil))
			})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			retried := 0
			for _, rec := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
				if rec["error"] != nil {
					t.Errorf("error record: %v", rec["error"])
				}
				if rec["metadata"].(map[string]any)["retried"] == true {
					retried++
				}
			}
			if n := dropped.Load(); n == 0 || int64(retried) != n || res[0].Retried != retried || res[0].RetriedAfterClose != retried {
				t.Fatalf("the server read and dropped %d requests; %d records say retried, the stage counted %d, %d of them after the close", n, retried, res[0].Retried, res[0].RetriedAfterClose)
			}
			if text := log.String(); !strings.Contains(text, "the server may have read it and done the work twice") {
				t.Errorf("the log does not say the server may have read the retried request:\n%s", text)
			}
		})
	}
}
