package metrics

import (
	"math"
	"strings"
	"testing"
	"time"
)

const base = int64(1_800_000_000_000_000_000) // an epoch-ns origin for the fixtures

func sec(s float64) int64 { return base + int64(s*1e9) }

// ok builds a successful record started at startS seconds with the given TTFT and gaps (ms).
func ok(startS, ttft float64, gaps []float64, osl int) *Record {
	lat := ttft
	for _, g := range gaps {
		lat += g
	}
	r := &Record{CreditIssuedNs: sec(startS), RequestStartNs: sec(startS), RequestEndNs: Some(sec(startS) + int64(lat*1e6)),
		TTFT: Some(ttft), RequestLatency: Some(lat), InterChunkLatency: gaps, OutputSequenceLength: Some(osl),
		UsageCompletionTokens: Some(osl), UsagePromptTokens: Some(100), UsageCachedTokens: Some(50)}
	if osl >= 2 {
		r.InterTokenLatency = Some((lat - ttft) / float64(osl-1))
	}
	return r
}

func failed(startS float64, code int, typ string) *Record {
	r := &Record{CreditIssuedNs: sec(startS), RequestStartNs: sec(startS), RequestEndNs: Some(sec(startS + 0.01)),
		Error: &RecordError{Type: typ, Message: "m"}}
	if code != 0 {
		r.Error.Code = Some(code)
	}
	if code == CodeCancelled {
		r.WasCancelled, r.CancellationTimeNs = true, Some(sec(startS+0.01))
	}
	return r
}

func input() StageInput {
	return StageInput{Warmup: time.Second, Duration: 10 * time.Second, T0Ns: Some(base), NeverStarted: -1,
		SLO:  SLOLimits{TTFTP95Ms: 500, ITLP95Ms: 50, ErrorRateMax: 0.5},
		Cost: CostInputs{GPUHourlyUSD: 2, GPUCount: 1, ExpectedTurns: 3}}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

func summary(in StageInput, recs ...*Record) *StageSummary {
	s := NewStage(in)
	for _, r := range recs {
		s.Add(r)
	}
	return s.Summary()
}

// TestStageHandComputed checks every formula against numbers worked out by hand.
func TestStageHandComputed(t *testing.T) {
	gaps := []float64{20, 30, 40, 30, 20, 30, 40, 30, 20} // 9 gaps: OSL 10
	recs := []*Record{
		ok(0.5, 100, gaps, 10), // warmup start; ends at 0.86 s: before W, not in throughput
		ok(0.9, 100, gaps, 10), // warmup start; ends at 1.26 s: in throughput
		ok(2, 100, gaps, 10),   // in window
		ok(3, 200, gaps, 10),   // in window
		ok(4, 300, gaps, 10),   // in window
		ok(5, 400, gaps, 10),   // in window; TTFT over nothing (limit 500)
		failed(6, 500, "Internal Server Error"),
		failed(6.5, 429, "Too Many Requests"),
		failed(7, CodeCancelled, ErrTypeCancelled),
		ok(10.9, 100, gaps, 10), // starts in window, ends at 11.26 s: after E, not in throughput
		ok(11.5, 100, gaps, 10), // starts after E: late
	}
	s := summary(input(), recs...)
	q := s.Requests
	if q.Total != 11 || q.InWindow != 8 || q.Succeeded != 5 || q.Errors != 2 || q.RateLimited != 1 || q.Cancelled != 1 || q.Warmup != 2 || q.Late != 1 {
		t.Fatalf("counts %+v", q)
	}
	near(t, "error rate", s.ErrorRate.V, 3.0/8)
	if !s.Censored {
		t.Error("cancelled requests must mark latency as censored")
	}
	// TTFT over the 5 in-window successes: 100, 100, 200, 300, 400 → p50 200, p95 at h = 3.8: 300 + 0.8·100.
	near(t, "TTFT p50", s.TTFT.P50, 200)
	near(t, "TTFT p95", s.TTFT.P95, 380)
	near(t, "TTFT mean", s.TTFT.Mean, 220)
	// Pooled ITL: 5 requests × 9 gaps; sorted values 20×15, 30×20, 40×10: p50 is 30, p95 is 40.
	if s.ITL.N != 45 || s.ITL.P50 != 30 || s.ITL.P95 != 40 || s.ITLMethod != ITLExact {
		t.Fatalf("ITL %+v %s", s.ITL, s.ITLMethod)
	}
	// Throughput: successes that ended in [1 s, 11 s): started at 0.9, 2, 3, 4, 5 → 5 requests, 50 tokens over 10 s.
	near(t, "req/s", s.Throughput.ReqPerSec, 0.5)
	near(t, "out tok/s", s.Throughput.OutTokPerSec, 5)
	near(t, "goodput", s.Throughput.GoodputPerSec.V, 0.5)
	// Cache: 50 of 100 prompt tokens cached in each of 5 successes.
	near(t, "cache hit", s.CacheHit.V, 0.5)
	if s.CachedReported != 5 || s.MissingUsage != 0 {
		t.Errorf("cached reported %d, missing usage %d", s.CachedReported, s.MissingUsage)
	}
	// SLO: TTFT p95 380 ≤ 500, ITL p95 40 ≤ 50, error rate 0.375 ≤ 0.5.
	if s.SLO.Verdict != SLOPass {
		t.Fatalf("SLO %+v", s.SLO)
	}
	// Cost at $2/h: $/1M = 2 / (5 · 3600) · 1e6; $/1K = 2 / (0.5 · 3600) · 1e3; $/session = that / 1e3 · 3.
	near(t, "$/1M out", *s.Cost.USDPer1MOut, 2.0/(5*3600)*1e6)
	near(t, "$/1K turns", *s.Cost.USDPer1KTurns, 2.0/(0.5*3600)*1e3)
	near(t, "$/session", *s.Cost.USDPerSession, 2.0/(0.5*3600)*1e3/1e3*3)
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "1 requests were cancelled") {
		t.Errorf("warnings %v", s.Warnings)
	}
}

