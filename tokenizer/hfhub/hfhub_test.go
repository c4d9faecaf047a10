package hfhub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	commitMain = "0123456789abcdef0123456789abcdef01234567"
	commitTag  = "89abcdef0123456789abcdef0123456789abcdef"
	etagTok    = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678" // a git blob id, as the hub gives non-LFS files
	etagCfg    = "ffeeddccbbaa99887766554433221100ffeeddcc"
	tokBody    = `{"version":"1.0","model":{"type":"BPE"}}`
	cfgBody    = `{"bos_token":"<s>"}`
)

// fakeHub stands in for huggingface.co: it serves org/name's tokenizer.json at main (commitMain), at
// the tag v1.0 and the PR ref refs/pr/1 (commitTag), and at either commit; tokenizer_config.json
// only when withConfig.
type fakeHub struct {
	*httptest.Server
	withConfig bool
	override   http.HandlerFunc // when set, serves every request instead

	mu       sync.Mutex
	requests []string // escaped paths, in order
	auth     []string // Authorization headers, in order
}

func newHub(t *testing.T) *fakeHub {
	h := &fakeHub{withConfig: true}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

func (h *fakeHub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.requests)
}

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests = append(h.requests, r.URL.EscapedPath())
	h.auth = append(h.auth, r.Header.Get("Authorization"))
	h.mu.Unlock()
	if h.override != nil {
		h.override(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/org/name/resolve/")
	if !ok {
		w.Header().Set("X-Error-Code", "RepositoryNotFound")
		http.Error(w, "Repository not found", http.StatusNotFound)
		return
	}
	rev, file, _ := strings.Cut(rest, "/")
	var commit string
	switch rev {
	case "main", commitMain:
		commit = commitMain
	case "v1.0", "refs%2Fpr%2F1", commitTag:
		commit = commitTag
	default:
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "Revision not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	switch {
	case file == TokenizerFile:
		w.Header().Set("ETag", `"`+etagTok+`"`)
		w.Write([]byte(tokBody))
	case file == ConfigFile && h.withConfig:
		w.Header().Set("ETag", `W/"`+etagCfg+`"`)
		w.Write([]byte(cfgBody))
	default:
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
	}
}

func testEnv(t *testing.T, endpoint string) Env {
	return Env{CacheDir: t.TempDir(), Endpoint: endpoint, Timeout: 10 * time.Second}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkLink checks that p is a symlink to ../../blobs/etag holding want.
func checkLink(t *testing.T, p, etag, want string) {
	t.Helper()
	target, err := os.Readlink(p)
	if err != nil {
		t.Fatalf("%s is not a symlink: %v", p, err)
	}
	if target != filepath.Join("..", "..", "blobs", etag) {
		t.Errorf("%s → %q, want ../../blobs/%s", p, target, etag)
	}
	if got := readFile(t, p); got != want {
		t.Errorf("%s holds %q, want %q", p, got, want)
	}
}

// cacheFiles lists every non-folder under dir, relative and slash-separated.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func TestFetchIntoEmptyCache(t *testing.T) {
	hub := newHub(t)
	env := testEnv(t, hub.URL)
	r, err := ResolveWith(context.Background(), "org/name", env)
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(env.CacheDir, "models--org--name")
	snap := filepath.Join(store, "snapshots", commitMain)
	if r.Path != filepath.Join(snap, "tokenizer.json") || r.Commit != commitMain || r.Cached {
		t.Errorf("got %+v", r)
	}
	if r.ConfigPath != filepath.Join(snap, "tokenizer_config.json") {
		t.Errorf("ConfigPath %q", r.ConfigPath)
	}
	if got := readFile(t, filepath.Join(store, "refs", "main")); got != commitMain {
		t.Errorf("refs/main holds %q, want %q (no newline, as huggingface_hub writes it)", got, commitMain)
	}
	checkLink(t, r.Path, etagTok, tokBody)
	checkLink(t, r.ConfigPath, etagCfg, cfgBody)
	want := []string{
		"models--org--name/blobs/" + etagTok,
		"models--org--name/blobs/" + etagCfg,
		"models--org--name/refs/main",
		"models--org--name/snapshots/" + commitMain + "/tokenizer.json",
		"models--org--name/snapshots/" + commitMain + "/tokenizer_config.json",
	}
	if got := cacheFiles(t, env.CacheDir); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("cache holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantReq := []string{"/org/name/resolve/main/tokenizer.json", "/org/name/resolve/" + commitMain + "/tokenizer_config.json"}
	if strings.Join(hub.requests, " ") != strings.Join(wantReq, " ") {
		t.Errorf("requests %q, want %q", hub.requests, wantReq)
	}
	if hub.auth[0] != "" {
		t.Errorf("Authorization %q sent without a token", hub.auth[0])
	}

	// Again: from the cache, with no request.
	r2, err := ResolveWith(context.Background(), "org/name", env)
	if err != nil || r2.Path != r.Path || r2.Commit != commitMain || !r2.Cached || r2.ConfigPath != r.ConfigPath {
		t.Errorf("second resolution %+v, %v", r2, err)
	}
	if hub.count() != 2 {
		t.Errorf("%d requests, want 2 (none for the second resolution)", hub.count())
	}
}

func TestOfflineFromCache(t *testing.T) {
	hub := newHub(t)
	env := testEnv(t, hub.URL)
	if _, err := ResolveWith(context.Background(), "org/name", env); err != nil {
		t.Fatal(err)
	}
	n := hub.count()

	// Through Resolve and the real environment: HF_HUB_OFFLINE=1.
	t.Setenv("HF_HUB_CACHE", env.CacheDir)
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("HF_HUB_OFFLINE", "1")
	p, c, err := Resolve(context.Background(), "org/name")
	if err != nil || c != commitMain || p != filepath.Join(env.CacheDir, "models--org--name", "snapshots", commitMain, "tokenizer.json") {
		t.Fatalf("offline: %q %q %v", p, c, err)
	}
	if hub.count() != n {
		t.Errorf("offline resolution made %d requests", hub.count()-n)
	}

	// The hub gone, offline mode off: still from the cache.
	hub.Close()
	t.Setenv("HF_HUB_OFFLINE", "")
	if p2, c2, err := Resolve(context.Background(), "org/name"); err != nil || p2 != p || c2 != c {
		t.Errorf("hub closed: %q %q %v", p2, c2, err)
	}
}

// handCache lays out a cache exactly as huggingface_hub writes one: refs/main holding the commit,
// snapshots/<commit>/tokenizer.json → ../../blobs/<etag>.
func handCache(t *testing.T, dir string) {
	t.Helper()
	store := filepath.Join(dir, "models--Org-1--Name.v2_x")
	for _, d := range []string{"refs", "blobs", "snapshots/" + commitMain} {
		if err := os.MkdirAll(filepath.Join(store, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(store, "refs", "main"), []byte(commitMain), 0o644))
	must(t, os.WriteFile(filepath.Join(store, "blobs", etagTok), []byte(tokBody), 0o644))
	must(t, os.Symlink("../../blobs/"+etagTok, filepath.Join(store, "snapshots", commitMain, "tokenizer.json")))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestHandLaidCache(t *testing.T) {
	hub := newHub(t)
	env := testEnv(t, hub.URL)
	handCache(t, env.CacheDir)
	for _, repo := range []string{"Org-1/Name.v2_x", "Org-1/Name.v2_x@main", "Org-1/Name.v2_x@" + commitMain} {
		r, err := ResolveWith(context.Background(), repo, env)
		if err != nil {
			t.Fatalf("%s: %v", repo, err)
		}
		if r.Commit != commitMain || !r.Cached || r.ConfigPath != "" || readFile(t, r.Path) != tokBody {
			t.Errorf("%s: %+v", repo, r)
		}
	}
	if hub.count() != 0 {
		t.Errorf("%d requests, want none", hub.count())
	}
}

func TestRevisions(t *testing.T) {
	hub := newHub(t)
	hub.withConfig = false
	env := testEnv(t, hub.URL)
	store := filepath.Join(env.CacheDir, "models--org--name")

	// A tag: refs/v1.0 written, tokenizer_config.json absent → the .no_exist marker.
	r, err := ResolveWith(context.Background(), "org/name@v1.0", env)
	if err != nil {
		t.Fatal(err)
	}
	if r.Commit != commitTag || r.ConfigPath != "" || readFile(t, r.Path) != tokBody {
		t.Errorf("tag: %+v", r)
	}
	if got := readFile(t, filepath.Join(store, "refs", "v1.0")); got != commitTag {
		t.Errorf("refs/v1.0 holds %q", got)
	}
	if _, err := os.Stat(filepath.Join(store, ".no_exist", commitTag, "tokenizer_config.json")); err != nil {
		t.Errorf("no .no_exist marker for the missing config: %v", err)
	}
	if hub.requests[0] != "/org/name/resolve/v1.0/tokenizer.json" {
		t.Errorf("requested %q", hub.requests[0])
	}

	// A PR ref: the revision escaped whole in the URL, refs/refs/pr/1 as huggingface_hub writes it.
	// Its snapshot is already there (same commit): only tokenizer.json is requested, not the config
	// (marked absent).
	n := hub.count()
	if r, err := ResolveWith(context.Background(), "org/name@refs/pr/1", env); err != nil || r.Commit != commitTag {
		t.Fatalf("pr: %+v %v", r, err)
	}
	if got := hub.requests[n:]; len(got) != 1 || got[0] != "/org/name/resolve/refs%2Fpr%2F1/tokenizer.json" {
		t.Errorf("pr requests %q", got)
	}
	if got := readFile(t, filepath.Join(store, "refs", "refs", "pr", "1")); got != commitTag {
		t.Errorf("refs/refs/pr/1 holds %q", got)
	}

	// A commit: fetched by its hash, no ref written.
	n = hub.count()
	r, err = ResolveWith(context.Background(), "org/name@"+commitMain, env)
	if err != nil || r.Commit != commitMain || r.Cached {
		t.Fatalf("commit: %+v %v", r, err)
	}
	if hub.requests[n] != "/org/name/resolve/"+commitMain+"/tokenizer.json" {
		t.Errorf("requested %q", hub.requests[n])
	}
	if _, err := os.Stat(filepath.Join(store, "refs", commitMain)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a ref was written for a commit revision: %v", err)
	}
	// The blob is shared: both snapshots link to it.
	checkLink(t, r.Path, etagTok, tokBody)
	// Then offline, by commit.
	env.Offline = true
	n = hub.count()
	if r2, err := ResolveWith(context.Background(), "org/name@"+commitMain, env); err != nil || r2.Path != r.Path {
		t.Errorf("offline by commit: %+v %v", r2, err)
	}
	if hub.count() != n {
		t.Error("offline resolution made a request")
	}
}

func TestToken(t *testing.T) {
	hub := newHub(t)
	env := testEnv(t, hub.URL)
	env.Token = "hf_secret"
	if _, err := ResolveWith(context.Background(), "org/name", env); err != nil {
		t.Fatal(err)
	}
	for i, a := range hub.auth {
		if a != "Bearer hf_secret" {
			t.Errorf("request %d: Authorization %q", i, a)
		}
	}
}

func TestEnvFrom(t *testing.T) {
	home := t.TempDir()
	tokDir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(tokDir, "token"), []byte("hf_fromfile\n"), 0o600))
	cases := []struct {
		name string
		vars map[string]string
		want Env
	}{
		{"defaults", map[string]string{"HOME": home},
			Env{CacheDir: filepath.Join(home, ".cache", "huggingface", "hub"), Endpoint: DefaultEndpoint}},
		{"xdg", map[string]string{"HOME": home, "XDG_CACHE_HOME": "/x"},
			Env{CacheDir: "/x/huggingface/hub", Endpoint: DefaultEndpoint}},
		{"hf_home and its token file", map[string]string{"HOME": home, "XDG_CACHE_HOME": "/x", "HF_HOME": tokDir},
			Env{CacheDir: filepath.Join(tokDir, "hub"), Endpoint: DefaultEndpoint, Token: "hf_fromfile"}},
		{"implicit token disabled", map[string]string{"HOME": home, "HF_HOME": tokDir, "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1"},
			Env{CacheDir: filepath.Join(tokDir, "hub"), Endpoint: DefaultEndpoint}},
		{"hub cache wins, tilde", map[string]string{"HOME": home, "HF_HOME": "/h", "HF_HUB_CACHE": "~/c", "HUGGINGFACE_HUB_CACHE": "/old"},
			Env{CacheDir: filepath.Join(home, "c"), Endpoint: DefaultEndpoint}},
		{"legacy cache", map[string]string{"HOME": home, "HUGGINGFACE_HUB_CACHE": "/old"},
			Env{CacheDir: "/old", Endpoint: DefaultEndpoint}},
		{"endpoint, tokens, offline", map[string]string{"HOME": home, "HF_ENDPOINT": "https://mirror.example/", "HF_TOKEN": " t1 ", "HUGGING_FACE_HUB_TOKEN": "t2", "HF_HUB_OFFLINE": "yes"},
			Env{CacheDir: filepath.Join(home, ".cache", "huggingface", "hub"), Endpoint: "https://mirror.example", Token: "t1", Offline: true}},
		{"legacy token, token path", map[string]string{"HOME": home, "HUGGING_FACE_HUB_TOKEN": "t2", "HF_TOKEN_PATH": filepath.Join(tokDir, "token")},
			Env{CacheDir: filepath.Join(home, ".cache", "huggingface", "hub"), Endpoint: DefaultEndpoint, Token: "t2"}},
		{"transformers offline", map[string]string{"HOME": home, "TRANSFORMERS_OFFLINE": "On"},
			Env{CacheDir: filepath.Join(home, ".cache", "huggingface", "hub"), Endpoint: DefaultEndpoint, Offline: true}},
		{"offline 0", map[string]string{"HOME": home, "HF_HUB_OFFLINE": "0"},
			Env{CacheDir: filepath.Join(home, ".cache", "huggingface", "hub"), Endpoint: DefaultEndpoint}},
	}
	for _, c := range cases {
		got := EnvFrom(func(k string) string { return c.vars[k] })
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	for _, v := range []string{"1", "true", "TRUE", "yes", "on", "On"} {
		if !isTrue(v) {
			t.Errorf("isTrue(%q) = false", v)
		}
	}
}

func TestBadRepoIDs(t *testing.T) {
	env := testEnv(t, "http://127.0.0.1:1")
	for _, s := range []string{"", "noslash", "a/b/c", "org/name@", "/name", "org/", "org/-name", "org/na--me",
		"org/na..me", "org/na me", "org/name@a b", "org/name@../x", "org/name@a//b", "org/name@x@y", "o@r/name"} {
		_, err := ResolveWith(context.Background(), s, env)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalidRepo) {
			t.Errorf("%q: got %v, want an ErrInvalidRepo", s, err)
			continue
		}
		if !strings.Contains(err.Error(), `"`+s+`"`) || !strings.Contains(err.Error(), `"org/name" or "org/name@revision"`) {
			t.Errorf("%q: message %q names neither what was given nor the form", s, err)
		}
	}
	for _, s := range []string{"org/name", "Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B@main", "a_/b_@refs/pr/12", "o/n@v1.0"} {
		if _, err := ParseRepo(s); err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
	}
	if len(cacheFiles(t, env.CacheDir)) != 0 {
		t.Error("a refused id wrote to the cache")
	}
}

func TestHubErrors(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		token   string
		kind    error
		status  int
		want    []string
	}{
		{"401", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Error-Code", "GatedRepo")
			w.Header().Set("X-Error-Message", "Access to model org/name is restricted.")
			http.Error(w, "gated", http.StatusUnauthorized)
		}, "", ErrUnauthorized, 401, []string{"gated or private", "no token was sent", "export HF_TOKEN=", "/settings/tokens",
			"accept the model's licence on its page", "/org/name,", "pass a path to a tokenizer.json", "Access to model org/name is restricted."}},
		{"401 unknown repo", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Error-Code", "RepositoryNotFound")
			http.Error(w, "Invalid username or password.", http.StatusUnauthorized)
		}, "", ErrUnauthorized, 401, []string{"does not exist, or it is private or gated", "export HF_TOKEN="}},
		{"403", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "forbidden", http.StatusForbidden)
		}, "hf_x", ErrUnauthorized, 403, []string{"gated or private", "the token sent (HF_TOKEN) does not give access", "export HF_TOKEN=",
			"accept the model's licence", "pass a path to a tokenizer.json"}},
		{"404", func(w http.ResponseWriter, r *http.Request) {
			http.NotFound(w, r)
		}, "", ErrNotFound, 404, []string{"no such repo, revision or file", "check the repo id and the revision", "pass a path to a tokenizer.json"}},
		{"404 repo", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Error-Code", "RepositoryNotFound")
			http.NotFound(w, r)
		}, "", ErrNotFound, 404, []string{"no repo org/name on the hub", "check the repo id"}},
		{"404 entry", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Error-Code", "EntryNotFound")
			w.Header().Set("X-Repo-Commit", commitMain)
			http.NotFound(w, r)
		}, "", ErrNotFound, 404, []string{`the repo has no tokenizer.json at revision "main"`}},
		{"500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "\n  internal trouble\nsecond line", http.StatusInternalServerError)
		}, "", ErrStatus, 500, []string{"500 Internal Server Error: internal trouble;", "try again later", "pass a path"}},
		{"no commit header", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<html>a captive portal</html>"))
		}, "", ErrBadResponse, 200, []string{"X-Repo-Commit", "HF_ENDPOINT"}},
		{"no etag", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Repo-Commit", commitMain)
			w.Write([]byte(tokBody))
		}, "", ErrBadResponse, 200, []string{"ETag"}},
		{"truncated body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Repo-Commit", commitMain)
			w.Header().Set("ETag", etagTok)
			w.Header().Set("Content-Length", "100000")
			w.Write([]byte(tokBody))
		}, "", ErrUnreachable, 0, []string{"could not be reached"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hub := newHub(t)
			hub.override = c.handler
			env := testEnv(t, hub.URL)
			env.Token = c.token
			_, err := ResolveWith(context.Background(), "org/name", env)
			checkErr(t, err, c.kind, c.status, hub.URL+"/org/name/resolve/main/tokenizer.json", c.want)
			if files := cacheFiles(t, env.CacheDir); len(files) != 0 {
				t.Errorf("the failure left %q in the cache", files)
			}
		})
	}
}

