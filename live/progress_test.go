package live

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plload/plload/metrics"
)

// clock is a hand-moved clock for Progress: its 10-second window and averages are functions of time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time            { return c.t }
func (c *clock) at(d time.Duration) *clock { c.t = time.Unix(1_000_000, 0).Add(d); return c }

// liveRecord is a success with a TTFT, gaps and output tokens, and 100 prompt tokens of which cached.
func liveRecord(ttft float64, gaps []float64, osl, cached int) *metrics.Record {
	lat := ttft
	for _, g := range gaps {
		lat += g
	}
	return &metrics.Record{TTFT: metrics.Some(ttft), RequestLatency: metrics.Some(lat), InterChunkLatency: gaps,
		OutputSequenceLength: metrics.Some(osl), UsageCompletionTokens: metrics.Some(osl),
		UsagePromptTokens: metrics.Some(100), UsageCachedTokens: metrics.Some(cached)}
}

// failed is a request that failed with an HTTP status or metrics.CodeCancelled (then cancelled).
func failed(code int, typ string) *metrics.Record {
	r := &metrics.Record{Error: &metrics.RecordError{Type: typ, Message: "m"}}
	if code != 0 {
		r.Error.Code = metrics.Some(code)
	}
	r.WasCancelled = code == metrics.CodeCancelled
	return r
}

// TestLiveSnapshotHandComputed: the progress line's numbers for one stage, worked out by hand.
func TestLiveSnapshotHandComputed(t *testing.T) {
	c := (&clock{}).at(0)
	l := NewProgress(2)
	l.now = c.now
	if _, ok := l.Snapshot(); ok {
		t.Fatal("a snapshot before any stage")
	}
	l.Record(liveRecord(100, nil, 1, 0)) // before any stage: dropped
	l.StageStarted(1)
	if s, _ := l.Snapshot(); s.Phase != "warmup" || s.Duration != 0 {
		t.Fatalf("before the window is known: phase %q, duration %v", s.Phase, s.Duration)
	}
	l.Window(c.t.Add(2*time.Second), c.t.Add(12*time.Second))
	for range 3 {
		l.SessionOpened()
	}
	l.SessionClosed()

	c.at(3 * time.Second)
	l.Record(liveRecord(100, []float64{20, 20}, 3, 50))
	l.Record(liveRecord(200, []float64{40}, 2, 30))
	l.Record(failed(500, "Internal Server Error"))
	l.Record(failed(429, "Too Many Requests"))
	l.Record(failed(metrics.CodeCancelled, metrics.ErrTypeCancelled))

	c.at(4 * time.Second)
	s, ok := l.Snapshot()
	if !ok {
		t.Fatal("no snapshot")
	}
	got := s
	got.TTFT, got.ITL, got.Latency = nil, nil, nil
	want := Snapshot{Stage: 1, Stages: 2, Phase: "measuring", Elapsed: 4 * time.Second, Duration: 12 * time.Second,
		OK: 2, Errors: 2, RateLimited: 1, Cancel: 1, Active: 2,
		OutTokPerSec10s: 0.5,  // 5 tokens in the last 10 s
		OutTokPerSecAvg: 1.25, // 5 tokens over 4 s
		ReqPerSecAvg:    0.5,  // 2 successes over 4 s
		ErrorRatePct:    60,   // (2 errors + 1 cancelled) of 5
		CacheReadPct:    40,   // 80 of 200 prompt tokens
		Failures:        []metrics.KindCount{{Kind: "HTTP 429", Count: 1, First: "m"}, {Kind: "HTTP 500", Count: 1, First: "m"}},
		TTFTP95Ms10s:    200, ITLP95Ms10s: 40,
	}
	// HDR keeps 3 significant digits: the p95s are within 0.1 % of 200 ms and 40 ms.
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0.001, 0)); diff != "" {
		t.Fatalf("snapshot (-want +got):\n%s", diff)
	}
	if s.TTFT.TotalCount() != 2 || s.ITL.TotalCount() != 3 || s.Latency.TotalCount() != 2 {
		t.Fatalf("histograms hold %d TTFTs, %d gaps, %d latencies", s.TTFT.TotalCount(), s.ITL.TotalCount(), s.Latency.TotalCount())
	}
	// The copies are the caller's: recording more does not change them.
	l.Record(liveRecord(300, nil, 1, 0))
	if s.TTFT.TotalCount() != 2 {
		t.Fatal("a snapshot's histogram changed after it was taken")
	}

	l.Draining()
	if s, _ := l.Snapshot(); s.Phase != "draining" {
		t.Fatalf("phase %q after Draining", s.Phase)
	}
}