func TestStageSLOFailsAndGoodput(t *testing.T) {
	in := input()
	in.SLO.TTFTP95Ms = 250
	s := summary(in, ok(2, 100, []float64{10}, 2), ok(3, 300, []float64{10}, 2))
	if s.SLO.Verdict != SLOFail || *s.SLO.Checks[0].Pass {
		t.Fatalf("TTFT p95 290 over 250 must fail: %+v", s.SLO)
	}
	near(t, "goodput", s.Throughput.GoodputPerSec.V, 0.1) // only the 100 ms request meets the per-request SLO
}

func TestStageNoSuccesses(t *testing.T) {
	s := summary(input(), failed(2, 500, "Internal Server Error"), failed(3, 500, "Internal Server Error"))
	if s.TTFT.Known() || s.ITL.Known() || s.ErrorRate.V != 1 || s.SLO.Verdict != SLOFail {
		t.Fatalf("all errors: %+v", s)
	}
	if s.Cost.USDPer1MOut != nil || s.Cost.USDPer1KTurns != nil || s.Throughput.OutTokPerSec != 0 {
		t.Fatalf("cost must be N/A with 0 out tok/s: %+v", s.Cost)
	}
	in := input()
	in.SLO.ErrorRateMax = 1
	if s := summary(in, failed(2, 500, "x")); s.SLO.Verdict != SLONA {
		t.Fatalf("errors within the limit but TTFT unknown: want N/A, got %s", s.SLO.Verdict)
	}
	if s := summary(input()); s.ErrorRate.OK || s.SLO.Verdict != SLONA {
		t.Fatalf("no records: %+v", s)
	}
}

func TestStageMissingUsageIsNA(t *testing.T) {
	r := ok(2, 100, []float64{10, 10}, 3)
	r.UsageCompletionTokens, r.UsagePromptTokens, r.UsageCachedTokens = Opt[int]{}, Opt[int]{}, Opt[int]{}
	s := summary(input(), r)
	if s.CacheHit.OK || s.MissingUsage != 1 || s.CachedReported != 0 {
		t.Fatalf("missing usage must give N/A cache hit: %+v", s)
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "carried no server usage") {
		t.Fatalf("warnings %v", s.Warnings)
	}
}

func TestStageZeroOutputTokens(t *testing.T) {
	r := ok(2, 100, nil, 0)
	s := summary(input(), r)
	if s.Cost.USDPer1MOut != nil || s.Cost.USDPer1KTurns == nil {
		t.Fatalf("0 output tokens: $/1M must be N/A while $/1K turns exists: %+v", s.Cost)
	}
}

