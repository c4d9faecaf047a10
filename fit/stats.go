package fit

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// Quantiles are the percentiles the summary reports (metrics' interpolation: numpy's default).
type Quantiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Rate is requests per second: over the whole log, and in its busiest minute.
type Rate struct {
	Mean       float64 `json:"mean"`
	PeakMinute float64 `json:"peak_minute"`
}

// SessionStats describes conversations, when the log has session ids.
type SessionStats struct {
	Count int `json:"count"`
	// Turns is over the sessions the log saw to their end: a session cut off by the log's end (see
	// censored) had turns still to come, so counting it would make conversations look shorter.
	Turns Quantiles `json:"turns"`
	// CutOff is the number of sessions left out of Turns (and MeanTurns, TurnsFit) as cut off by
	// the log's end; they stay in Count, the rates and the think time.
	CutOff int `json:"cut_off"`
	// AllCutOff is set when every session was cut off: then Turns is over all of them, a lower bound.
	AllCutOff bool `json:"-"`
	// ThinkTime is the gap from one turn's answer end to the next turn's start where the log has
	// answer ends (records: request_end_ns), which is the user's think time; elsewhere the gap from
	// one turn's start to the next turn's start, an upper bound (it includes the answer's latency).
	ThinkTime Quantiles `json:"think_time_s"`

	// Fits of the same, for the scenario (not in --json, whose keys docs/data.md fixes).
	TurnsFit, ThinkFit Lognormal `json:"-"`
	MeanTurns          float64   `json:"-"`
	// FewestTurns is the fewest turns of a session in Turns: the fitted range never goes under it.
	FewestTurns float64 `json:"-"`
	// Gaps is the number of think-time gaps measured; GapsFromEnd those measured from an answer's
	// end (the rest are start to start).
	Gaps, GapsFromEnd int `json:"-"`
	// ThinkMean is the gaps' mean (seconds); Think the distribution the scenario writes for them.
	ThinkMean float64     `json:"-"`
	Think     ThinkChoice `json:"-"`
	// PromptByTurn is the median prompt tokens at turns 1, 2, … (up to maxGrowthTurns): how the
	// history grows.
	PromptByTurn []float64 `json:"-"`
}

// maxGrowthTurns bounds the history-growth list.
const maxGrowthTurns = 8

// Summary is `plload fit --json`: exactly the keys of docs/data.md.
type Summary struct {
	Requests       int           `json:"requests"`
	SpanS          float64       `json:"span_s"`
	RatePerS       Rate          `json:"rate_per_s"`
	PeakToMean     float64       `json:"peak_to_mean"`
	InterarrivalCV float64       `json:"interarrival_cv"`
	GammaShape     float64       `json:"gamma_shape"`
	InputTokens    Quantiles     `json:"input_tokens"`
	OutputTokens   Quantiles     `json:"output_tokens"`
	Sessions       *SessionStats `json:"sessions"`
	PrefixShare    *float64      `json:"prefix_share"`
	// Images is the log's images; absent when no request carried one.
	Images *ImageStats `json:"images,omitempty"`

	// The rest is for the terminal and the scenario.
	Formats []string `json:"-"`
	Skipped int      `json:"-"`
	// PrefixFrom says what PrefixShare was measured on: "hash_ids" (blocks), "text" (bytes of
	// prompt text in a prefix seen before) or "cached_tokens" (records: the prompt tokens the server
	// answered from its prefix cache, of CacheRecords records).
	PrefixFrom   string `json:"-"`
	CacheRecords int    `json:"-"`
	// Hourly counts the requests in each hour from the first, when the log spans two hours or more
	// (the diurnal shape); nil otherwise.
	Hourly []int `json:"-"`
	// Poisson is set when the inter-arrival CV is within 10 % of 1.
	Poisson bool `json:"-"`
	// InputFit and OutputFit are lognormal fits of all prompt and answer lengths; FirstInputFit of
	// first turns only (the new text of a session, for session.user_input_tokens).
	InputFit, OutputFit, FirstInputFit Lognormal `json:"-"`
	// FirstInput are the first-turn prompt lengths' quantiles (all requests without sessions).
	FirstInput Quantiles `json:"-"`
	// SharedPrefix is the prefix first turns share with earlier requests; nil when the log shows no
	// block ids or text, or no first turn shares anything.
	SharedPrefix *SharedPrefix `json:"-"`
}

