package metrics

import (
	"math"
	"testing"
)

// These tests pin the stage math that a plausible slip would change without any other test noticing
// (each names the slip it catches); the fixtures come from stage_test.go.

// TestCostScalesWithGPUCount: the hourly price is per GPU, so a stage served by 4 GPUs costs 4 times
// as much per token and per turn as the same throughput on one, and a count left at 0 means one GPU.
// Catches: cost math that ignores gpu_count.
func TestCostScalesWithGPUCount(t *testing.T) {
	// One success in the window: 10 tokens, 1 request over the 10 s window → 1 out tok/s, 0.1 req/s.
	rec := ok(2, 100, []float64{20, 20, 20, 20, 20, 20, 20, 20, 20}, 10)
	cases := []struct {
		gpus      int
		perGPUHrs float64 // GPU-hours billed per wall-clock hour
	}{{0, 1}, {1, 1}, {4, 4}, {8, 8}}
	for _, tc := range cases {
		in := input()
		in.Cost = CostInputs{GPUHourlyUSD: 2.5, GPUCount: tc.gpus, ExpectedTurns: 4}
		s := summary(in, rec)
		hourly := 2.5 * tc.perGPUHrs
		// $/1M out = hourly ÷ (1 tok/s × 3600) × 10⁶; $/1K turns = hourly ÷ (0.1 req/s × 3600) × 10³;
		// $/session = $/1K turns ÷ 10³ × 4 turns.
		if s.Cost.USDPer1MOut == nil || s.Cost.USDPer1KTurns == nil || s.Cost.USDPerSession == nil {
			t.Fatalf("%d GPUs: cost missing: %+v", tc.gpus, s.Cost)
		}
		near(t, "$/1M out", *s.Cost.USDPer1MOut, hourly/3600*1e6)
		near(t, "$/1K turns", *s.Cost.USDPer1KTurns, hourly/(0.1*3600)*1e3)
		near(t, "$/session", *s.Cost.USDPerSession, hourly/(0.1*3600)*4)
	}
}

// TestGoodputAppliesEachPerRequestLimit: a request is good only when its own TTFT and its own mean
// ITL are within the SLO's limits (a limit is inclusive; a one-token request has no ITL and passes
// that part; an unknown TTFT fails a set TTFT limit). Catches: goodput that ignores the ITL limit,
// or the TTFT one, or turns ≤ into <.
func TestGoodputAppliesEachPerRequestLimit(t *testing.T) {
	noTTFT := ok(2, 100, []float64{10}, 2)
	noTTFT.TTFT = Opt[float64]{}
	cases := []struct {
		name string
		rec  *Record
		good bool
	}{
		// ok() gives mean ITL = sum of gaps ÷ (OSL − 1); the limits are TTFT 500 ms, ITL 50 ms.
		{"both well within", ok(2, 100, []float64{10, 10}, 3), true},
		{"ITL over its limit, TTFT fine", ok(2, 100, []float64{80, 80}, 3), false},
		{"ITL exactly at its limit", ok(2, 100, []float64{50, 50}, 3), true},
		{"TTFT over its limit, ITL fine", ok(2, 600, []float64{10, 10}, 3), false},
		{"TTFT exactly at its limit", ok(2, 500, []float64{10, 10}, 3), true},
		{"one token: no ITL to judge", ok(2, 100, nil, 1), true},
		{"TTFT unknown", noTTFT, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := summary(input(), tc.rec)
			want := 0
			if tc.good {
				want = 1
			}
			if s.Throughput.Requests != 1 || s.Throughput.GoodRequests != Some(want) {
				t.Fatalf("%+v of %d requests good, want %d of 1 (ITL %+v)", s.Throughput.GoodRequests, s.Throughput.Requests, want, tc.rec.InterTokenLatency)
			}
			near(t, "goodput/s", s.Throughput.GoodputPerSec.V, float64(want)/10)
		})
	}
	// With no SLO set, "good" means nothing: the legacy fields are null, as the goodput block is.
	in := input()
	in.SLO = SLOLimits{}
	if s := summary(in, ok(2, 900, []float64{300}, 2)); s.Throughput.GoodRequests.OK || s.Throughput.GoodputPerSec.OK || s.Goodput.ReqPerSec.OK {
		t.Fatalf("no SLO: %+v good, %+v/s, goodput %+v", s.Throughput.GoodRequests, s.Throughput.GoodputPerSec, s.Goodput)
	}
}

// TestCacheHitCountsOnlyRequestsWithPromptTokens: the stage cache hit is Σ cached ÷ Σ prompt tokens
// over the in-window successes that reported prompt tokens. A success without usage (its ISL is the
// client's estimate), a record that reports cached tokens but no prompt tokens, a failure and a warmup
// request take no part on either side. Catches: a denominator (or numerator) that counts requests
// without prompt tokens.
func TestCacheHitCountsOnlyRequestsWithPromptTokens(t *testing.T) {
	withUsage := ok(2, 100, []float64{10}, 2) // prompt 100, cached 50
	noUsage := ok(3, 100, []float64{10}, 2)
	noUsage.UsagePromptTokens, noUsage.UsageCachedTokens, noUsage.UsageCompletionTokens = Opt[int]{}, Opt[int]{}, Opt[int]{}
	noUsage.InputSequenceLength = Some(300)
	cachedOnly := ok(4, 100, []float64{10}, 2)
	cachedOnly.UsagePromptTokens, cachedOnly.UsageCachedTokens = Opt[int]{}, Some(40)
	uncached := ok(5, 100, []float64{10}, 2) // prompt 100, no cached figure: counts as 0 cached
	uncached.UsageCachedTokens = Opt[int]{}
	warm := ok(0.2, 100, []float64{10}, 2) // before W
	warm.UsagePromptTokens, warm.UsageCachedTokens = Some(1000), Some(1000)
	overCached := ok(7, 100, []float64{10}, 2)
	overCached.UsageCachedTokens = Some(400)
	failure := failed(6, 500, "Internal Server Error")
	failure.UsagePromptTokens, failure.UsageCachedTokens = Some(1000), Some(0)

	cases := []struct {
		name string
		recs []*Record
		want Opt[float64]
	}{
		{"one with usage", []*Record{withUsage}, Some(0.5)},
		{"a success without usage beside it", []*Record{withUsage, noUsage}, Some(0.5)},
		{"cached tokens without prompt tokens", []*Record{withUsage, cachedOnly}, Some(0.5)},
		{"prompt tokens without a cached figure", []*Record{withUsage, uncached}, Some(50.0 / 200)},
		{"warmup and failure ignored", []*Record{withUsage, warm, failure}, Some(0.5)},
		{"no request with prompt tokens", []*Record{noUsage, cachedOnly}, Opt[float64]{}},
		// A server that reports more cached than prompt tokens cannot make a hit rate over 100 %:
		// that request counts as all cached (100 of 100), the other as 50 of 100.
		{"more cached than prompt tokens", []*Record{withUsage, overCached}, Some(150.0 / 200)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(input(), tc.recs...).CacheHit
			if got.OK != tc.want.OK || math.Abs(got.V-tc.want.V) > 1e-12 {
				t.Fatalf("cache hit %+v, want %+v", got, tc.want)
			}
		})
	}
}