// TestLiveRecentWindow: the "last 10 s" numbers forget a second once it is 10 s old, and a ring slot
// reused ten seconds later starts empty, while the since-start counts keep everything.
func TestLiveRecentWindow(t *testing.T) {
	c := (&clock{}).at(0)
	l := NewProgress(1)
	l.now = c.now
	l.StageStarted(1)
	l.Window(c.t, c.t.Add(time.Minute))
	c.at(3 * time.Second)
	l.Record(liveRecord(500, []float64{50}, 2, 0))

	cases := []struct {
		at           time.Duration
		tokens, ttft float64
	}{
		{3 * time.Second, 0.2, 500},                       // the second it was recorded in
		{12*time.Second + 999*time.Millisecond, 0.2, 500}, // second 12 still looks back to 3
		{13 * time.Second, 0, 0},                          // 10 s later: gone
	}
	for _, tc := range cases {
		c.at(tc.at)
		s, _ := l.Snapshot()
		if s.OutTokPerSec10s != tc.tokens || math.Abs(s.TTFTP95Ms10s-tc.ttft) > tc.ttft*0.001 {
			t.Fatalf("at %v: %v tok/s, TTFT p95 %v; want %v, %v", tc.at, s.OutTokPerSec10s, s.TTFTP95Ms10s, tc.tokens, tc.ttft)
		}
	}
	// Second 13 takes the ring slot second 3 had: the new record alone is in it.
	l.Record(liveRecord(100, []float64{10}, 4, 0))
	s, _ := l.Snapshot()
	if s.OutTokPerSec10s != 0.4 || math.Abs(s.TTFTP95Ms10s-100) > 0.1 || math.Abs(s.ITLP95Ms10s-10) > 0.01 {
		t.Fatalf("reused slot: %v tok/s, TTFT p95 %v, ITL p95 %v; want 0.4, 100, 10", s.OutTokPerSec10s, s.TTFTP95Ms10s, s.ITLP95Ms10s)
	}
	if s.OK != 2 || s.TTFT.TotalCount() != 2 {
		t.Fatalf("since-start counts lost a record: %d ok, %d TTFTs", s.OK, s.TTFT.TotalCount())
	}
}

// TestLiveSnapshotsKeepEveryStage: /metrics lists every stage started so far, in stage order, each
// with its own counts; the progress line follows the newest.
func TestLiveSnapshotsKeepEveryStage(t *testing.T) {
	c := (&clock{}).at(0)
	l := NewProgress(3)
	l.now = c.now
	l.StageStarted(1)
	l.Record(liveRecord(100, nil, 1, 0))
	l.StageStarted(2)
	l.Record(liveRecord(100, nil, 1, 0))
	l.Record(liveRecord(100, nil, 1, 0))
	all := l.Snapshots()
	if len(all) != 2 || all[0].Stage != 1 || all[0].OK != 1 || all[1].Stage != 2 || all[1].OK != 2 || all[0].Stages != 3 {
		t.Fatalf("snapshots %+v", all)
	}
	if cur, _ := l.Snapshot(); cur.Stage != 2 {
		t.Fatalf("current stage %d, want 2", cur.Stage)
	}
	// No cached tokens of 100 is 0 %; no failures is a 0 % error rate.
	if all[0].CacheReadPct != 0 || all[0].ErrorRatePct != 0 {
		t.Fatalf("cache %v error %v", all[0].CacheReadPct, all[0].ErrorRatePct)
	}
	l.StageStarted(3)
	if s, _ := l.Snapshot(); s.ErrorRatePct != 0 || s.ReqPerSecAvg != 0 || s.OutTokPerSecAvg != 0 {
		t.Fatalf("an empty stage at elapsed 0: %+v", s)
	}
}

// TestLiveCacheReadCountsOnlyRequestsWithPromptTokens: the live cache-read % cannot pass 100 %: an
// answer that reports cached tokens but no prompt tokens adds to neither side.
func TestLiveCacheReadCountsOnlyRequestsWithPromptTokens(t *testing.T) {
	l := NewProgress(1)
	l.StageStarted(1)
	l.Record(&metrics.Record{OutputSequenceLength: metrics.Some(1), UsagePromptTokens: metrics.Some(100), UsageCachedTokens: metrics.Some(50)})
	l.Record(&metrics.Record{OutputSequenceLength: metrics.Some(1), UsageCachedTokens: metrics.Some(400)})
	l.Record(&metrics.Record{OutputSequenceLength: metrics.Some(1), UsagePromptTokens: metrics.Some(100), UsageCachedTokens: metrics.Some(300)})
	s, _ := l.Snapshot()
	if s.CacheReadPct != 75 { // (50 + 100) of 200
		t.Fatalf("live cache read %v %%, want 75", s.CacheReadPct)
	}
}