// SharedPrefix is what first turns share (see prefixStats): the scenario's personas reproduce it.
type SharedPrefix struct {
	// Tokens is the mean shared prefix of a first turn, in prompt tokens; Share is the shared part of
	// first turns' prompt tokens (0–1).
	Tokens, Share float64
	// Heads is the number of distinct shared prefixes; FirstTurns the first turns measured.
	Heads, FirstTurns int
}

// maxTime bounds a request's start, in seconds.
const maxTime = 1e12

// z-scores of the standard normal at 0.50, 0.95 and 0.99.
const (
	z95 = 1.6448536269514722
	z99 = 2.3263478740408408
)

// goodFit is the largest relative error of p50/p95/p99 at which the lognormal is said to fit.
const goodFit = 0.10

// Lognormal is a lognormal fitted from the moments of ln x: Mu and Sigma of ln x, Mean of x
// (exp(μ+σ²/2), what a scenario's `dist: lognormal` takes), and how far its p50/p95/p99 are from the
// data's (largest relative error).
type Lognormal struct {
	Mu, Sigma, Mean float64
	P50, P95, P99   float64
	// Err is max |fitted − empirical| / empirical over p50, p95, p99.
	Err float64
	// N is the number of values fitted.
	N int
}

// Good reports whether the lognormal describes the data better than the empirical quantiles need
// (relative error of p50/p95/p99 at most 10 %).
func (f Lognormal) Good() bool { return f.N > 1 && f.Err <= goodFit }

// fitLognormal fits sorted values (≥ 0; zeros are taken as the smallest unit, 1 token or 1 ms for
// the caller's scale, so ln stays finite).
func fitLognormal(sorted []float64, unit float64) Lognormal {
	n := len(sorted)
	if n == 0 {
		return Lognormal{}
	}
	sum, sum2 := 0.0, 0.0
	for _, v := range sorted {
		x := math.Log(math.Max(v, unit))
		sum += x
		sum2 += x * x
	}
	mu := sum / float64(n)
	variance := math.Max(0, sum2/float64(n)-mu*mu)
	sigma := math.Sqrt(variance)
	f := Lognormal{Mu: mu, Sigma: sigma, Mean: math.Exp(mu + variance/2), N: n,
		P50: math.Exp(mu), P95: math.Exp(mu + sigma*z95), P99: math.Exp(mu + sigma*z99)}
	for _, pq := range [][2]float64{{f.P50, 50}, {f.P95, 95}, {f.P99, 99}} {
		emp := math.Max(metrics.Percentile(sorted, pq[1]), unit)
		f.Err = math.Max(f.Err, math.Abs(pq[0]-emp)/emp)
	}
	return f
}

func quantiles(sorted []float64) Quantiles {
	if len(sorted) == 0 {
		return Quantiles{}
	}
	return Quantiles{P50: metrics.Percentile(sorted, 50), P95: metrics.Percentile(sorted, 95),
		P99: metrics.Percentile(sorted, 99), Max: sorted[len(sorted)-1]}
}

func sortedFloats(v []int32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	slices.Sort(out)
	return out
}

