package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// SLO is what a probe is judged by: the scenario's latency limits and its error-rate limit.
type SLO struct {
	Latency      []metrics.LatencyLimit
	ErrorRateMax float64
	ErrorRateSet bool
}

// FromLimits takes the limits a stage is judged by (stage.json's slo).
func FromLimits(l metrics.SLOLimits) SLO {
	return SLO{Latency: l.Limits(), ErrorRateMax: l.ErrorRateMax, ErrorRateSet: !l.ErrorRateUnset}
}

// Set reports whether there is anything to judge by.
func (s SLO) Set() bool { return len(s.Latency) > 0 || s.ErrorRateSet }

// MinSamples is the fewest requests a latency statistic other than max is decided on; with fewer a
// 95 % interval of a p95 rests on one or two values.
const MinSamples = 30

// bootstrapIters is the resamples behind each latency interval.
const bootstrapIters = 1000

// side is where a statistic's interval lies against its limit.
type side int

const (
	below  side = iota // wholly at or under the limit: met
	above              // wholly over: broken
	across             // the interval holds the limit, or too few samples to say
)

// outcome is how search.json writes a side.
func (sd side) outcome() string {
	switch sd {
	case below:
		return "met"
	case above:
		return "broken"
	}
	return "undecided"
}

// The rules a limit is decided by, as search.json names them in each probe's "decided" list.
const (
	// RuleInterval: the 95 % interval of the statistic (a bootstrap over whole requests) lies wholly
	// under the limit (met), wholly over it (broken), or holds it (undecided).
	RuleInterval = "interval"
	// RuleShare: too few requests for a bootstrap, so the Wilson interval of the share of requests
	// over the limit is held against the share the percentile allows.
	RuleShare = "share over the limit"
	// RuleFewSamples: too few requests for either rule to decide.
	RuleFewSamples = "too few requests"
	// RuleMax: a max is the largest value itself; any request over the limit breaks it.
	RuleMax = "max"
	// RuleNoSuccess: no request succeeded, so no latency exists and the limit is broken.
	RuleNoSuccess = "no success"
	// RuleNoGap: successes, but none with two tokens: a TPOT or ITL limit is met, as goodput counts them.
	RuleNoGap = "no answer with two tokens"
	// RuleErrorCount: an error-rate limit of 0 is decided by the count: any error breaks it.
	RuleErrorCount = "error count"
	// RuleErrorEvidence: an error rate is broken only on evidence, when its Wilson 95 % interval lies
	// wholly over the limit; it is met when the rate measured is at or under the limit, and undecided
	// when the rate is over the limit but the interval still holds it. A probe without errors, or
	// with clearly fewer than the limit allows, is never held back by the error rate however short
	// it is (0 errors in 97 requests: a Wilson interval 0–3.8 % that no short probe could bring
	// under 1 %).
	RuleErrorEvidence = "error evidence"
	// RuleEarlyStop: the probe was stopped before its end because the limit could no longer be met
	// whatever the rest of its requests did (EarlyStop).
	RuleEarlyStop = "stopped early"
	// RuleSaturated: the server was clearly past capacity (latency or send lag rising quarter after
	// quarter, arrivals never started), whatever the intervals say; the limit is "saturation".
	RuleSaturated = "saturated"
)

// Decision is how one limit of the SLO was decided in a probe: search.json's "decided" entries.
type Decision = resultfiles.SearchDecision

// Judgement is a probe's verdict, why, and how each limit was decided.
type Judgement struct {
	Verdict Verdict
	Reason  string
	Decided []Decision
}

