// Package hfhub finds a Hugging Face repo's tokenizer.json: in the local Hugging Face cache first,
// else fetched from the hub into that cache (docs/tokenizers.md).
//
// The cache is the one huggingface_hub (the Python library) keeps, laid out as it lays it out, so the
// two share it both ways:
//
//	{cache}/models--{org}--{name}/refs/{revision}              the commit hash a branch or tag points at
//	{cache}/models--{org}--{name}/blobs/{etag}                 the file's bytes, named by its ETag
//	{cache}/models--{org}--{name}/snapshots/{commit}/{file}    a relative symlink to ../../blobs/{etag}
//	{cache}/models--{org}--{name}/.no_exist/{commit}/{file}    an empty marker: the file is not in the repo
//
// The environment variables read are huggingface_hub's: HF_HUB_CACHE (and the older
// HUGGINGFACE_HUB_CACHE), HF_HOME, XDG_CACHE_HOME, HF_ENDPOINT, HF_TOKEN (and the older
// HUGGING_FACE_HUB_TOKEN), the token file HF_TOKEN_PATH or HF_HOME/token, HF_HUB_DISABLE_IMPLICIT_TOKEN,
// and HF_HUB_OFFLINE (and TRANSFORMERS_OFFLINE).
package hfhub

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultEndpoint is the public hub, used when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// DefaultTimeout bounds the network part of one resolution (all requests, redirects and downloads
// together) when Env.Timeout is zero, so that a dead or stalled hub never hangs a run.
const DefaultTimeout = 2 * time.Minute

// headerTimeout bounds the wait for each response's headers (the default client's only).
const headerTimeout = 30 * time.Second

// Files: the tokenizer itself (required) and its config (fetched alongside when the repo has one).
const (
	TokenizerFile = "tokenizer.json"
	ConfigFile    = "tokenizer_config.json"
)

// Env is everything a resolution depends on outside its arguments. EnvFromOS reads it from the
// environment as huggingface_hub does; tests build one by hand.
type Env struct {
	// CacheDir is the hub cache: the folder holding models--{org}--{name}/.
	CacheDir string
	// Endpoint is the hub's base URL, without a trailing slash; "" means DefaultEndpoint.
	Endpoint string
	// Token, when not "", is sent as "Authorization: Bearer {Token}" to the endpoint's host (never to
	// another host a redirect leads to).
	Token string
	// Offline forbids any request: a repo not already in the cache is an error (ErrOffline).
	Offline bool
	// Timeout bounds the network part of the resolution; 0 means DefaultTimeout, < 0 none (the
	// context's deadline, if any, still applies).
	Timeout time.Duration
	// Client makes the requests; nil means a default client (proxy from the environment, 30 s to
	// each response's headers). Its redirect policy is not used: redirects are followed here.
	Client *http.Client
}

// EnvFromOS returns the Env that the process environment describes (see EnvFrom).
func EnvFromOS() Env { return EnvFrom(os.Getenv) }

