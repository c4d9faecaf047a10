package metrics

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// StageInput is what a stage's computation needs besides its records.
type StageInput struct {
	Warmup, Duration time.Duration
	// T0Ns is the stage's t0 when the caller knows it (plload's engine does); otherwise it is read
	// from the records (see T0Finder).
	T0Ns Opt[int64]
	// InterruptNs ends the window early for a partial stage.
	InterruptNs Opt[int64]
	SLO         SLOLimits
	Cost        CostInputs
	// Warnings from the caller that belong in the stage's warnings (dataset reuse, injector load).
	Warnings []string
	// NeverStarted is the number of arrival_rate sessions still queued at the end (−1 unknown).
	NeverStarted int
	// Replay marks a stage of load.mode replay: its summary then says whether the client kept the
	// trace's pace (replay_valid).
	Replay bool
}

// Thresholds of the client-bottleneck warnings (SPEC §7).
const (
	ThinkLagWarnMs = 100.0 // think lag p99
	StartLagWarnMs = 100.0 // start lag p95; a session whose start lag passes it counts as queued
	// exactITLLimit is how many pooled chunk gaps are kept exactly; past it they go into an HDR
	// histogram with 3 significant digits (0.1 % resolution), and the summary says so.
	exactITLLimit = 8 << 20
)

// ITL methods.
const (
	ITLExact = "exact"
	ITLHDR   = "hdr-3-significant-digits"
)

// Stage accumulates one stage's records. Add every record (any order), then call Summary once.
type Stage struct {
	in          StageInput
	w, e        int64
	latTTFT     []float64
	latTTFO     []float64
	latE2E      []float64
	itlPerReq   []float64
	gaps        []float64
	hdr         *hdrhistogram.Histogram
	startLag    []float64
	thinkLag    []float64
	sessions    map[string]*interval
	s           StageSummary
	promptSum   int64
	cachedSum   int64
	promptCount int
}

type interval struct{ start, end int64 }

// NewStage starts a stage whose t0 is known (in.T0Ns set).
func NewStage(in StageInput) *Stage {
	s := &Stage{in: in, sessions: map[string]*interval{}}
	t0 := in.T0Ns.V
	s.w = t0 + int64(in.Warmup)
	s.e = s.w + int64(in.Duration)
	eff := s.e
	if in.InterruptNs.OK && in.InterruptNs.V < eff {
		eff = in.InterruptNs.V
		s.s.Partial = true
	}
	s.s.Window.T0Ns, s.s.Window.WNs, s.s.Window.ENs, s.s.Window.EEffNs = t0, s.w, s.e, eff
	s.s.Window.Seconds = math.Max(0, float64(eff-s.w)/1e9)
	s.s.ITLMethod = ITLExact
	if in.NeverStarted >= 0 {
		s.s.NeverStarted = Some(in.NeverStarted)
	}
	return s
}

func (s *Stage) inWindow(ns int64) bool { return ns >= s.w && ns < s.s.Window.EEffNs }

// issueNs is when the request was issued: credit_issued_ns, or its start when a file lacks it.
func issueNs(r *Record) int64 {
	if r.CreditIssuedNs != 0 {
		return r.CreditIssuedNs
	}
	return r.RequestStartNs
}