// Judge decides a probe: fail when any limit is broken, pass when every one is met, else undecided.
// A latency limit is broken when its interval lies wholly over it, met when wholly under; the error
// rate by RuleErrorEvidence. The reason gives every limit's value and interval, the one that decided
// first.
func (s SLO) Judge(m Measurement, seed uint64) Judgement {
	var broken, unsure, met []string
	var decided []Decision
	add := func(limit string, sd side, rule, text string) {
		decided = append(decided, Decision{Limit: limit, Outcome: sd.outcome(), Rule: rule})
		switch sd {
		case above:
			broken = append(broken, text)
		case across:
			unsure = append(unsure, text)
		default:
			met = append(met, text)
		}
	}
	for i, l := range s.Latency {
		sd, rule, text := judgeLatency(l, m.Latency[l.Metric], m.Requests > m.Errors, seed+uint64(i))
		add(l.Metric+" "+l.Stat, sd, rule, text)
	}
	if s.ErrorRateSet {
		sd, rule, text := judgeErrorRate(s.ErrorRateMax, m.Errors, m.Requests)
		add("error rate", sd, rule, text)
	}
	switch {
	case len(broken) > 0:
		return Judgement{Fail, strings.Join(broken, "; "), decided}
	case len(unsure) > 0:
		return Judgement{Undecided, strings.Join(append(unsure, met...), "; "), decided}
	case len(met) == 0:
		return Judgement{Undecided, "the SLO sets no limit to judge by", decided}
	}
	return Judgement{Pass, strings.Join(met, "; "), decided}
}

// judgeLatency places one latency limit's 95 % interval: a percentile's from a bootstrap over whole
// requests (metrics.BootstrapPercentile), a mean's likewise, and a max by the value itself (any
// request over the limit breaks a max; none over meets it).
//
// succeeded says whether any request succeeded: without one every limit is broken, but successes
// without a TPOT or ITL (answers of one token) meet those limits, as goodput counts them.
func judgeLatency(l metrics.LatencyLimit, groups [][]float64, succeeded bool, seed uint64) (side, string, string) {
	name := l.Metric + " " + l.Stat
	limit := ms(l.LimitMs)
	if len(groups) == 0 && succeeded && (l.Metric == metrics.SLOMetricTPOT || l.Metric == metrics.SLOMetricITL) {
		return below, RuleNoGap, fmt.Sprintf("%s: no answer had two tokens, so none has a %s (limit %s)", name, l.Metric, limit)
	}
	if len(groups) == 0 {
		return above, RuleNoSuccess, fmt.Sprintf("%s unknown: no request succeeded in the window (limit %s)", name, limit)
	}
	if l.Stat == metrics.SLOStatMax {
		v := slices.Max(slices.Concat(groups...))
		if v > l.LimitMs {
			return above, RuleMax, fmt.Sprintf("%s %s > %s", name, ms(v), limit)
		}
		return below, RuleMax, fmt.Sprintf("%s %s ≤ %s", name, ms(v), limit)
	}
	var iv metrics.Interval
	if l.Stat == metrics.SLOStatMean {
		iv = bootstrapMean(groups, bootstrapIters, seed)
	} else {
		iv = metrics.BootstrapPercentile(groups, statPercentile(l.Stat), bootstrapIters, seed)
	}
	ci := fmt.Sprintf("%s (95%% CI %s–%s)", ms(iv.Point), num(iv.Lo), ms(iv.Hi))
	switch {
	case len(groups) < MinSamples:
		if sd, text, ok := judgeFew(l, groups); ok {
			return sd, RuleShare, text
		}
		return across, RuleFewSamples, fmt.Sprintf("%s %s from %d requests, fewer than the %d a decision needs (limit %s)", name, ms(iv.Point), len(groups), MinSamples, limit)
	case iv.Lo > l.LimitMs:
		return above, RuleInterval, fmt.Sprintf("%s %s > %s", name, ci, limit)
	case iv.Hi <= l.LimitMs:
		return below, RuleInterval, fmt.Sprintf("%s %s ≤ %s", name, ci, limit)
	}
	return across, RuleInterval, fmt.Sprintf("%s %s: the interval holds the limit %s", name, ci, limit)
}

