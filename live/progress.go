// Package live shows a run while it goes on: Progress keeps the running numbers the engine feeds it,
// Display draws them as the terminal's status line (or a log line every 10 s), and Collector and Serve
// export them on a Prometheus /metrics endpoint (output.prometheus_port, docs/scenario.md). None of it
// is a result: the results are computed afterwards from the records files.
package live

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/plload/plload/metrics"
)

// Progress keeps the running numbers of a run for the progress display and the live /metrics. Records
// reach it from the records writer goroutine, never from a request, so watching a run does not slow
// it. Safe for concurrent use.
type Progress struct {
	mu     sync.Mutex
	stages map[int]*stageState
	cur    *stageState
	total  int
	active atomic.Int64
	now    func() time.Time
}

// stageState is one stage's running state.
type stageState struct {
	Stage                    int
	Start, WarmupEnd, End    time.Time // WarmupEnd and End are zero until the first request
	Draining                 bool
	OK, Errors, RateLimited  int64
	Cancelled, OutputTokens  int64
	PromptTokens, CachedToks int64
	failures                 metrics.FailureTally
	ttft, itl, latency       *hdrhistogram.Histogram // since the stage started (µs)
	recent                   window                  // the last 10 s, for the progress line
}

// window is a ring of one-second buckets.
type window struct {
	sec    [10]int64 // the second each bucket holds
	ttft   [10]*hdrhistogram.Histogram
	itl    [10]*hdrhistogram.Histogram
	tokens [10]int64
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

// NewProgress returns an empty Progress for a run of total stages.
func NewProgress(total int) *Progress {
	return &Progress{stages: map[int]*stageState{}, total: total, now: time.Now}
}

// StageStarted begins stage (1-based).
func (l *Progress) StageStarted(stage int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := &stageState{Stage: stage, Start: l.now(), ttft: newHist(), itl: newHist(), latency: newHist()}
	for i := range st.recent.ttft {
		st.recent.ttft[i], st.recent.itl[i] = newHist(), newHist()
		st.recent.sec[i] = -1
	}
	l.stages[stage], l.cur = st, st
}

// Window sets the current stage's warmup end and end once its first request is issued.
func (l *Progress) Window(warmupEnd, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.cur.WarmupEnd, l.cur.End = warmupEnd, end
	}
}

// Draining marks the current stage as past its duration.
func (l *Progress) Draining() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.cur.Draining = true
	}
}

// SessionOpened and SessionClosed count open sessions (an atomic add: cheap on any path).
func (l *Progress) SessionOpened() { l.active.Add(1) }

// SessionClosed is the counterpart of SessionOpened.
func (l *Progress) SessionClosed() { l.active.Add(-1) }

func us(ms float64) int64 { return max(1, int64(ms*1000)) }

// Record counts one finished request of the current stage.
func (l *Progress) Record(r *metrics.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.cur
	if st == nil {
		return
	}
	switch {
	case r.WasCancelled:
		st.Cancelled++
		return
	case r.Error != nil:
		st.Errors++
		st.failures.Add(r)
		if r.Error.Code.OK && r.Error.Code.V == metrics.StatusTooManyRequests {
			st.RateLimited++
		}
		return
	}
	st.OK++
	st.OutputTokens += int64(r.OutputSequenceLength.V)
	if r.UsagePromptTokens.OK { // cached tokens of an answer without prompt tokens have no denominator
		st.PromptTokens += int64(r.UsagePromptTokens.V)
		st.CachedToks += int64(min(r.UsageCachedTokens.V, r.UsagePromptTokens.V))
	}
	b := st.recent.bucket(l.now())
	st.recent.tokens[b] += int64(r.OutputSequenceLength.V)
	if r.TTFT.OK {
		st.ttft.RecordValue(us(r.TTFT.V))
		st.recent.ttft[b].RecordValue(us(r.TTFT.V))
	}
	if r.RequestLatency.OK {
		st.latency.RecordValue(us(r.RequestLatency.V))
	}
	for _, g := range r.TokenGaps() { // per token, as stage.json's pooled ITL
		st.itl.RecordValue(us(g))
		st.recent.itl[b].RecordValue(us(g))
	}
}