// EnvFrom returns the Env that getenv describes, as huggingface_hub reads it:
//   - CacheDir: HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else {HF_HOME}/hub, where HF_HOME defaults
//     to {XDG_CACHE_HOME}/huggingface, and XDG_CACHE_HOME to ~/.cache; a leading "~" is the home
//     folder (HOME, else the user's home as the OS reports it).
//   - Endpoint: HF_ENDPOINT without trailing slashes, else DefaultEndpoint.
//   - Token: HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the contents of the token file (HF_TOKEN_PATH,
//     else {HF_HOME}/token), each trimmed of white space; none when HF_HUB_DISABLE_IMPLICIT_TOKEN is
//     true.
//   - Offline: HF_HUB_OFFLINE (else TRANSFORMERS_OFFLINE) is one of 1, true, yes, on (any case).
func EnvFrom(getenv func(string) string) Env {
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	expand := func(p string) string {
		if p == "~" {
			return home
		}
		if strings.HasPrefix(p, "~/") || strings.HasPrefix(p, "~"+string(filepath.Separator)) {
			return filepath.Join(home, p[2:])
		}
		return p
	}
	xdg := getenv("XDG_CACHE_HOME")
	if xdg == "" {
		xdg = filepath.Join("~", ".cache")
	}
	hfHome := getenv("HF_HOME")
	if hfHome == "" {
		hfHome = filepath.Join(xdg, "huggingface")
	}
	hfHome = expand(hfHome)
	cache := getenv("HF_HUB_CACHE")
	if cache == "" {
		cache = getenv("HUGGINGFACE_HUB_CACHE")
	}
	if cache == "" {
		cache = filepath.Join(hfHome, "hub")
	}
	env := Env{CacheDir: expand(cache)}

	env.Endpoint = strings.TrimRight(getenv("HF_ENDPOINT"), "/")
	if env.Endpoint == "" {
		env.Endpoint = DefaultEndpoint
	}

	if !isTrue(getenv("HF_HUB_DISABLE_IMPLICIT_TOKEN")) {
		env.Token = strings.TrimSpace(getenv("HF_TOKEN"))
		if env.Token == "" {
			env.Token = strings.TrimSpace(getenv("HUGGING_FACE_HUB_TOKEN"))
		}
		if env.Token == "" {
			tokenPath := getenv("HF_TOKEN_PATH")
			if tokenPath == "" {
				tokenPath = filepath.Join(hfHome, "token")
			}
			if b, err := os.ReadFile(expand(tokenPath)); err == nil {
				env.Token = strings.TrimSpace(string(b))
			}
		}
	}

	off := getenv("HF_HUB_OFFLINE")
	if off == "" {
		off = getenv("TRANSFORMERS_OFFLINE")
	}
	env.Offline = isTrue(off)
	return env
}