func TestStageInterruptShortensWindow(t *testing.T) {
	in := input()
	in.InterruptNs = Some(sec(6))
	s := summary(in, ok(2, 100, []float64{10}, 2), ok(7, 100, []float64{10}, 2))
	if !s.Partial || s.Window.Seconds != 5 || s.Requests.InWindow != 1 || s.Requests.Late != 1 {
		t.Fatalf("window %+v requests %+v", s.Window, s.Requests)
	}
	near(t, "req/s over the shortened window", s.Throughput.ReqPerSec, 0.2)
}

func TestHeadline(t *testing.T) {
	mk := func(tps float64, verdict string, partial bool) *StageSummary {
		s := &StageSummary{Partial: partial}
		s.Throughput.OutTokPerSec, s.SLO.Verdict, s.Throughput.Requests = tps, verdict, 1
		return s
	}
	unmeasured := func(s *StageSummary, how func(*StageSummary)) *StageSummary { how(s); return s }
	cases := []struct {
		stages []*StageSummary
		want   int
	}{
		{[]*StageSummary{mk(10, SLOPass, false), mk(20, SLOPass, false), mk(30, SLOFail, false)}, 1},
		{[]*StageSummary{mk(20, SLOPass, false), mk(20, SLOPass, false)}, 0}, // tie: the lower stage number
		{[]*StageSummary{mk(10, SLOPass, false), mk(50, SLOPass, true)}, 0},  // partial stages never headline
		{[]*StageSummary{mk(10, SLONA, false), mk(50, SLOFail, false)}, -1},
		// A replay that fell behind its trace did not measure the trace, whatever its SLO says.
		{[]*StageSummary{mk(10, SLOPass, false), unmeasured(mk(50, SLOPass, false), func(s *StageSummary) { s.ReplayValid = Some(false) })}, 0},
		{[]*StageSummary{unmeasured(mk(10, SLOPass, false), func(s *StageSummary) { s.ReplayValid = Some(true) })}, 0},
		// No successful request ended in the window: nothing was measured.
		{[]*StageSummary{unmeasured(mk(0, SLOPass, false), func(s *StageSummary) { s.Throughput.Requests = 0 })}, -1},
	}
	for i, tc := range cases {
		if got := Headline(tc.stages); got != tc.want {
			t.Errorf("case %d: headline %d, want %d", i, got, tc.want)
		}
	}
}

func TestT0ForArrivalRate(t *testing.T) {
	origin := sec(0)
	mk := func(offsetS, lagMs float64, turn int) *Record {
		intended := origin + int64(offsetS*1e9)
		issue := intended + int64(lagMs*1e6)
		return &Record{TurnIndex: turn, CreditIssuedNs: issue, RequestStartNs: issue, IntendedStartNs: Some(intended)}
	}
	f := T0Finder{ArrivalRate: true}
	for _, r := range []*Record{mk(2, 0.3, 0), mk(0, 1, 0), mk(5, 0.5, 0), mk(2.5, 40, 1)} {
		f.Add(r)
	}
	// issue − offset: 1 ms, 0.3 ms, 0.5 ms after the origin → t0 = origin + 0.3 ms.
	if got := f.T0(); !got.OK || got.V != origin+300_000 {
		t.Fatalf("t0 %d ns after the origin, want 300000", got.V-origin)
	}
	c := T0Finder{}
	c.Add(mk(2, 0.3, 0))
	c.Add(mk(0, 1, 0))
	if got := c.T0(); got.V != origin+1_000_000 {
		t.Fatalf("concurrency t0 = first issue: %d", got.V-origin)
	}
}

