package metrics

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestSeriesHandComputed checks every per-second line of the stage charts against values worked out
// by hand. The window is [1 s, 11 s) after t0 (input()); buckets are whole seconds from t0.
func TestSeriesHandComputed(t *testing.T) {
	corr := func(r *Record, id string) *Record { r.XCorrelationID = id; return r }
	recs := []*Record{
		corr(ok(-0.5, 100, []float64{10}, 2), "Z"),           // before t0: in no bucket
		corr(ok(0.5, 100, []float64{50, 50}, 3), "A"),        // warmup; ends 0.7 s
		corr(ok(1.2, 300, []float64{100}, 2), "A"),           // ends 1.6 s
		corr(ok(1.5, 200, []float64{10, 20, 30}, 4), "B"),    // ends 1.76 s
		corr(failed(2.5, 500, "Internal Server Error"), "B"), // no success, but B stays open to 2.51 s
		corr(ok(3.2, 150, []float64{150}, 2), "C"),           // ends 3.5 s: exactly bucket 3's middle
		corr(ok(11.5, 100, []float64{5}, 2), "D"),            // late (starts at E); ends 11.605 s
		{CreditIssuedNs: sec(4), RequestStartNs: sec(4)},     // no end, no session: a record still open
		{CreditIssuedNs: sec(5), RequestStartNs: sec(5), TTFT: Some(1.0), RequestEndNs: Some(sec(5.1)),
			Error: &RecordError{Type: "x", Message: "m"}, XCorrelationID: "E"}, // an error: counts only as a session
		{CreditIssuedNs: sec(6), RequestStartNs: sec(6), WasCancelled: true, CancellationTimeNs: Some(sec(6.2)),
			Error: &RecordError{Type: ErrTypeCancelled, Message: CancelledByInterrupt}}, // the user's interrupt: no error
		{CreditIssuedNs: sec(7), RequestStartNs: sec(7), WasCancelled: true, CancellationTimeNs: Some(sec(7.3)),
			Error: &RecordError{Type: ErrTypeCancelled, Message: "drain timeout"}}, // the drain's: an error, at its cancellation
	}
	sum := summary(input(), recs...)
	s := Series(recs, sum)
	nan := math.NaN()
	// The last end, 11.605 s, makes ceil(11.605) + 1 = 13 buckets.
	want := StageSeries{
		T0Ns: base, WNs: sec(1), EEffNs: sec(11),
		Seconds:      []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		ReqPerSec:    []float64{1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0}, // by end: 0.7; 1.6, 1.76; 3.5; 11.605
		OutTokPerSec: []float64{3, 6, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0},
		ErrorsPerSec: []float64{0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0}, // by end: 2.51 (B's 500), 5.1 (E), 7.3 (the drain's)
		SentPerSec:   []float64{1, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0}, // by start, every outcome; Z before t0 in none
		// By start: bucket 1 holds TTFT 300 and 200: p95 = 200 + 0.95 × 100 = 295.
		TTFTP95Ms: []float64{100, 295, nan, 150, nan, nan, nan, nan, nan, nan, nan, 100, nan},
		// Open at each middle: A [0.5, 1.6], B [1.5, 2.51], C [3.2, 3.5), D [11.5, 11.605], E [5, 5.1].
		// A session starting at the middle counts (B at 1.5, D at 11.5); one ending there does not (C).
		ActiveSessions: []float64{1, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0},
		TTFT:           []float64{150, 200, 300},        // in-window successes, sorted
		E2E:            []float64{400, 260, 300},        // in record order
		ITL:            []float64{10, 20, 30, 100, 150}, // pooled, sorted
		ITLByRequest:   [][]float64{{100}, {10, 20, 30}, {150}},
	}
	if diff := cmp.Diff(want, s, cmpopts.EquateNaNs(), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Fatalf("series (-want +got):\n%s", diff)
	}
}

// TestSeriesThinsTheITLCurve: past 5,000 pooled gaps the CDF keeps 5,000 evenly spaced order
// statistics, the smallest and the largest included, so its shape stays and its size is bounded.
func TestSeriesThinsTheITLCurve(t *testing.T) {
	gaps := make([]float64, 10001)
	for i := range gaps {
		gaps[i] = float64(len(gaps) - 1 - i) // 10000 … 0: sorting matters too
	}
	recs := []*Record{ok(2, 100, gaps, len(gaps)+1)}
	s := Series(recs, summary(input(), recs...))
	if len(s.ITL) != maxCDFPoints {
		t.Fatalf("%d CDF points, want %d", len(s.ITL), maxCDFPoints)
	}
	for i, v := range s.ITL {
		// The i-th kept value is order statistic i × 10000 ÷ 4999 (integer division), and order
		// statistic k of 0 … 10000 is k.
		if want := float64(i * 10000 / (maxCDFPoints - 1)); v != want {
			t.Fatalf("point %d is %v, want %v", i, v, want)
		}
	}
	if len(s.ITLByRequest) != 1 || len(s.ITLByRequest[0]) != len(gaps) {
		t.Fatalf("per-request gaps must stay whole: %d lists", len(s.ITLByRequest))
	}
}

// TestSeriesRefusesAbsurdSpans: a record that ends more than a million seconds after t0 (a clock gone
// wrong) gives no per-second lines instead of allocating millions of buckets.
func TestSeriesRefusesAbsurdSpans(t *testing.T) {
	far := ok(2, 100, []float64{10}, 2)
	far.RequestEndNs = Some(base + 1_000_000*int64(1e9))
	s := Series([]*Record{far}, summary(input(), far))
	if s.Seconds != nil || s.ReqPerSec != nil || s.T0Ns != base {
		t.Fatalf("series over 1,000,001 s: %d buckets", len(s.Seconds))
	}
	// Just under the limit it is built: 999,999 s after t0 makes ceil + 1 = 1,000,000 buckets.
	near := ok(2, 100, []float64{10}, 2)
	near.RequestEndNs = Some(base + 999_999*int64(1e9))
	if s := Series([]*Record{near}, summary(input(), near)); len(s.Seconds) != 1_000_000 {
		t.Fatalf("%d buckets, want 1,000,000", len(s.Seconds))
	}
}