// isTrue is huggingface_hub's reading of a boolean environment variable.
func isTrue(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// Result is where a repo's tokenizer lies in the cache.
type Result struct {
	// Path is the snapshot's tokenizer.json (a symlink into blobs/, or a plain file where the
	// filesystem has no symlinks).
	Path string
	// ConfigPath is the snapshot's tokenizer_config.json, "" when it is not in the cache (the repo
	// has none, or it was not fetched).
	ConfigPath string
	// Commit is the 40-hex commit the snapshot is of.
	Commit string
	// Cached is true when no request was made.
	Cached bool
}

// Resolve returns the local path of repo's tokenizer.json and the commit it came from. repo is
// "org/name" or "org/name@revision" (a branch, a tag or a 40-hex commit; default "main"). It is
// ResolveWith with EnvFromOS; every error is an *Error.
func Resolve(ctx context.Context, repo string) (path, commit string, err error) {
	r, err := ResolveWith(ctx, repo, EnvFromOS())
	if err != nil {
		return "", "", err
	}
	return r.Path, r.Commit, nil
}

// ResolveWith resolves repo ("org/name" or "org/name@revision") in env's cache, offline first:
//   - refs/{revision} names a commit whose snapshot holds tokenizer.json, or revision is itself a
//     40-hex commit whose snapshot holds it: that file, with no request;
//   - else, unless env.Offline, GET {Endpoint}/{org}/{name}/resolve/{revision}/tokenizer.json
//     (redirects followed, the token sent to the endpoint's host only), the commit from the hub's
//     X-Repo-Commit header and the blob's name from X-Linked-Etag, else ETag; the blob is written
//     atomically, then the snapshot's symlink, then refs/{revision}. tokenizer_config.json of the same
//     commit is then fetched the same way, best effort: a repo without one gets a .no_exist marker, and
//     any failure with it leaves ConfigPath "" without failing the resolution.
//
// A failure leaves no partial file in the cache. Every error is an *Error; errors.Is tells its kind
// (ErrInvalidRepo, ErrUnauthorized, ErrNotFound, ErrUnreachable, ErrOffline, ErrStatus, ErrBadResponse,
// ErrCache).
func ResolveWith(ctx context.Context, repo string, env Env) (Result, error) {
	id, err := ParseRepo(repo)
	if err != nil {
		return Result{}, err
	}
	if env.CacheDir == "" {
		return Result{}, newError(ErrCache, id, "", 0, nil,
			fmt.Sprintf("Hugging Face repo %s: no Hugging Face cache folder (set HF_HUB_CACHE or HF_HOME)", id.Given))
	}
	if env.Endpoint == "" {
		env.Endpoint = DefaultEndpoint
	}
	env.Endpoint = strings.TrimRight(env.Endpoint, "/")
	store := filepath.Join(env.CacheDir, id.folder())

	if r, ok := lookupCache(store, id.Revision); ok {
		return r, nil
	}
	url := id.fileURL(env.Endpoint, id.Revision, TokenizerFile)
	if env.Offline {
		return Result{}, newError(ErrOffline, id, url, 0, nil, fmt.Sprintf(
			"Hugging Face repo %s: the tokenizer is not in the Hugging Face cache at %s, and offline mode "+
				"(HF_HUB_OFFLINE) forbids fetching %s; unset HF_HUB_OFFLINE to fetch it, pre-populate the "+
				"cache (%s), or pass a path to a tokenizer.json",
			id.Given, store, url, id.downloadHint(env.CacheDir)))
	}

	timeout := env.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	f := fetcher{env: env, client: env.Client, id: id, store: store, timeout: timeout}
	if f.client == nil {
		f.client = defaultClient()
	}

	commit, path, err := f.fetch(ctx, id.Revision, TokenizerFile, true)
	if err != nil {
		return Result{}, err
	}
	r := Result{Path: path, Commit: commit}
	if cp, err := f.fetchOptional(ctx, commit, ConfigFile); err == nil {
		r.ConfigPath = cp
	}
	return r, nil
}

// lookupCache is the offline look-up: the snapshot that refs/{revision} names, or the snapshot
// {revision} when it is a commit.
func lookupCache(store, revision string) (Result, bool) {
	var commit string
	if b, err := os.ReadFile(filepath.Join(store, "refs", filepath.FromSlash(revision))); err == nil {
		if c := strings.TrimSpace(string(b)); isCommit(c) {
			commit = c
		}
	}
	if commit == "" && isCommit(revision) {
		commit = revision
	}
	if commit == "" {
		return Result{}, false
	}
	snap := filepath.Join(store, "snapshots", commit)
	p := filepath.Join(snap, TokenizerFile)
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() { // Stat follows the symlink: a dangling one is a miss
		return Result{}, false
	}
	r := Result{Path: p, Commit: commit, Cached: true}
	if cp := filepath.Join(snap, ConfigFile); isRegular(cp) {
		r.ConfigPath = cp
	}
	return r, true
}

func isRegular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func defaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = headerTimeout
	return &http.Client{Transport: t}
}

// fetcher downloads files of one repo into its cache folder.
type fetcher struct {
	env     Env
	client  *http.Client
	id      RepoID
	store   string
	timeout time.Duration
}

// hubResponse is the final response of a request and the hub's metadata along its redirects.
type hubResponse struct {
	resp    *http.Response
	url     string // the URL first requested
	final   string // the URL that gave resp, when on another host than the endpoint's; else ""
	commit  string // X-Repo-Commit
	etag    string // X-Linked-Etag, else ETag, of the response that carried the commit
	linked  bool   // etag came from X-Linked-Etag (an LFS file: the etag is its sha256)
	errCode string // X-Error-Code
	errMsg  string // X-Error-Message
}

const maxRedirects = 10