// Add counts one record.
func (s *Stage) Add(r *Record) {
	sum := &s.s
	sum.Requests.Total++
	s.session(r)
	if s.anomalous(r) {
		sum.ClockAnomalies++
	}
	ok := r.OK()
	if ok && r.RequestEndNs.OK && s.inWindow(r.RequestEndNs.V) {
		s.throughput(r)
	}
	switch {
	case r.RequestStartNs < s.w:
		sum.Requests.Warmup++
		return
	case r.RequestStartNs >= sum.Window.EEffNs:
		sum.Requests.Late++
		return
	}
	sum.Requests.InWindow++
	if r.IntendedStartNs.OK {
		lag := Ms(issueNs(r) - r.IntendedStartNs.V)
		if r.TurnIndex == 0 {
			s.startLag = append(s.startLag, lag)
			if lag > StartLagWarnMs {
				sum.QueuedSessions++
			}
		} else {
			s.thinkLag = append(s.thinkLag, lag)
		}
	}
	if r.Error != nil {
		if sum.ErrorKinds == nil {
			sum.ErrorKinds = map[string]int{}
		}
		kind := r.Error.Type
		if r.Error.Code.OK {
			kind = fmt.Sprintf("%d %s", r.Error.Code.V, r.Error.Type)
		}
		sum.ErrorKinds[kind]++
	}
	switch {
	case r.WasCancelled:
		sum.Requests.Cancelled++
		sum.Censored = true
		return
	case r.Error != nil:
		sum.Requests.Errors++
		if r.Error.Code.OK && r.Error.Code.V == StatusTooManyRequests {
			sum.Requests.RateLimited++
		}
		return
	}
	sum.Requests.Succeeded++
	if r.TTFT.OK {
		s.latTTFT = append(s.latTTFT, r.TTFT.V)
	}
	if r.TTFO.OK {
		s.latTTFO = append(s.latTTFO, r.TTFO.V)
	}
	if r.RequestLatency.OK {
		s.latE2E = append(s.latE2E, r.RequestLatency.V)
	}
	if r.InterTokenLatency.OK {
		s.itlPerReq = append(s.itlPerReq, r.InterTokenLatency.V)
	}
	if r.ReasoningTokenCount.OK && r.ReasoningTokenCount.V > 0 {
		sum.ReasoningSeen = true
	}
	s.addGaps(r.InterChunkLatency)
	if r.UsageCompletionTokens.OK {
		sum.UsageReported++
	} else {
		sum.MissingUsage++
	}
	if r.UsagePromptTokens.OK {
		s.promptCount++
		s.promptSum += int64(r.UsagePromptTokens.V)
		if r.UsageCachedTokens.OK {
			s.cachedSum += int64(min(r.UsageCachedTokens.V, r.UsagePromptTokens.V)) // a server's cached > prompt must not pass 100 %
		}
	}
	if r.UsageCachedTokens.OK {
		sum.CachedReported++
	}
}

func (s *Stage) throughput(r *Record) {
	t := &s.s.Throughput
	t.Requests++
	if r.OutputSequenceLength.OK {
		t.OutputTokens += r.OutputSequenceLength.V
	}
	if s.meetsSLO(r) {
		t.GoodRequests++
	}
}

// meetsSLO is the per-request SLO of goodput: TTFT and mean ITL within their limits (a request with
// one token has no ITL and meets that part).
func (s *Stage) meetsSLO(r *Record) bool {
	l := s.in.SLO
	if l.TTFTP95Ms > 0 && (!r.TTFT.OK || r.TTFT.V > l.TTFTP95Ms) {
		return false
	}
	if l.ITLP95Ms > 0 && r.InterTokenLatency.OK && r.InterTokenLatency.V > l.ITLP95Ms {
		return false
	}
	return true
}

func (s *Stage) addGaps(gaps []float64) {
	if s.hdr == nil && len(s.gaps)+len(gaps) <= exactITLLimit {
		s.gaps = append(s.gaps, gaps...)
		return
	}
	if s.hdr == nil {
		s.hdr = hdrhistogram.New(1, int64(time.Hour), 3)
		s.s.ITLMethod = ITLHDR
		for _, g := range s.gaps {
			s.hdr.RecordValue(nsOf(g))
		}
		s.gaps = nil
	}
	for _, g := range gaps {
		s.hdr.RecordValue(nsOf(g))
	}
}

func nsOf(ms float64) int64 { return max(1, int64(math.Round(ms*1e6))) }

// session widens the interval of the record's session instance.
func (s *Stage) session(r *Record) {
	key := r.XCorrelationID
	if key == "" {
		key = r.ConversationID
	}
	if key == "" {
		return
	}
	end := r.RequestStartNs
	if r.RequestEndNs.OK {
		end = r.RequestEndNs.V
	}
	iv, ok := s.sessions[key]
	if !ok {
		s.sessions[key] = &interval{issueNs(r), end}
		return
	}
	iv.start, iv.end = min(iv.start, issueNs(r)), max(iv.end, end)
}