func TestActiveSessionsAndLags(t *testing.T) {
	mk := func(corr string, turn int, startS, endS, lagMs float64) *Record {
		r := ok(startS, 10, nil, 1)
		r.XCorrelationID, r.TurnIndex = corr, turn
		r.RequestEndNs = Some(sec(endS))
		r.IntendedStartNs = Some(sec(startS) - int64(lagMs*1e6))
		return r
	}
	// A is open over [0, 6 s], B over [3 s, 12 s]; the window is [1 s, 11 s).
	s := summary(input(), mk("A", 0, 0, 2, 5), mk("A", 1, 4, 6, 1), mk("B", 0, 3, 5, 150), mk("B", 1, 8, 12, 3))
	// Open sessions: 1 on [1, 3), 2 on [3, 6), 1 on [6, 11): (2 + 6 + 5) / 10.
	near(t, "active mean", s.Active.Mean, 1.3)
	if s.Active.Min != 1 || s.Active.Max != 2 {
		t.Fatalf("active min/max %+v", s.Active)
	}
	// In the window: turn 0 of B (lag 150 ms), turns 1 of A and B (1 ms, 3 ms).
	if s.StartLag.N != 1 || s.StartLag.P50 != 150 || s.QueuedSessions != 1 || s.ThinkLag.N != 2 || s.ThinkLag.Max != 3 {
		t.Fatalf("start lag %+v think lag %+v queued %d", s.StartLag, s.ThinkLag, s.QueuedSessions)
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "start lag p95 is 150 ms") {
		t.Fatalf("warnings %v", s.Warnings)
	}
}

func TestITLSwitchesToHDR(t *testing.T) {
	s := NewStage(input())
	gaps := make([]float64, 1<<20)
	for i := range gaps {
		gaps[i] = 20 + float64(i%100)/10 // 20.0 … 29.9 ms
	}
	for i := range 9 {
		s.Add(ok(2+float64(i)/10, 100, gaps, len(gaps)+1))
	}
	sum := s.Summary()
	if sum.ITLMethod != ITLHDR || sum.ITL.N != 9<<20 {
		t.Fatalf("method %s, n %d", sum.ITLMethod, sum.ITL.N)
	}
	// The exact distribution is 100 equally likely values, 20.0 … 29.9: p50 lies between 24.9 and 25.0
	// and p99 at 29.8. HDR keeps 3 significant digits, so each is within 0.1 % plus one step.
	exact := summarize(append([]float64(nil), gaps...))
	for _, c := range [][2]float64{{sum.ITL.P50, exact.P50}, {sum.ITL.P90, exact.P90}, {sum.ITL.P99, exact.P99}} {
		if math.Abs(c[0]-c[1]) > 0.001*c[1]+0.1 {
			t.Fatalf("HDR %v vs exact %v: %+v", c[0], c[1], sum.ITL)
		}
	}
}

func TestInjectorWarnings(t *testing.T) {
	calm := InjectorHealth{CPUPercent: 50, Cores: 2, SchedLatencyP99Ms: 0.2, GCPauseTotalMs: 3, RunQueueWaitPercent: Some(8.0)}
	if w := calm.Warnings(); len(w) != 0 {
		t.Fatalf("a calm injector warned: %v", w)
	}
	busy := InjectorHealth{CPUPercent: 170, Cores: 2, SchedLatencyP99Ms: 4, GCPauseTotalMs: 250, RunQueueWaitPercent: Some(25.0)}
	w := strings.Join(busy.Warnings(), "\n")
	for _, want := range []string{"injector CPU busy: 170 % of 200 % (2 cores; over 160 %)", "scheduler latency p99 4.00 ms", "GC paused 250 ms", "waited for a CPU: 0.25 threads at a time on average"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
}

// TestInjectorReadLagStandsForTheScheduler: where the poller's read lag was measured, it decides the
// timestamp warning and lag, and the scheduler latency (which then counts per-request wake-ups only)
// does not; where it was not, the scheduler latency does, as before.
func TestInjectorReadLagStandsForTheScheduler(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    InjectorHealth
		want string // "" = no warning
		lag  float64
	}{
		{"poller calm, scheduler high", InjectorHealth{Cores: 2, SchedLatencyP99Ms: 33.5, ReadLagP99Ms: Some(0.4)}, "", 0.4},
		{"poller late", InjectorHealth{Cores: 2, SchedLatencyP99Ms: 0.5, ReadLagP99Ms: Some(2.5)}, "injector read lag p99 2.50 ms (> 1 ms)", 2.5},
		{"no poller", InjectorHealth{Cores: 2, SchedLatencyP99Ms: 3}, "injector scheduler latency p99 3.00 ms", 3},
	} {
		w := strings.Join(tc.h.Warnings(), "\n")
		if tc.want == "" && w != "" || tc.want != "" && !strings.Contains(w, tc.want) || tc.h.TimestampLagMs() != tc.lag {
			t.Errorf("%s: warnings %q (want %q), timestamp lag %v (want %v)", tc.name, w, tc.want, tc.h.TimestampLagMs(), tc.lag)
		}
	}
}