// Summarize measures the log. It needs at least two requests (one gap) to say anything of arrivals.
func Summarize(l *Log) (*Summary, error) {
	n := len(l.Start)
	if n < 2 {
		return nil, errors.New("fewer than 2 requests with lengths: nothing to fit")
	}
	s := &Summary{Requests: n, Formats: l.Formats, Skipped: l.Skipped, Images: l.images.result(n)}
	times := slices.Clone(l.Start)
	slices.Sort(times)
	// Beyond ±10¹² s (year 33658) a timestamp is a unit mix-up (ms or ns read as seconds), and
	// squares of such gaps would overflow.
	if times[0] < -maxTime || times[n-1] > maxTime {
		return nil, fmt.Errorf("a timestamp is beyond ±%g s (%g … %g): epoch milliseconds or nanoseconds read as seconds? Say --format, or convert the log", maxTime, times[0], times[n-1])
	}
	s.SpanS = times[n-1] - times[0]
	if s.SpanS <= 0 {
		return nil, errors.New("every request has the same timestamp: no arrival rate to fit")
	}
	// The mean rate is 1 / mean inter-arrival gap: the n−1 gaps span the log.
	s.RatePerS.Mean = float64(n-1) / s.SpanS
	s.RatePerS.PeakMinute = peakRate(times, 60)
	s.PeakToMean = s.RatePerS.PeakMinute / s.RatePerS.Mean
	s.InterarrivalCV = gapCV(times)
	if s.InterarrivalCV > 0 {
		s.GammaShape = 1 / (s.InterarrivalCV * s.InterarrivalCV)
	}
	s.Poisson = math.Abs(s.InterarrivalCV-1) <= 0.1
	if s.SpanS >= 2*3600 {
		s.Hourly = make([]int, int(s.SpanS/3600)+1)
		for _, t := range times {
			s.Hourly[int((t-times[0])/3600)]++
		}
	}

	in, out := sortedFloats(l.In), sortedFloats(l.Out)
	s.InputTokens, s.OutputTokens = quantiles(in), quantiles(out)
	s.InputFit, s.OutputFit = fitLognormal(in, 1), fitLognormal(out, 1)
	s.FirstInputFit, s.FirstInput = s.InputFit, s.InputTokens

	switch {
	case l.HasBlocks && l.Blocks > 0:
		share := float64(l.SeenBlocks) / float64(l.Blocks)
		s.PrefixShare, s.PrefixFrom = &share, "hash_ids"
	case l.TextBytes > 0:
		share := float64(l.SharedTextBytes) / float64(l.TextBytes)
		s.PrefixShare, s.PrefixFrom = &share, "text"
	case l.CacheRecords > 0 && l.CachePromptTokens > 0:
		share := float64(l.CachedTokens) / float64(l.CachePromptTokens)
		s.PrefixShare, s.PrefixFrom = &share, "cached_tokens"
		s.CacheRecords = l.CacheRecords
	}
	if p := l.FirstTurnPrefix; p.Requests > 0 && p.SharedTokens > 0 && p.Tokens > 0 {
		s.SharedPrefix = &SharedPrefix{Tokens: p.SharedTokens / float64(p.Requests), Share: p.SharedTokens / p.Tokens,
			Heads: p.Heads(), FirstTurns: p.Requests}
	}
	if l.Sessions() > 0 {
		s.Sessions = sessionStats(l)
		first := firstTurnInputs(l)
		s.FirstInput, s.FirstInputFit = quantiles(first), fitLognormal(first, 1)
	}
	return s, nil
}

// FlatPeak reports whether the peak minute is within 10 % of the mean rate (workload.FlatPeak), so
// the scenario writes no peak stage apart from the average one.
func (s *Summary) FlatPeak() bool { return workload.FlatPeak(s.RatePerS.Mean, s.RatePerS.PeakMinute) }

// peakRate is the most requests in any window of w seconds starting at a request, per second; a log
// shorter than the window counts over its own span (so a short sample is not read as a lull).
func peakRate(times []float64, w float64) float64 {
	span := times[len(times)-1] - times[0]
	if span < w {
		return float64(len(times)-1) / span
	}
	best, j := 0, 0
	for i := range times {
		for j < len(times) && times[j] < times[i]+w {
			j++
		}
		best = max(best, j-i)
	}
	return float64(best) / w
}

// gapCV is the coefficient of variation of the gaps between sorted times.
func gapCV(times []float64) float64 {
	n := len(times) - 1
	sum, sum2 := 0.0, 0.0
	for i := 1; i < len(times); i++ {
		g := times[i] - times[i-1]
		sum += g
		sum2 += g * g
	}
	mean := sum / float64(n)
	if mean <= 0 {
		return 0
	}
	return math.Sqrt(math.Max(0, sum2/float64(n)-mean*mean)) / mean
}