func (s *Stage) anomalous(r *Record) bool {
	if r.RequestEndNs.OK && r.RequestEndNs.V < r.RequestStartNs {
		return true
	}
	if r.CreditIssuedNs != 0 && r.RequestStartNs < r.CreditIssuedNs {
		return true
	}
	if r.TTFT.OK && r.RequestLatency.OK && r.TTFT.V > r.RequestLatency.V+1e-9 {
		return true
	}
	for _, g := range r.InterChunkLatency {
		if g < 0 {
			return true
		}
	}
	return false
}

// Summary computes the stage's numbers. Call it once, after the last Add.
func (s *Stage) Summary() *StageSummary {
	sum := &s.s
	sum.TTFT, sum.TTFO, sum.E2E = summarize(s.latTTFT), summarize(s.latTTFO), summarize(s.latE2E)
	sum.ITLPerRequest = summarize(s.itlPerReq)
	if s.hdr != nil {
		h := s.hdr
		ms := func(ns int64) float64 { return float64(ns) / 1e6 }
		sum.ITL = Dist{N: int(h.TotalCount()), Mean: h.Mean() / 1e6, Min: ms(h.Min()), Max: ms(h.Max()), Std: h.StdDev() / 1e6,
			P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P95: ms(h.ValueAtQuantile(95)), P99: ms(h.ValueAtQuantile(99))}
	} else {
		sum.ITL = summarize(s.gaps)
	}
	sum.StartLag, sum.ThinkLag = summarize(s.startLag), summarize(s.thinkLag)
	counted := sum.Requests.Succeeded + sum.Requests.Errors + sum.Requests.Cancelled
	if counted > 0 {
		sum.ErrorRate = Some(float64(sum.Requests.Errors+sum.Requests.Cancelled) / float64(counted))
	}
	if s.promptCount > 0 && s.promptSum > 0 {
		sum.CacheHit = Some(float64(s.cachedSum) / float64(s.promptSum))
	}
	if secs := sum.Window.Seconds; secs > 0 {
		t := &sum.Throughput
		t.ReqPerSec = float64(t.Requests) / secs
		t.OutTokPerSec = float64(t.OutputTokens) / secs
		t.GoodputPerSec = float64(t.GoodRequests) / secs
	}
	s.activeSessions()
	sum.SLO = judge(s.in.SLO, sum)
	sum.Cost = cost(s.in.Cost, sum)
	sum.Warnings = append(sum.Warnings, s.warnings()...)
	sum.Warnings = append(sum.Warnings, s.in.Warnings...)
	if sum.Warnings == nil {
		sum.Warnings = []string{} // a list is [] in JSON, never null
	}
	if sum.CacheHitByTurn == nil {
		sum.CacheHitByTurn = []TurnCacheHit{}
	}
	return sum
}

// activeSessions is the time-weighted mean, and the min and max, of open sessions over [W, E_eff).
func (s *Stage) activeSessions() {
	w, eff := s.w, s.s.Window.EEffNs
	if eff <= w {
		return
	}
	type change struct {
		at    int64
		delta int
	}
	var changes []change
	open := 0
	for _, iv := range s.sessions {
		start, end := max(iv.start, w), min(iv.end, eff)
		if end <= start {
			if iv.start <= w && iv.end >= eff { // open across the whole window
				open++
			}
			continue
		}
		if start == w {
			open++
		} else {
			changes = append(changes, change{start, +1})
		}
		if end < eff {
			changes = append(changes, change{end, -1})
		}
	}
	// By time; at the same instant ends before starts, so a handover is not counted as two open.
	sort.Slice(changes, func(i, j int) bool {
		if changes[i].at != changes[j].at {
			return changes[i].at < changes[j].at
		}
		return changes[i].delta < changes[j].delta
	})
	// The min and max ignore levels held for under a millisecond: in concurrency mode a slot's next
	// session starts microseconds after the last one ended, and that dip is not a real one.
	const minHold = int64(time.Millisecond)
	area, prev := 0.0, w
	lo, hi, seen := 0, 0, false
	hold := func(level int, d int64) {
		if d < minHold && seen {
			return
		}
		if !seen || level < lo {
			lo = level
		}
		if !seen || level > hi {
			hi = level
		}
		seen = true
	}
	for _, c := range changes {
		area += float64(open) * float64(c.at-prev)
		hold(open, c.at-prev)
		prev = c.at
		open += c.delta
	}
	area += float64(open) * float64(eff-prev)
	hold(open, eff-prev)
	a := &s.s.Active
	a.Mean, a.Min, a.Max = area/float64(eff-w), lo, hi
}

