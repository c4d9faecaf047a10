package engine

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff bounds (docs/scenario.md): a closed-loop slot whose session ended in a failed request — no answer,
// a 429 or 5xx, and also a 404 or a broken stream — waits before its next session, from backoffBase
// doubling to backoffMax, so a dead or wrong target gets a few requests a second per slot instead of
// thousands (measured before: ~10,000 requests/s at concurrency 64 against a closed port, as many
// against a URL without /v1). The cap also bounds how long a slot takes to return to full load once
// the server is back. One success resets it; an occasional error costs its slot 50 ms.
const (
	backoffBase = 50 * time.Millisecond
	backoffMax  = 1600 * time.Millisecond
	// retryAfterMax caps a server's Retry-After: a stage is minutes, not hours.
	retryAfterMax = 10 * time.Second
)

// backoff is one slot's state. The zero value is ready; it is not safe for concurrent use.
type backoff struct {
	next time.Duration // the next wait before jitter; 0 after a success
	rng  *rand.Rand
}

// after returns how long the slot waits after a session whose last request is ex (0: at once). The
// wait is drawn from [¾, 1] of the doubling step, so slots that failed together do not retry in
// lockstep; a 429's Retry-After, when longer, wins up to retryAfterMax.
func (b *backoff) after(ex *exchange) time.Duration {
	rec := &ex.rec
	if rec.WasCancelled || rec.Error == nil {
		b.next = 0
		return 0
	}
	if b.next == 0 {
		b.next = backoffBase
	} else {
		b.next = min(2*b.next, backoffMax)
	}
	if b.rng == nil {
		b.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	wait := b.next*3/4 + time.Duration(b.rng.Int64N(int64(b.next/4)+1))
	if ex.retryAfter > wait {
		wait = min(ex.retryAfter, retryAfterMax)
	}
	return wait
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date (RFC 9110 §10.2.3).
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