// get requests rawURL, following redirects by hand: the token goes only to the endpoint's scheme and
// host (port included), and the hub's headers are taken from the last response that carries
// X-Repo-Commit (the hub's own, before a redirect to a CDN).
func (f *fetcher) get(ctx context.Context, rawURL string) (*hubResponse, error) {
	client := *f.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base, err := url.Parse(f.env.Endpoint)
	if err != nil {
		return nil, newError(ErrUnreachable, f.id, rawURL, 0, err, fmt.Sprintf(
			"Hugging Face repo %s: HF_ENDPOINT %q is not a URL: %v", f.id.Given, f.env.Endpoint, err))
	}
	hr := &hubResponse{url: rawURL}
	cur := rawURL
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cur, nil)
		if err != nil {
			return nil, f.unreachable(ctx, rawURL, err)
		}
		req.Header.Set("User-Agent", "plload-hfhub/1")
		if f.env.Token != "" && req.URL.Scheme == base.Scheme && req.URL.Host == base.Host {
			req.Header.Set("Authorization", "Bearer "+f.env.Token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, f.unreachable(ctx, rawURL, err)
		}
		if c := resp.Header.Get("X-Repo-Commit"); c != "" {
			hr.commit = c
			hr.etag, hr.linked = resp.Header.Get("X-Linked-Etag"), true
			if hr.etag == "" {
				hr.etag, hr.linked = resp.Header.Get("ETag"), false
			}
		}
		if c := resp.Header.Get("X-Error-Code"); c != "" {
			hr.errCode, hr.errMsg = c, resp.Header.Get("X-Error-Message")
		}
		loc := resp.Header.Get("Location")
		if !isRedirect(resp.StatusCode) || loc == "" {
			hr.resp = resp
			if req.URL.Scheme != base.Scheme || req.URL.Host != base.Host {
				short := *req.URL // without the query: a CDN's carries a signature
				short.RawQuery, short.User = "", nil
				hr.final = short.String()
			}
			return hr, nil
		}
		drain(resp)
		if hop >= maxRedirects {
			return nil, newError(ErrBadResponse, f.id, rawURL, resp.StatusCode, nil, fmt.Sprintf(
				"Hugging Face repo %s: more than %d redirects fetching %s", f.id.Given, maxRedirects, rawURL))
		}
		next, err := req.URL.Parse(loc)
		if err != nil {
			return nil, newError(ErrBadResponse, f.id, rawURL, resp.StatusCode, err, fmt.Sprintf(
				"Hugging Face repo %s: fetching %s: a redirect to a bad Location %q: %v", f.id.Given, rawURL, loc, err))
		}
		cur = next.String()
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// fetch downloads file at revision into the cache and returns the commit and the snapshot path.
// writeRef says to record refs/{revision} (not done when revision is the commit itself).
func (f *fetcher) fetch(ctx context.Context, revision, file string, writeRef bool) (commit, path string, err error) {
	u := f.id.fileURL(f.env.Endpoint, revision, file)
	hr, err := f.get(ctx, u)
	if err != nil {
		return "", "", err
	}
	resp := hr.resp
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", f.statusError(hr, revision, file)
	}
	if !isCommit(hr.commit) {
		drain(resp)
		return "", "", newError(ErrBadResponse, f.id, u, resp.StatusCode, nil, fmt.Sprintf(
			"Hugging Face repo %s: %s answered without a valid X-Repo-Commit header (got %q): it does not look like a "+
				"Hugging Face hub; check HF_ENDPOINT (now %s) and any proxy, or pass a path to a tokenizer.json",
			f.id.Given, u, hr.commit, f.env.Endpoint))
	}
	etag := normalizeEtag(hr.etag)
	if !safeName(etag) {
		drain(resp)
		return "", "", newError(ErrBadResponse, f.id, u, resp.StatusCode, nil, fmt.Sprintf(
			"Hugging Face repo %s: %s answered without a usable ETag (got %q), so the file cannot be cached; check "+
				"HF_ENDPOINT (now %s) and any proxy, or pass a path to a tokenizer.json",
			f.id.Given, u, hr.etag, f.env.Endpoint))
	}
	commit = hr.commit
	blobs := filepath.Join(f.store, "blobs")
	blob := filepath.Join(blobs, etag)
	if !isRegular(blob) {
		var verify string
		if hr.linked && isHex(etag, 64) {
			verify = etag // an LFS file's etag is its sha256
		}
		if err := f.writeBlob(ctx, resp.Body, blobs, blob, verify, u); err != nil {
			return "", "", err
		}
	} else {
		drain(resp)
	}
	snap := filepath.Join(f.store, "snapshots", commit)
	path = filepath.Join(snap, file)
	if err := linkSnapshot(blob, path); err != nil {
		return "", "", f.cacheError(u, err)
	}
	if writeRef && revision != commit {
		ref := filepath.Join(f.store, "refs", filepath.FromSlash(revision))
		if err := writeFileAtomic(ref, []byte(commit)); err != nil {
			return "", "", f.cacheError(u, err)
		}
	}
	return commit, path, nil
}