func (s *Stage) warnings() []string {
	sum := &s.s
	var out []string
	if sum.ThinkLag.Known() && sum.ThinkLag.P99 > ThinkLagWarnMs {
		out = append(out, fmt.Sprintf("think lag p99 is %.0f ms (> %.0f ms): turns went out later than their think time allowed — the client may be the bottleneck", sum.ThinkLag.P99, ThinkLagWarnMs))
	}
	if sum.StartLag.Known() && sum.StartLag.P95 > StartLagWarnMs {
		out = append(out, fmt.Sprintf("start lag p95 is %.0f ms (> %.0f ms): %d sessions waited to start — max_concurrency was full or the client is the bottleneck", sum.StartLag.P95, StartLagWarnMs, sum.QueuedSessions))
	}
	if sum.NeverStarted.V > 0 {
		out = append(out, fmt.Sprintf("%d arrivals never started before the stage ended (max_concurrency was full)", sum.NeverStarted.V))
	}
	if sum.ClockAnomalies > 0 {
		out = append(out, fmt.Sprintf("%d records have times out of order (end before start, or TTFT after the last token): check the clock of whatever wrote them", sum.ClockAnomalies))
	}
	if sum.Requests.Cancelled > 0 {
		out = append(out, fmt.Sprintf("%d requests were cancelled (drain timeout or interrupt) and count as errors; latency percentiles are censored lower bounds", sum.Requests.Cancelled))
	}
	if sum.MissingUsage > 0 {
		out = append(out, fmt.Sprintf("%d of %d successful requests carried no server usage: output tokens are the client's count of streamed chunks, and cache hit %% is N/A without prompt usage", sum.MissingUsage, sum.Requests.Succeeded))
	}
	if sum.ITLMethod == ITLHDR {
		out = append(out, fmt.Sprintf("pooled ITL percentiles come from an HDR histogram with 3 significant digits (0.1 %% resolution): more than %d chunk gaps", exactITLLimit))
	}
	return out
}

// T0Finder reads t0 from the records when the caller does not know it: the first request's issue
// time; for arrival_rate, the minimum over sessions of (turn-0 issue time − its scheduled offset),
// the offsets read from turn-0 intended start times (plload's first arrival is at the origin).
type T0Finder struct {
	ArrivalRate bool
	minIssue    int64
	maxEnd      int64
	has         bool
	firsts      [][2]int64 // turn-0 (issue, intended)
}

// Add looks at one record.
func (f *T0Finder) Add(r *Record) {
	if !f.has || issueNs(r) < f.minIssue {
		f.minIssue, f.has = issueNs(r), true
	}
	f.maxEnd = max(f.maxEnd, r.RequestStartNs, r.RequestEndNs.V)
	if f.ArrivalRate && r.TurnIndex == 0 && r.IntendedStartNs.OK {
		f.firsts = append(f.firsts, [2]int64{issueNs(r), r.IntendedStartNs.V})
	}
}

// T0 is the stage's t0 (absent when there were no records).
func (f *T0Finder) T0() Opt[int64] {
	if !f.has {
		return Opt[int64]{}
	}
	if !f.ArrivalRate || len(f.firsts) == 0 {
		return Some(f.minIssue)
	}
	origin := f.firsts[0][1]
	for _, p := range f.firsts {
		origin = min(origin, p[1])
	}
	t0 := f.firsts[0][0] - (f.firsts[0][1] - origin)
	for _, p := range f.firsts {
		t0 = min(t0, p[0]-(p[1]-origin))
	}
	return Some(t0)
}
