package metrics

import (
	"sort"
	"strconv"
	"strings"
	"sync"
)

// FailureKind names how a request failed in the words a user looks for on the terminal — refused,
// dns, tls, connect, timeout, HTTP 404, HTTP 429, HTTP 503, reset, closed (before answering), stream
// cut, bad stream, not SSE, stream error, empty answer, invalid answer, transport — or "" for a success or a cancellation. It reads only the record,
// so it works on AIPerf's records too (whose messages fall under their type).
func FailureKind(r *Record) string {
	e := r.Error
	if e == nil || r.WasCancelled || e.Type == ErrTypeCancelled {
		return ""
	}
	if e.Code.OK && e.Code.V >= 400 && e.Code.V < 600 && e.Type != ErrTypeSSE { // an SSE error carries 502 too
		return "HTTP " + strconv.Itoa(e.Code.V)
	}
	msg := strings.ToLower(e.Message)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(msg, w) {
				return true
			}
		}
		return false
	}
	switch e.Type {
	case ErrTypeTimeout:
		return "timeout"
	case ErrTypeConnect:
		switch {
		case has("tls", "x509", "certificate"):
			return "tls"
		case has("refused"):
			return "refused"
		case has("no such host", "lookup", "resolve"):
			return "dns"
		}
		return "connect"
	case ErrTypeSSE:
		return "stream error"
	case ErrTypeInvalidResult:
		if has("no content") {
			return "empty answer"
		}
		return "invalid answer" // not what was asked: a retrieval answer's count, a body that is not the API's
	case ErrTypeTransport:
		switch {
		case has("reset"):
			return "reset"
		case has("before answering"):
			return "closed"
		case has("closed mid-answer", "stream cut", "without data: [done]", "stream ended without", "closed the connection"):
			return "stream cut"
		case has("bad json", "event was over"):
			return "bad stream"
		case has("text/event-stream"):
			return "not SSE"
		}
		return "transport"
	}
	return e.Type
}

// Unanswered reports whether a failed request got no response byte at all: the target was not
// there (refused, unreachable, reset or closed before answering, a timeout before the headers).
// An HTTP status is an answer.
func Unanswered(r *Record) bool {
	return r.Error != nil && !r.WasCancelled && !r.Error.Code.OK && !r.RequestAckNs.OK && FailureKind(r) != ""
}

// Refused reports whether the server answered but refused to serve: 429, or a 5xx. With Unanswered
// these are the failures a load generator backs off from rather than hammer.
func Refused(r *Record) bool {
	return r.Error != nil && r.Error.Code.OK && r.Error.Type != ErrTypeSSE &&
		(r.Error.Code.V == StatusTooManyRequests || r.Error.Code.V >= 500 && r.Error.Code.V < 600)
}

// FailureTally counts failures by kind and keeps each kind's first message verbatim, for the
// terminal: "errors: refused × 9312 (first: cannot connect to ...)". Safe for concurrent use.
type FailureTally struct {
	mu    sync.Mutex
	kinds map[string]*KindCount
}

// KindCount is one kind of failure: how many, and the first one's message.
type KindCount struct {
	Kind  string
	Count int
	First string
}

// Add counts r when it failed.
func (t *FailureTally) Add(r *Record) {
	kind := FailureKind(r)
	if kind == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kinds == nil {
		t.kinds = map[string]*KindCount{}
	}
	k := t.kinds[kind]
	if k == nil {
		k = &KindCount{Kind: kind, First: r.Error.Message}
		t.kinds[kind] = k
	}
	k.Count++
}

// Kinds lists the kinds seen, most frequent first.
func (t *FailureTally) Kinds() []KindCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]KindCount, 0, len(t.kinds))
	for _, k := range t.kinds {
		out = append(out, *k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

// Summary is one line of the kinds, most frequent first, each with its first message:
// `refused × 12 (first: cannot connect to ...); HTTP 503 × 2 (first: ...)`. "" when nothing failed.
func (t *FailureTally) Summary() string {
	var parts []string
	for _, k := range t.Kinds() {
		parts = append(parts, k.Kind+" × "+strconv.Itoa(k.Count)+" (first: "+k.First+")")
	}
	return strings.Join(parts, "; ")
}