// judgeFew decides a percentile from too few requests for a bootstrap, when the data is plain
// enough: the p-th percentile is over the limit exactly when more than (100 − p) % of requests
// are, so the Wilson interval of the share over the limit, wholly above (100 − p) %, fails it (20
// requests all at 10 ms fail a 2 ms p95), and wholly below passes it. ok is false when it cannot
// tell, or for a mean or ITL (whose gaps are not one per request).
func judgeFew(l metrics.LatencyLimit, groups [][]float64) (side, string, bool) {
	if l.Stat == metrics.SLOStatMean || l.Metric == metrics.SLOMetricITL {
		return across, "", false
	}
	over := 0
	for _, g := range groups {
		if g[0] > l.LimitMs {
			over++
		}
	}
	lo, hi := Wilson(over, len(groups))
	allowed := 1 - statPercentile(l.Stat)/100
	text := fmt.Sprintf("%s: %d of %d requests over %s (95%% CI of the share %s–%s", l.Metric+" "+l.Stat, over, len(groups), ms(l.LimitMs), pct(lo), pct(hi))
	switch {
	case lo > allowed:
		return above, text + fmt.Sprintf(" > the %s a %s allows)", pct(allowed), l.Stat), true
	case hi < allowed:
		return below, text + fmt.Sprintf(" < the %s a %s allows)", pct(allowed), l.Stat), true
	}
	return across, "", false
}

// judgeErrorRate decides the error rate by RuleErrorEvidence: broken when its Wilson 95 % interval
// lies wholly over the limit, met when the rate measured is at or under it, undecided between. A
// limit of 0 (no error allowed) is decided by the count itself (RuleErrorCount).
func judgeErrorRate(limit float64, errors, requests int) (side, string, string) {
	if requests == 0 {
		return above, RuleNoSuccess, "error rate unknown: no request started in the window"
	}
	rate := float64(errors) / float64(requests)
	if limit == 0 {
		if errors > 0 {
			return above, RuleErrorCount, fmt.Sprintf("error rate %s (%d of %d) > 0", pct(rate), errors, requests)
		}
		return below, RuleErrorCount, fmt.Sprintf("error rate 0 (of %d) ≤ 0", requests)
	}
	lo, hi := Wilson(errors, requests)
	text := fmt.Sprintf("error rate %s (%d of %d; 95%% CI %s–%s)", pct(rate), errors, requests, pct(lo), pct(hi))
	switch {
	case lo > limit:
		return above, RuleErrorEvidence, text + " > " + pct(limit)
	case rate <= limit:
		return below, RuleErrorEvidence, text + " ≤ " + pct(limit)
	}
	return across, RuleErrorEvidence, fmt.Sprintf("%s: over the limit %s, but the interval still holds it (more requests would decide it)", text, pct(limit))
}

// Wilson is the Wilson score 95 % interval of a proportion of k in n (n > 0): unlike the normal
// interval it stays inside [0, 1] and is not empty at k = 0, where a short probe cannot show a low
// error rate.
func Wilson(k, n int) (lo, hi float64) {
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	denom := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / denom
	half := z / denom * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return max(0, center-half), min(1, center+half)
}

// bootstrapMean is the 95 % interval of the mean of every value, resampling whole groups as
// metrics.BootstrapPercentile does.
func bootstrapMean(groups [][]float64, iters int, seed uint64) metrics.Interval {
	sums, counts := make([]float64, len(groups)), make([]float64, len(groups))
	var total, n float64
	for i, g := range groups {
		for _, v := range g {
			sums[i] += v
		}
		counts[i] = float64(len(g))
		total, n = total+sums[i], n+counts[i]
	}
	rng := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	stats := make([]float64, iters)
	for k := range stats {
		var s, c float64
		for range groups {
			j := rng.IntN(len(groups))
			s, c = s+sums[j], c+counts[j]
		}
		stats[k] = s / c
	}
	slices.Sort(stats)
	return metrics.Interval{Point: total / n, Lo: metrics.Percentile(stats, 2.5), Hi: metrics.Percentile(stats, 97.5), N: iters}
}

// statPercentile is the percentile a statistic names (p95 → 95).
func statPercentile(stat string) float64 {
	v, _ := strconv.ParseFloat(strings.TrimPrefix(stat, "p"), 64)
	return v
}

// ms writes milliseconds to about three digits: 1234 ms, 84.0 ms, 9.87 ms.
func ms(v float64) string { return num(v) + " ms" }

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "N/A"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func pct(v float64) string { return strconv.FormatFloat(100*v, 'g', 3, 64) + "%" }