// bucket returns the ring slot for now, clearing it when it held an older second.
func (w *window) bucket(now time.Time) int {
	sec := now.Unix()
	i := int(sec % int64(len(w.sec)))
	if w.sec[i] != sec {
		w.sec[i] = sec
		w.ttft[i].Reset()
		w.itl[i].Reset()
		w.tokens[i] = 0
	}
	return i
}

// Snapshot is what the progress line and /metrics show.
type Snapshot struct {
	Stage, Stages                   int
	Phase                           string // warmup, measuring, draining
	Elapsed, Duration               time.Duration
	OK, Errors, RateLimited, Cancel int64
	Active                          int64
	OutTokPerSec10s                 float64
	TTFTP95Ms10s, ITLP95Ms10s       float64 // NaN-free: 0 when no data
	OutTokPerSecAvg, ReqPerSecAvg   float64
	ErrorRatePct, CacheReadPct      float64
	// Failures are the stage's errors by kind, most frequent first, each with its first message.
	Failures           []metrics.KindCount
	TTFT, ITL, Latency *hdrhistogram.Histogram // copies, since the stage started
}

// Snapshot returns the current stage's numbers.
func (l *Progress) Snapshot() (Snapshot, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.cur
	if st == nil {
		return Snapshot{}, false
	}
	return l.snapshot(st), true
}

// Snapshots returns every stage's numbers, for /metrics (it does not drop between stages).
func (l *Progress) Snapshots() []Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Snapshot, 0, len(l.stages))
	for i := 1; i <= l.total; i++ {
		if st, ok := l.stages[i]; ok {
			out = append(out, l.snapshot(st))
		}
	}
	return out
}

func (l *Progress) snapshot(st *stageState) Snapshot {
	now := l.now()
	s := Snapshot{Stage: st.Stage, Stages: l.total, OK: st.OK, Errors: st.Errors, RateLimited: st.RateLimited,
		Cancel: st.Cancelled, Active: l.active.Load(), Elapsed: now.Sub(st.Start), Failures: st.failures.Kinds()}
	switch {
	case st.Draining:
		s.Phase = "draining"
	case st.WarmupEnd.IsZero() || now.Before(st.WarmupEnd):
		s.Phase = "warmup"
	default:
		s.Phase = "measuring"
	}
	if !st.End.IsZero() {
		s.Duration = st.End.Sub(st.Start)
	}
	ttft, itl := newHist(), newHist()
	var tokens int64
	sec := now.Unix()
	for i := range st.recent.sec {
		if st.recent.sec[i] > sec-10 && st.recent.sec[i] <= sec {
			ttft.Merge(st.recent.ttft[i])
			itl.Merge(st.recent.itl[i])
			tokens += st.recent.tokens[i]
		}
	}
	s.OutTokPerSec10s = float64(tokens) / 10
	if ttft.TotalCount() > 0 {
		s.TTFTP95Ms10s = float64(ttft.ValueAtQuantile(95)) / 1000
	}
	if itl.TotalCount() > 0 {
		s.ITLP95Ms10s = float64(itl.ValueAtQuantile(95)) / 1000
	}
	if secs := s.Elapsed.Seconds(); secs > 0 {
		s.OutTokPerSecAvg = float64(st.OutputTokens) / secs
		s.ReqPerSecAvg = float64(st.OK) / secs
	}
	if n := st.OK + st.Errors + st.Cancelled; n > 0 {
		s.ErrorRatePct = 100 * float64(st.Errors+st.Cancelled) / float64(n)
	}
	if st.PromptTokens > 0 {
		s.CacheReadPct = 100 * float64(st.CachedToks) / float64(st.PromptTokens)
	}
	s.TTFT, s.ITL, s.Latency = hdrhistogram.Import(st.ttft.Export()), hdrhistogram.Import(st.itl.Export()), hdrhistogram.Import(st.latency.Export())
	return s
}
