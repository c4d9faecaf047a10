package search

import (
	"fmt"
	"sync"
	"time"

	"github.com/plload/plload/metrics"
)

// EarlyStop watches a probe's requests as they finish and says when the probe can no longer pass,
// so a hopeless load is not run to its end (the engine's Config.StopWhen). It stops only on
// certainty that later requests cannot undo:
//   - a max limit: one request of the window over it;
//   - a percentile limit (not ITL, whose gaps are not one per request) or the error-rate limit:
//     the share over the limit (or of errors) stays above what the limit allows even if every
//     request still to come in the window met it. "Still to come" is estimated from the pace so
//     far, doubled, and counted only after a quarter of the window, so a burst at the start (every
//     session's first request at once) cannot stop a load that would settle;
//   - at least MinSamples requests, and the share's Wilson interval wholly above the allowance.
//
// A mean limit never stops a probe early: later requests can always pull a mean back.
type EarlyStop struct {
	slo      SLO
	duration time.Duration
	now      func() time.Time

	mu    sync.Mutex
	first time.Time // the first finished request of the window's start
	n     int       // requests of the window finished (successes, errors, cancelled)
	errs  int
	succ  int
	over  []int // per slo.Latency limit: successes over it
	// limit is the limit that stopped the probe ("ttft p95", "error rate"; "" while none has).
	limit string
}

// Limit is the limit the probe can no longer meet, as search.json names limits ("" while it can).
func (e *EarlyStop) Limit() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.limit
}

// NewEarlyStop watches a probe of the given window duration (its warmup excluded).
func NewEarlyStop(slo SLO, duration time.Duration) *EarlyStop {
	return &EarlyStop{slo: slo, duration: duration, now: time.Now, over: make([]int, len(slo.Latency))}
}

// Check takes one finished request and returns why the probe cannot pass ("" while it can). Safe
// for concurrent use.
func (e *EarlyStop) Check(r *metrics.Record) string {
	if r.BenchmarkPhase != metrics.PhaseProfiling {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if e.first.IsZero() {
		e.first = now
	}
	e.n++
	if !r.OK() {
		e.errs++
	} else {
		e.succ++
		for i, l := range e.slo.Latency {
			if v, ok := metrics.RequestValue(l.Metric, r); ok && v > l.LimitMs && l.Metric != metrics.SLOMetricITL {
				e.over[i]++
			}
		}
	}
	for i, l := range e.slo.Latency {
		if l.Stat == metrics.SLOStatMax && e.over[i] > 0 {
			e.limit = l.Metric + " " + l.Stat
			return fmt.Sprintf("%s %s cannot be met: a request of the window took longer than %s", l.Metric, l.Stat, ms(l.LimitMs))
		}
	}
	elapsed := now.Sub(e.first)
	if elapsed < e.duration/4 {
		return ""
	}
	toCome := 2 * float64(e.n) / elapsed.Seconds() * max(0, (e.duration-elapsed).Seconds())
	for i, l := range e.slo.Latency {
		if l.Stat == metrics.SLOStatMax || l.Stat == metrics.SLOStatMean || l.Metric == metrics.SLOMetricITL {
			continue
		}
		allowed := 1 - statPercentile(l.Stat)/100
		if why := e.certain(e.over[i], e.succ, toCome, allowed); why != "" {
			e.limit = l.Metric + " " + l.Stat
			return fmt.Sprintf("%s %s cannot be met: %d of %d requests so far over %s, %s", l.Metric, l.Stat, e.over[i], e.succ, ms(l.LimitMs), why)
		}
	}
	if e.slo.ErrorRateSet {
		if why := e.certain(e.errs, e.n, toCome, e.slo.ErrorRateMax); why != "" {
			e.limit = "error rate"
			return fmt.Sprintf("the error rate cannot be met: %d of %d requests so far failed, %s", e.errs, e.n, why)
		}
	}
	return ""
}

// certain says why k of n over an allowance is already a failure, with toCome requests still to
// come that might all be good ("" when it is not certain).
func (e *EarlyStop) certain(k, n int, toCome, allowed float64) string {
	if n < MinSamples {
		return ""
	}
	lo, _ := Wilson(k, n)
	best := float64(k) / (float64(n) + toCome)
	if lo <= allowed || best <= allowed {
		return ""
	}
	return fmt.Sprintf("more than the %s allowed even if all of about %.0f still to come met it", pct(allowed), toCome)
}