// fetchOptional fetches file of commit when the repo has it; a 404 leaves the .no_exist marker
// huggingface_hub leaves and returns an error, as does any other failure.
func (f *fetcher) fetchOptional(ctx context.Context, commit, file string) (string, error) {
	snap := filepath.Join(f.store, "snapshots", commit, file)
	if isRegular(snap) {
		return snap, nil
	}
	if _, err := os.Stat(filepath.Join(f.store, ".no_exist", commit, file)); err == nil {
		return "", os.ErrNotExist
	}
	_, p, err := f.fetch(ctx, commit, file, false)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusNotFound {
			if e.code != "RepositoryNotFound" && e.code != "RevisionNotFound" {
				marker := filepath.Join(f.store, ".no_exist", commit, file)
				if os.MkdirAll(filepath.Dir(marker), 0o755) == nil {
					if mf, err := os.OpenFile(marker, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
						mf.Close()
					}
				}
			}
		}
		return "", err
	}
	return p, nil
}

// writeBlob copies body to blob through a temporary file in blobs/, checking its sha256 against
// verify when not "".
func (f *fetcher) writeBlob(ctx context.Context, body io.Reader, blobs, blob, verify, u string) error {
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return f.cacheError(u, err)
	}
	tmp, err := os.CreateTemp(blobs, filepath.Base(blob)+".*.incomplete")
	if err != nil {
		return f.cacheError(u, err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), body); err != nil {
		if werr := (*os.PathError)(nil); errors.As(err, &werr) && werr.Path == tmp.Name() {
			return f.cacheError(u, err)
		}
		return f.unreachable(ctx, u, err)
	}
	if verify != "" {
		if got := hex.EncodeToString(h.Sum(nil)); got != verify {
			return newError(ErrBadResponse, f.id, u, http.StatusOK, nil, fmt.Sprintf(
				"Hugging Face repo %s: the file downloaded from %s has sha256 %s, not the %s its ETag promises; the "+
					"download was corrupted: try again, or pass a path to a tokenizer.json",
				f.id.Given, u, got, verify))
		}
	}
	if err := tmp.Chmod(0o644); err != nil {
		return f.cacheError(u, err)
	}
	if err := tmp.Close(); err != nil {
		return f.cacheError(u, err)
	}
	if err := os.Rename(tmp.Name(), blob); err != nil {
		return f.cacheError(u, err)
	}
	ok = true
	return nil
}

// linkSnapshot makes path a relative symlink to blob (as huggingface_hub does), replacing what is
// there atomically; where symlinks fail, a copy of blob.
func linkSnapshot(blob, path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, blob)
	if err != nil {
		return err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"."+hex.EncodeToString(rnd[:])+".link")
	if err := os.Symlink(rel, tmp); err == nil {
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return err
		}
		return nil
	}
	b, err := os.ReadFile(blob)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b)
}

// writeFileAtomic writes b to path through a temporary file in its folder.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// normalizeEtag is huggingface_hub's: without a weak prefix and quotes.
func normalizeEtag(e string) string {
	e = strings.TrimSpace(e)
	e = strings.TrimPrefix(e, "W/")
	return strings.Trim(e, `"`)
}

// safeName reports whether s can name a file in blobs/ without leaving it.
func safeName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 255 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
