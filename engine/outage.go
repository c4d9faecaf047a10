package engine

import "time"

// Outage is a span of a stage in which every request failed the same way before any response
// byte, or got 429/5xx: the target was down, not slow.
type Outage struct {
	From, To time.Time
	Kind     string // refused, dns, tls, 404, 429, 5xx, timeout, reset, ...
	Requests int
	// FirstMessage is the first failure's message, verbatim (secrets scrubbed).
	FirstMessage string
}
