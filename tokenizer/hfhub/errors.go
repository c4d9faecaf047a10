package hfhub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
)

// The kinds of failure. Every error ResolveWith returns is an *Error whose Kind is one of these, so
// errors.Is(err, ErrNotFound) and the like tell them apart.
var (
	// ErrInvalidRepo: the repo id is not "org/name" or "org/name@revision".
	ErrInvalidRepo = errors.New("invalid Hugging Face repo id")
	// ErrUnauthorized: the hub answered 401 or 403 (a gated or private repo, or a bad token).
	ErrUnauthorized = errors.New("not authorized by the Hugging Face hub")
	// ErrNotFound: the hub answered 404 (no such repo, revision or file).
	ErrNotFound = errors.New("not found on the Hugging Face hub")
	// ErrUnreachable: the hub could not be reached (network error, refused connection, timeout).
	//lint:ignore ST1005 the message begins with a proper noun, the hub's name
	ErrUnreachable = errors.New("Hugging Face hub unreachable")
	// ErrOffline: offline mode (HF_HUB_OFFLINE) and the tokenizer is not in the cache.
	ErrOffline = errors.New("not in the Hugging Face cache in offline mode")
	// ErrStatus: the hub answered another unexpected status.
	ErrStatus = errors.New("unexpected status from the Hugging Face hub")
	// ErrBadResponse: an answer that cannot be used (no X-Repo-Commit or ETag, a corrupted download,
	// a bad redirect).
	ErrBadResponse = errors.New("unusable answer from the Hugging Face hub")
	// ErrCache: the cache could not be written.
	//lint:ignore ST1005 the message begins with a proper noun, the hub's name
	ErrCache = errors.New("Hugging Face cache not writable")
)

// Error is a failure to resolve a repo's tokenizer. Its message names the repo, the URL (when a
// request was involved) and the fix.
type Error struct {
	Kind   error  // one of ErrInvalidRepo, ErrUnauthorized, ErrNotFound, ErrUnreachable, ErrOffline, ErrStatus, ErrBadResponse, ErrCache
	Repo   string // the repo id as given
	URL    string // the URL requested (or that would have been), "" when none
	Status int    // the HTTP status, 0 when there was no answer
	Err    error  // the underlying cause, nil when none

	code string // the hub's X-Error-Code
	msg  string
}

func (e *Error) Error() string { return e.msg }

// Unwrap gives both the kind and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func newError(kind error, id RepoID, u string, status int, cause error, msg string) *Error {
	return &Error{Kind: kind, Repo: id.Given, URL: u, Status: status, Err: cause, msg: msg}
}

// RepoID is a parsed "org/name[@revision]".
type RepoID struct {
	Org, Name string
	Revision  string // "main" when not given
	Given     string // as given
}

// Repo is "org/name".
func (r RepoID) Repo() string { return r.Org + "/" + r.Name }

// folder is the repo's folder in the cache, as huggingface_hub names it.
func (r RepoID) folder() string { return "models--" + r.Org + "--" + r.Name }

// fileURL is huggingface_hub's URL of a file: the revision escaped whole ("refs/pr/1" →
// "refs%2Fpr%2F1").
func (r RepoID) fileURL(endpoint, revision, file string) string {
	return endpoint + "/" + r.Org + "/" + r.Name + "/resolve/" + url.PathEscape(revision) + "/" + file
}

func (r RepoID) downloadHint(cacheDir string) string {
	rev := ""
	if r.Revision != "main" {
		rev = " --revision " + r.Revision
	}
	return fmt.Sprintf("e.g. HF_HUB_CACHE=%s huggingface-cli download %s %s %s%s", cacheDir, r.Repo(),
		TokenizerFile, ConfigFile, rev)
}

const repoForm = `"org/name" or "org/name@revision" (a branch, a tag or a 40-hex commit), e.g. "Qwen/Qwen2.5-7B-Instruct" or "meta-llama/Llama-3.1-8B@main"`

// ParseRepo parses and validates "org/name" or "org/name@revision" as huggingface_hub validates a
// repo id: each part of letters, digits, "_", "-" and ".", starting and ending with a letter, digit or
// "_", without "--" or "..", at most 96 characters in all. The revision (default "main") is a
// branch, a tag or a commit: no white space, "\", "..", or empty path parts. Its error is an *Error
// of kind ErrInvalidRepo.
func ParseRepo(s string) (RepoID, error) {
	bad := func(why string) (RepoID, error) {
		return RepoID{}, &Error{Kind: ErrInvalidRepo, Repo: s, msg: fmt.Sprintf(
			"%q is not a Hugging Face repo id (%s); the accepted form is %s", s, why, repoForm)}
	}
	if s == "" {
		return bad("it is empty")
	}
	repo, rev, hasRev := strings.Cut(s, "@")
	if hasRev {
		if rev == "" {
			return bad(`nothing follows "@"`)
		}
		if why := badRevision(rev); why != "" {
			return bad(why)
		}
	} else {
		rev = "main"
	}
	org, name, ok := strings.Cut(repo, "/")
	if !ok {
		return bad(`it has no "/" between org and name`)
	}
	if strings.Contains(name, "/") {
		return bad(`it has more than one "/"`)
	}
	if len(repo) > 96 {
		return bad("it is longer than 96 characters")
	}
	for _, part := range []string{org, name} {
		if why := badPart(part); why != "" {
			return bad(why)
		}
	}
	return RepoID{Org: org, Name: name, Revision: rev, Given: s}, nil
}

