package engine

import (
	"sync"
	"time"

	"github.com/plload/plload/metrics"
)

// Outage is a span of a stage in which every request failed the same way before any response
// byte, or got 429/5xx: the target was down or refusing, not slow.
type Outage struct {
	From, To time.Time // the first and last failure's end
	Kind     string    // metrics.FailureKind: refused, dns, tls, timeout, HTTP 503, reset, ...
	Requests int
	// FirstMessage is the first failure's message, verbatim (secrets scrubbed).
	FirstMessage string
}

// An outage is kept when it lasted outageMinSpan or held outageMinRequests: one 500 among successes
// is an error, not an outage.
const (
	outageMinSpan     = time.Second
	outageMinRequests = 5
)

// outageTracker watches requests as they end, for the stage's outages and for the abort rule: when
// every request for load.abort_after got no answer at all, the stage stops. Safe for concurrent use.
type outageTracker struct {
	mu      sync.Mutex
	open    *Outage // the current run of failures of one kind, if any
	done    []Outage
	silence time.Time // the first unanswered failure since the last answer of any kind; zero: none
	first   string    // that failure's kind and message
	// silenced is signalled (never blocking) when a run of unanswered failures begins, so the abort
	// rule waits for that instead of polling: a wake-up costs a client CPU it has better uses for.
	silenced chan struct{}
}

// silenceStarts is signalled when a run of unanswered failures begins.
func (t *outageTracker) silenceStarts() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.silenced == nil {
		t.silenced = make(chan struct{}, 1)
	}
	return t.silenced
}

// observe takes a finished request (not a cancelled one) that ended at end.
func (t *outageTracker) observe(rec *metrics.Record, end time.Time) {
	if rec.WasCancelled {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	unanswered := metrics.Unanswered(rec)
	switch {
	case !unanswered:
		t.silence, t.first = time.Time{}, ""
	case t.silence.IsZero():
		t.silence, t.first = end, metrics.FailureKind(rec)+": "+rec.Error.Message
		if t.silenced != nil {
			select {
			case t.silenced <- struct{}{}:
			default: // one signal pending is enough
			}
		}
	}
	if !unanswered && !metrics.Refused(rec) {
		if rec.Error == nil { // only an answer ends an outage: the streams a dying server cut do not
			t.closeOpen()
		}
		return
	}
	kind := metrics.FailureKind(rec)
	if t.open != nil && t.open.Kind != kind {
		t.closeOpen()
	}
	if t.open == nil {
		t.open = &Outage{From: end, Kind: kind, FirstMessage: rec.Error.Message}
	}
	t.open.To = end
	t.open.Requests++
}

func (t *outageTracker) closeOpen() {
	if o := t.open; o != nil && (o.To.Sub(o.From) >= outageMinSpan || o.Requests >= outageMinRequests) {
		t.done = append(t.done, *o)
	}
	t.open = nil
}

// unansweredSince is when the current run of unanswered failures began (zero: none), with the first
// one's kind and message.
func (t *outageTracker) unansweredSince() (time.Time, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.silence, t.first
}

// outages closes any open outage and returns them all in time order ([] when none).
func (t *outageTracker) outages() []Outage {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeOpen()
	return append([]Outage{}, t.done...)
}