func checkErr(t *testing.T, err error, kind error, status int, url string, want []string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want an *Error", err, err)
	}
	if !errors.Is(err, kind) || e.Status != status || e.URL != url || !strings.HasPrefix(e.Repo, "org/name") {
		t.Errorf("got kind %v status %d URL %q repo %q, want %v %d %q", e.Kind, e.Status, e.URL, e.Repo, kind, status, url)
	}
	msg := err.Error()
	for _, w := range append([]string{"org/name", url}, want...) {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q lacks %q", msg, w)
		}
	}
}

func TestUnreachable(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // its port now refuses connections
	env := testEnv(t, dead.URL)
	_, err := ResolveWith(context.Background(), "org/name", env)
	checkErr(t, err, ErrUnreachable, 0, dead.URL+"/org/name/resolve/main/tokenizer.json",
		[]string{"could not be reached", "HF_ENDPOINT", env.CacheDir, "huggingface-cli download org/name tokenizer.json", "pass a path"})
	if strings.Count(err.Error(), dead.URL+"/org/name") != 1 {
		t.Errorf("the URL is not given exactly once: %v", err)
	}
	if files := cacheFiles(t, env.CacheDir); len(files) != 0 {
		t.Errorf("left %q", files)
	}

	// A hub that never answers: the timeout ends it.
	stall := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stall:
		}
	}))
	defer hang.Close()
	defer close(stall)
	env = testEnv(t, hang.URL)
	env.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err = ResolveWith(context.Background(), "org/name@v2", env)
	checkErr(t, err, ErrUnreachable, 0, hang.URL+"/org/name/resolve/v2/tokenizer.json",
		[]string{"within 200ms", "--revision v2"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not wrap context.DeadlineExceeded", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

func TestOfflineNotCached(t *testing.T) {
	hub := newHub(t)
	env := testEnv(t, hub.URL)
	env.Offline = true
	_, err := ResolveWith(context.Background(), "org/name", env)
	checkErr(t, err, ErrOffline, 0, hub.URL+"/org/name/resolve/main/tokenizer.json",
		[]string{"not in the Hugging Face cache at " + filepath.Join(env.CacheDir, "models--org--name"), "HF_HUB_OFFLINE", "unset", "huggingface-cli download"})
	if hub.count() != 0 {
		t.Error("offline mode made a request")
	}
	// A ref whose snapshot lacks the file is no hit either.
	must(t, os.MkdirAll(filepath.Join(env.CacheDir, "models--org--name", "refs"), 0o755))
	must(t, os.WriteFile(filepath.Join(env.CacheDir, "models--org--name", "refs", "main"), []byte(commitMain), 0o644))
	if _, err := ResolveWith(context.Background(), "org/name", env); !errors.Is(err, ErrOffline) {
		t.Errorf("dangling ref: %v", err)
	}
}

func TestRedirectToOtherHost(t *testing.T) {
	content := tokBody + " from the CDN"
	sum := sha256.Sum256([]byte(content))
	lfsEtag := hex.EncodeToString(sum[:])

	var mu sync.Mutex
	var cdnAuth []string
	cdnBody := content
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cdnAuth = append(cdnAuth, r.Header.Get("Authorization"))
		body := cdnBody
		mu.Unlock()
		w.Header().Set("ETag", `"s3-etag-not-this-one"`)
		w.Write([]byte(body))
	}))
	defer cdn.Close()
	hub := newHub(t)
	hub.override = func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/"+ConfigFile) {
			w.Header().Set("X-Repo-Commit", commitMain)
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.NotFound(w, r)
			return
		}
		// A renamed repo's relative redirect first, then the LFS redirect to the CDN.
		if strings.HasPrefix(r.URL.Path, "/old/name/") {
			http.Redirect(w, r, strings.Replace(r.URL.Path, "/old/", "/org/", 1), http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("X-Repo-Commit", commitMain)
		w.Header().Set("X-Linked-Etag", `"`+lfsEtag+`"`)
		w.Header().Set("ETag", `W/"`+etagTok+`"`)
		http.Redirect(w, r, cdn.URL+"/repos/xx/yy/"+lfsEtag+"?sig=1", http.StatusFound)
	}
	env := testEnv(t, hub.URL)
	env.Token = "hf_secret"
	r, err := ResolveWith(context.Background(), "old/name", env)
	if err != nil {
		t.Fatal(err)
	}
	if r.Commit != commitMain {
		t.Errorf("commit %q", r.Commit)
	}
	checkLink(t, r.Path, lfsEtag, content)
	if want := filepath.Join(env.CacheDir, "models--old--name", "snapshots", commitMain, "tokenizer.json"); r.Path != want {
		t.Errorf("path %q, want %q", r.Path, want)
	}
	if len(cdnAuth) != 1 || cdnAuth[0] != "" {
		t.Errorf("the CDN got Authorization %q", cdnAuth)
	}
	if len(hub.auth) < 2 || hub.auth[0] != "Bearer hf_secret" || hub.auth[1] != "Bearer hf_secret" {
		t.Errorf("the hub got Authorization %q", hub.auth)
	}

	// A corrupted download (content not matching the LFS sha256): an error, nothing left behind.
	mu.Lock()
	cdnBody = content + "garbage"
	mu.Unlock()
	env = testEnv(t, hub.URL)
	_, err = ResolveWith(context.Background(), "org/name", env)
	checkErr(t, err, ErrBadResponse, 200, hub.URL+"/org/name/resolve/main/tokenizer.json", []string{"sha256", "corrupted"})
	if files := cacheFiles(t, env.CacheDir); len(files) != 0 {
		t.Errorf("left %q", files)
	}
}