// bySession returns the indices of the requests that have a session, ordered by session then start.
func bySession(l *Log) []int32 {
	idx := make([]int32, 0, len(l.Start))
	for i, s := range l.Session {
		if s != noSession {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if l.Session[a] != l.Session[b] {
			return int(l.Session[a]) - int(l.Session[b])
		}
		switch {
		case l.Start[a] < l.Start[b]:
			return -1
		case l.Start[a] > l.Start[b]:
			return 1
		}
		return int(a) - int(b)
	})
	return idx
}

func sessionStats(l *Log) *SessionStats {
	idx := bySession(l)
	var sessions []sessionSpan
	var gaps []float64
	fromEnd := 0
	byTurn := make([][]float64, maxGrowthTurns)
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && l.Session[idx[j]] == l.Session[idx[i]] {
			j++
		}
		g, e := thinkGaps(l, idx[i:j])
		gaps, fromEnd = append(gaps, g...), fromEnd+e
		for k := i; k < j && k-i < maxGrowthTurns; k++ {
			byTurn[k-i] = append(byTurn[k-i], float64(l.In[idx[k]]))
		}
		sessions = append(sessions, spanOf(l, idx[i:j], g))
		i = j
	}
	slices.Sort(gaps)
	think := quantiles(gaps)
	cancelled := l.cancelledBySession()
	turns := make([]float64, 0, len(sessions))
	var cutTurns []float64
	for _, sp := range sessions {
		if sp.censored(l, think.P95, cancelled) {
			cutTurns = append(cutTurns, float64(sp.requests))
			continue
		}
		turns = append(turns, float64(sp.requests))
	}
	// A cut-off session's count is only a lower bound, so it is left out, which keeps short counts
	// out of the distribution; but one that already ran longer than every session seen to its end
	// shows sessions that long exist, which leaving it out would hide (of a short log, the longest
	// sessions are the ones still running): it is kept.
	cutOff := 0
	if len(turns) > 0 {
		longest := slices.Max(turns)
		for _, n := range cutTurns {
			if n > longest {
				turns = append(turns, n)
				continue
			}
			cutOff++
		}
	}
	allCutOff := len(turns) == 0
	if allCutOff {
		cutOff = len(cutTurns)
	}
	if allCutOff { // nothing seen to its end: the cut-off sessions' turns are the best there is
		for _, sp := range sessions {
			turns = append(turns, float64(sp.requests))
		}
	}
	slices.Sort(turns)
	st := &SessionStats{Count: len(sessions), Turns: quantiles(turns), CutOff: cutOff, AllCutOff: allCutOff,
		ThinkTime: think, Gaps: len(gaps), GapsFromEnd: fromEnd,
		TurnsFit: fitLognormal(turns, 1), ThinkFit: fitLognormal(gaps, 0.001), ThinkMean: mean(gaps), Think: chooseThink(gaps)}
	st.MeanTurns = mean(turns)
	if len(turns) > 0 {
		st.FewestTurns = turns[0]
	}
	for _, v := range byTurn {
		if len(v) == 0 {
			break
		}
		slices.Sort(v)
		st.PromptByTurn = append(st.PromptByTurn, metrics.Percentile(v, 50))
	}
	return st
}

// sessionSpan is what censoring needs of one session: its index, requests, the start of its last
// request, when its last answer ended (its last start where the log has no answer ends) and its
// longest think gap.
type sessionSpan struct {
	session            int32
	requests           int
	lastStart, lastEnd float64
	longestGap         float64
}

func spanOf(l *Log, reqs []int32, gaps []float64) sessionSpan {
	sp := sessionSpan{session: l.Session[reqs[0]], requests: len(reqs), lastStart: math.Inf(-1), lastEnd: math.Inf(-1)}
	for _, r := range reqs {
		sp.lastStart = math.Max(sp.lastStart, l.Start[r])
		end := l.Start[r]
		if l.End != nil && !math.IsNaN(l.End[r]) {
			end = l.End[r]
		}
		sp.lastEnd = math.Max(sp.lastEnd, end)
	}
	for _, g := range gaps {
		sp.longestGap = math.Max(sp.longestGap, g)
	}
	return sp
}