// TestWarningsOfWhatTheNumbersHide: a stage over 1 % errors whose SLO sets no error-rate limit says
// its verdict judged the successes only; a stage whose requests take half its window or more says
// its throughput understates the load. Neither is said when it does not apply.
func TestWarningsOfWhatTheNumbersHide(t *testing.T) {
	has := func(s *StageSummary, sub string) bool {
		for _, w := range s.Warnings {
			if strings.Contains(w, sub) {
				return true
			}
		}
		return false
	}
	const unjudged, short = "the SLO sets no error-rate limit: its SLO PASS judges the successful requests only", "understates the load"
	noErrLimit := input()
	noErrLimit.SLO = SLOLimits{TTFTP95Ms: 500, ErrorRateUnset: true}
	var recs []*Record
	for i := range 20 {
		recs = append(recs, ok(2+float64(i)*0.1, 100, []float64{10}, 2))
	}
	withErrors := append(append([]*Record{}, recs...), failed(3, 500, "Internal Server Error"))
	if s := summary(noErrLimit, withErrors...); !has(s, unjudged) || !has(s, "4.8% of requests failed") {
		t.Errorf("1 error in 21, no error limit: %q", s.Warnings)
	}
	if s := summary(input(), withErrors...); has(s, "no error-rate limit") {
		t.Errorf("an error limit is set, yet: %q", s.Warnings)
	}
	if s := summary(noErrLimit, recs...); has(s, "no error-rate limit") || has(s, short) {
		t.Errorf("no errors, 110 ms requests in a 10 s window: %q", s.Warnings)
	}
	long := []*Record{ok(2, 100, []float64{4900}, 2), ok(3, 100, []float64{4900}, 2)} // 5 s each: half the window
	if s := summary(input(), long...); !has(s, "requests take 5.0 s (E2E p50), 50% of the 10.0 s window") {
		t.Errorf("5 s requests in a 10 s window: %q", s.Warnings)
	}
}

// TestInterruptedRequestsAreNoErrors: requests the user's interrupt cut off never had the chance to
// finish: a partial stage's error rate and goodput share leave them out, so an interrupt alone never
// turns the SLO to FAIL; requests the drain timeout cancelled were too slow and still count.
func TestInterruptedRequestsAreNoErrors(t *testing.T) {
	in := input()
	in.SLO.ErrorRateMax = 0.05
	recs := []*Record{ok(2, 100, []float64{20}, 2), ok(3, 100, []float64{20}, 2), ok(4, 100, []float64{20}, 2)}
	for i := range 2 {
		r := failed(5+float64(i), CodeCancelled, ErrTypeCancelled)
		r.Error.Message = CancelledByInterrupt
		recs = append(recs, r)
	}
	sum := summary(in, recs...)
	if sum.Requests.Cancelled != 2 || sum.Requests.Interrupted != 2 || !sum.ErrorRate.OK || sum.ErrorRate.V != 0 || sum.SLO.Verdict != SLOPass {
		t.Errorf("cancelled %d, interrupted %d, error rate %+v, SLO %s; want 2 interrupted, error rate 0, PASS",
			sum.Requests.Cancelled, sum.Requests.Interrupted, sum.ErrorRate, sum.SLO.Verdict)
	}
	if !sum.Goodput.Share.OK || sum.Goodput.Share.V != 1 {
		t.Errorf("goodput share %+v, want 1 (3 good of the 3 that could finish)", sum.Goodput.Share)
	}
	if w := strings.Join(sum.Warnings, "\n"); !strings.Contains(w, "2 requests were cut off by the interrupt") || strings.Contains(w, "count as errors") {
		t.Errorf("warnings %q", w)
	}
	// The drain timeout's cancellations are failures of the server's pace.
	drained := failed(7, CodeCancelled, ErrTypeCancelled)
	sum = summary(in, append(recs, drained)...)
	if sum.Requests.Interrupted != 2 || sum.ErrorRate.V != 0.25 || sum.SLO.Verdict != SLOFail {
		t.Errorf("with a drain cancellation: interrupted %d, error rate %v, SLO %s; want 2, 0.25 (1 of 4), FAIL", sum.Requests.Interrupted, sum.ErrorRate.V, sum.SLO.Verdict)
	}
}