func TestCacheNotWritable(t *testing.T) {
	hub := newHub(t)
	env := testEnv(t, hub.URL)
	file := filepath.Join(env.CacheDir, "a-file")
	must(t, os.WriteFile(file, nil, 0o644))
	env.CacheDir = filepath.Join(file, "hub") // under a file: not creatable, even by root
	_, err := ResolveWith(context.Background(), "org/name", env)
	checkErr(t, err, ErrCache, 0, hub.URL+"/org/name/resolve/main/tokenizer.json", []string{"could not write", "HF_HUB_CACHE"})
}

func TestCDNStatus(t *testing.T) {
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Request has expired", http.StatusForbidden)
	}))
	defer cdn.Close()
	hub := newHub(t)
	hub.override = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Repo-Commit", commitMain)
		w.Header().Set("X-Linked-Etag", strings.Repeat("ab", 32))
		http.Redirect(w, r, cdn.URL+"/blob?X-Amz-Signature=s", http.StatusFound)
	}
	env := testEnv(t, hub.URL)
	_, err := ResolveWith(context.Background(), "org/name", env)
	checkErr(t, err, ErrStatus, 403, hub.URL+"/org/name/resolve/main/tokenizer.json",
		[]string{"redirected to " + cdn.URL + "/blob", "403 Forbidden: Request has expired", "try again later"})
	if strings.Contains(err.Error(), "X-Amz-Signature") {
		t.Errorf("the message shows the signed query: %v", err)
	}
	if files := cacheFiles(t, env.CacheDir); len(files) != 0 {
		t.Errorf("left %q", files)
	}
}