func isWordChar(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

func badPart(p string) string {
	if p == "" {
		return "the org or the name is empty"
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; !isWordChar(c) && c != '-' && c != '.' {
			return fmt.Sprintf("%q has a character other than letters, digits, '_', '-' and '.'", p)
		}
	}
	if !isWordChar(p[0]) || !isWordChar(p[len(p)-1]) {
		return fmt.Sprintf("%q starts or ends with '-' or '.'", p)
	}
	if strings.Contains(p, "--") || strings.Contains(p, "..") {
		return fmt.Sprintf(`%q has "--" or ".."`, p)
	}
	return ""
}

func badRevision(r string) string {
	if len(r) > 255 {
		return "the revision is longer than 255 characters"
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		if c <= ' ' || c == 0x7f || c == '\\' || c == '@' {
			return fmt.Sprintf("the revision %q has white space, a control character, '\\' or a second '@'", r)
		}
	}
	for _, part := range strings.Split(r, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Sprintf(`the revision %q has an empty, "." or ".." part`, r)
		}
	}
	return ""
}

// statusError turns a non-200 answer into an *Error; it reads and closes nothing but the first line
// of the body.
func (f *fetcher) statusError(hr *hubResponse, revision, file string) error {
	resp, u, id := hr.resp, hr.url, f.id
	page := f.env.Endpoint + "/" + id.Repo()
	detail := ""
	if hr.errMsg != "" {
		detail = " (the hub says: " + hr.errMsg + ")"
	}
	e := &Error{Repo: id.Given, URL: u, Status: resp.StatusCode, code: hr.errCode}
	status := resp.StatusCode
	if hr.final != "" {
		status = 0 // a CDN's 401, 403 or 404 (an expired signature, say) says nothing of the repo
	}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.Kind = ErrUnauthorized
		what := "the repo is gated or private"
		if hr.errCode == "RepositoryNotFound" {
			what = "the repo does not exist, or it is private or gated"
		}
		tok := "no token was sent"
		if f.env.Token != "" {
			tok = "the token sent (HF_TOKEN) does not give access to it"
		}
		e.msg = fmt.Sprintf("Hugging Face repo %s: the hub refused %s with %s%s: %s and %s; export HF_TOKEN=… (a token "+
			"from %s/settings/tokens), accept the model's licence on its page %s, or pass a path to a "+
			"tokenizer.json", id.Given, u, resp.Status, detail, what, tok, f.env.Endpoint, page)
	case http.StatusNotFound:
		e.Kind = ErrNotFound
		what := "no such repo, revision or file"
		switch hr.errCode {
		case "RepositoryNotFound":
			what = fmt.Sprintf("no repo %s on the hub", id.Repo())
		case "RevisionNotFound":
			what = fmt.Sprintf("the repo has no revision %q", revision)
		case "EntryNotFound":
			what = fmt.Sprintf("the repo has no %s at revision %q", file, revision)
		}
		e.msg = fmt.Sprintf("Hugging Face repo %s: %s (%s answered %s%s); check the repo id and the revision (%s), "+
			"or pass a path to a tokenizer.json", id.Given, what, u, resp.Status, detail, page)
	default:
		e.Kind = ErrStatus
		line := firstLine(resp.Body)
		if line != "" {
			line = ": " + line
		}
		who := u
		if hr.final != "" {
			who = fmt.Sprintf("%s, redirected to %s,", u, hr.final)
		}
		e.msg = fmt.Sprintf("Hugging Face repo %s: %s answered %s%s%s; try again later, check HF_ENDPOINT (now %s), "+
			"or pass a path to a tokenizer.json", id.Given, who, resp.Status, line, detail, f.env.Endpoint)
	}
	return e
}

func firstLine(r io.Reader) string {
	sc := bufio.NewScanner(io.LimitReader(r, 4096))
	sc.Buffer(make([]byte, 4096), 4096)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return l
		}
	}
	return ""
}

// unreachable is a network failure (or the timeout) on the way to u.
func (f *fetcher) unreachable(ctx context.Context, u string, cause error) error {
	why := cause.Error()
	var ue *url.Error
	if errors.As(cause, &ue) {
		why = ue.Err.Error() // without "Get <url>:", which the message gives once
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && f.timeout > 0 {
		why = fmt.Sprintf("no complete answer within %s (%s)", f.timeout, why)
	}
	return newError(ErrUnreachable, f.id, u, 0, cause, fmt.Sprintf(
		"Hugging Face repo %s: the Hugging Face hub could not be reached at %s: %s; check the network and any proxy, "+
			"set HF_ENDPOINT to a reachable hub or mirror (now %s), pre-populate the cache at %s (%s), or pass "+
			"a path to a tokenizer.json", f.id.Given, u, why, f.env.Endpoint, f.env.CacheDir,
		f.id.downloadHint(f.env.CacheDir)))
}

// cacheError is a failure to write the cache.
func (f *fetcher) cacheError(u string, cause error) error {
	return newError(ErrCache, f.id, u, 0, cause, fmt.Sprintf(
		"Hugging Face repo %s: could not write the file from %s into the Hugging Face cache at %s: %v; make it writable, "+
			"point HF_HUB_CACHE elsewhere, or pass a path to a tokenizer.json", f.id.Given,
		u, filepath.Clean(f.env.CacheDir), cause))
}