// censored reports whether the log stopped while the session could still have had turns: its last
// request was cancelled (a run's end cancels what is in flight), or its last answer ended (its last
// request started, in a log without answer ends) within a think gap of the end of its file's log:
// the log's p95 gap, or the session's own longest if longer. Such a session's next turn would most
// likely have come after the log stopped, so its turn count is only a lower bound. A think gap is
// measured the way the session's last time is (from an answer's end, or start to start), so the two
// add up to when the next turn was due.
func (sp sessionSpan) censored(l *Log, gapP95 float64, cancelled map[int32]float64) bool {
	if at, ok := cancelled[sp.session]; ok && at >= sp.lastStart {
		return true
	}
	file := int(l.sessionFile[sp.session])
	if file >= len(l.fileEnd) {
		return false
	}
	horizon := math.Max(gapP95, sp.longestGap)
	return horizon > 0 && sp.lastEnd+horizon > l.fileEnd[file]
}

// cancelledBySession maps each kept session to the latest start of its cancelled records.
func (l *Log) cancelledBySession() map[int32]float64 {
	out := make(map[int32]float64, len(l.cancelled))
	for key, at := range l.cancelled {
		if i, ok := l.sessions[key]; ok {
			out[i] = at
		}
	}
	return out
}

// thinkGaps measures the pauses between one session's turns (reqs: its requests by start). Where the
// log knows each request's user turn and answer end (records), a gap runs from the end of turn k's
// last answer to turn k+1's first request: the user's think time, however long the answers took. Tool
// rounds within a turn follow their answer at once, so they give no gap; a turn missing from the log
// (a failed request is not kept) breaks the chain, so no gap spans two turns. Elsewhere a gap runs
// from one request's start to the next's. fromEnd counts the gaps measured from an answer's end.
func thinkGaps(l *Log, reqs []int32) (gaps []float64, fromEnd int) {
	if l.End == nil {
		for k := 1; k < len(reqs); k++ {
			gaps = append(gaps, l.Start[reqs[k]]-l.Start[reqs[k-1]])
		}
		return gaps, 0
	}
	prev := reqs[0]
	turn, end := l.Turn[prev], l.End[prev] // the current turn and the latest answer end in it
	for _, r := range reqs[1:] {
		switch t := l.Turn[r]; {
		case turn < 0 || t < 0:
			gaps = append(gaps, l.Start[r]-l.Start[prev]) // no turn index: start to start
			turn, end = t, l.End[r]
		case t == turn:
			end = math.Max(end, l.End[r]) // a tool round of the same turn (NaN where unknown)
		case t == turn+1 && !math.IsNaN(end):
			gaps = append(gaps, math.Max(0, l.Start[r]-end))
			fromEnd++
			turn, end = t, l.End[r]
		case t == turn+1:
			gaps = append(gaps, l.Start[r]-l.Start[prev]) // no answer end (an early layout): start to start
			turn, end = t, l.End[r]
		case t > turn:
			turn, end = t, l.End[r] // a turn missing: no gap to measure
		}
		prev = r
	}
	return gaps, fromEnd
}

// mean is the mean of v (0 when empty).
func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// firstTurnInputs are the prompt lengths of each session's first turn and of requests without a
// session: the text a new conversation brings, before any history.
func firstTurnInputs(l *Log) []float64 {
	first := make(map[int32]int32, l.Sessions())
	var out []float64
	for i, s := range l.Session {
		if s == noSession {
			out = append(out, float64(l.In[i]))
			continue
		}
		if j, ok := first[s]; !ok || l.Start[i] < l.Start[j] {
			first[s] = int32(i)
		}
	}
	for _, i := range first {
		out = append(out, float64(l.In[i]))
	}
	slices.Sort(out)
	return out
}
