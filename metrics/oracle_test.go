package metrics

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The oracle: issue 16's numbers recomputed from the records by plain, separate code (no sweep, no
// shared helper), compared with the stage summary to 1e-9 relative.

// genRecords is a realistic stage: sessions of 1–5 turns arriving over 25 s, think time between
// turns, a client that sometimes sends late, reasoning, usage with prompt caching that grows with
// the turn, errors and cancellations, and a tenth of requests without an intended start (as another
// tool's files).
func genRecords(seed uint64) []*Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	var recs []*Record
	for sess := range 80 {
		corr := "s" + string(rune('A'+sess%26)) + string(rune('a'+sess/26))
		intended := base + rng.Int64N(25e9)
		for turn := range 1 + rng.IntN(5) {
			lag := rng.Int64N(300_000) // ≤ 0.3 ms, and now and then a stall of up to 1.5 s
			if rng.IntN(20) == 0 {
				lag = rng.Int64N(1_500_000_000)
			}
			issue := intended + lag
			start := issue + rng.Int64N(200_000)
			r := &Record{XCorrelationID: corr, TurnIndex: turn, CreditIssuedNs: issue, RequestStartNs: start,
				IntendedStartNs: Some(intended), InputSequenceLength: Some(100 + rng.IntN(2000))}
			if rng.IntN(10) == 0 {
				r.IntendedStartNs = Opt[int64]{}
			}
			end := fillOutcome(rng, r)
			recs = append(recs, r)
			intended = end + rng.Int64N(2e9) // think time after the answer
		}
	}
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return recs
}

// fillOutcome makes the request an error (5 %), a cancellation (3 %) or a streamed success, and
// returns its end.
func fillOutcome(rng *rand.Rand, r *Record) int64 {
	switch n := rng.IntN(100); {
	case n < 5:
		end := r.RequestStartNs + rng.Int64N(50e6)
		r.RequestEndNs, r.ErrorISL = Some(end), r.InputSequenceLength
		r.Error = &RecordError{Code: Some(500), Type: "Internal Server Error"}
		return end
	case n < 8:
		end := r.RequestStartNs + rng.Int64N(3e9)
		r.RequestEndNs, r.WasCancelled, r.CancellationTimeNs = Some(end), true, Some(end)
		r.Error = &RecordError{Code: Some(CodeCancelled), Type: ErrTypeCancelled}
		return end
	}
	chunks := 1 + rng.IntN(150)
	first := r.RequestStartNs + 20e6 + rng.Int64N(400e6)
	last := first
	for range chunks - 1 {
		gap := 5e6 + rng.Int64N(60e6)
		r.InterChunkLatency = append(r.InterChunkLatency, Ms(gap))
		last += gap
	}
	osl := chunks + rng.IntN(3) // the server's count may pass the chunks
	r.RequestEndNs = Some(last + 1e6)
	r.TTFT, r.RequestLatency = Some(Ms(first-r.RequestStartNs)), Some(Ms(last-r.RequestStartNs))
	if rng.IntN(4) > 0 {
		r.TTFO = Some(r.TTFT.V + float64(rng.IntN(50)))
	}
	r.OutputSequenceLength, r.UsageCompletionTokens = Some(osl), Some(osl)
	if osl >= 2 {
		r.InterTokenLatency = Some((r.RequestLatency.V - r.TTFT.V) / float64(osl-1))
	}
	r.OutputChars = Some(osl*4 + rng.IntN(7))
	if rng.IntN(8) > 0 {
		r.UsagePromptTokens = r.InputSequenceLength
		r.UsageCachedTokens = Some(min(r.InputSequenceLength.V, r.TurnIndex*300+rng.IntN(200)))
	}
	return r.RequestEndNs.V
}

// oracleIn is the stage the oracle judges: a 2 s warmup, 20 s of window, an SLO on four metrics.
func oracleIn() StageInput {
	return StageInput{Warmup: 2 * time.Second, Duration: 20 * time.Second, T0Ns: Some(base), NeverStarted: -1,
		SLO: SLOLimits{TTFTP95Ms: 350, ErrorRateUnset: true, Latency: []LatencyLimit{
			{SLOMetricTPOT, SLOStatP99, 50}, {SLOMetricE2E, SLOStatP90, 6000}, {SLOMetricTTFT, SLOStatMean, 400}}},
		Cost: CostInputs{Unpriced: true}, Replay: true}
}

// oracleStats are numpy's linear percentiles, the mean and the population std (Welford's update).
func oracleStats(xs []float64) (n int, mean, p50, p90, p95, p99, maxV, std float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	pct := func(p float64) float64 {
		h := float64(len(s)-1) * p / 100
		lo, hi := int(math.Floor(h)), int(math.Ceil(h))
		return s[lo] + (h-float64(lo))*(s[hi]-s[lo])
	}
	m, m2 := 0.0, 0.0
	for i, x := range s {
		d := x - m
		m += d / float64(i+1)
		m2 += d * (x - m)
	}
	return len(s), m, pct(50), pct(90), pct(95), pct(99), s[len(s)-1], math.Sqrt(m2 / float64(len(s)))
}

func relNear(t *testing.T, what string, got, want float64) {
	t.Helper()
	if d := math.Abs(got - want); d > 1e-9*math.Abs(want) && d > 1e-12 {
		t.Errorf("%s = %.15g, oracle %.15g", what, got, want)
	}
}

func checkDist(t *testing.T, what string, got Dist, xs []float64) {
	t.Helper()
	if len(xs) == 0 {
		t.Fatalf("%s: the oracle has no values; the fixture must make some", what)
	}
	n, mean, p50, p90, p95, p99, maxV, std := oracleStats(xs)
	if got.N != n {
		t.Errorf("%s n = %d, oracle %d", what, got.N, n)
	}
	for _, c := range []struct {
		stat      string
		got, want float64
	}{{"mean", got.Mean, mean}, {"p50", got.P50, p50}, {"p90", got.P90, p90}, {"p95", got.P95, p95},
		{"p99", got.P99, p99}, {"max", got.Max, maxV}, {"std", got.Std, std}} {
		relNear(t, what+" "+c.stat, c.got, c.want)
	}
}

// oracle is what the summary should say, computed record by record.
type oracle struct {
	tpot, sendLag, ttftFirst, ttftLater, ttftIntended, e2eIntended []float64
	inTok, outTok, chars, ended, goodEnded, goodStarted, inWindow  int
	prompt, cached                                                 map[int]int
	inFlightArea                                                   float64
	inFlightMax                                                    int
	charsMissing                                                   bool
}

// oracleGood: TTFT ≤ 350 (the turn-1 field) and ≤ 400 (mean limit), TPOT ≤ 50, E2E ≤ 6000; a
// request below 2 tokens has no TPOT and passes that one.
func oracleGood(r *Record) bool {
	if !r.OK() || !r.TTFT.OK || r.TTFT.V > 350 || !r.RequestLatency.OK || r.RequestLatency.V > 6000 {
		return false
	}
	osl := r.OutputSequenceLength.V
	return osl < 2 || (r.RequestLatency.V-r.TTFT.V)/float64(osl-1) <= 50
}

func computeOracle(recs []*Record, w, eff int64) oracle {
	o := oracle{prompt: map[int]int{}, cached: map[int]int{}}
	for _, r := range recs {
		end := r.RequestEndNs.V
		if r.OK() && end >= w && end < eff {
			o.ended++
			o.inTok += r.InputSequenceLength.V
			o.outTok += r.OutputSequenceLength.V
			o.chars += r.OutputChars.V
			o.charsMissing = o.charsMissing || !r.OutputChars.OK
			if oracleGood(r) {
				o.goodEnded++
			}
		}
		// In flight: each request's overlap with the window, over the window's length.
		if lo, hi := max(r.RequestStartNs, w), min(end, eff); hi > lo {
			o.inFlightArea += float64(hi - lo)
		}
		if r.RequestStartNs < w || r.RequestStartNs >= eff {
			continue
		}
		o.inWindow++
		if r.IntendedStartNs.OK {
			o.sendLag = append(o.sendLag, float64(r.CreditIssuedNs-r.IntendedStartNs.V)/1e6)
		}
		if !r.OK() {
			continue
		}
		if oracleGood(r) {
			o.goodStarted++
		}
		if osl := r.OutputSequenceLength.V; osl >= 2 {
			o.tpot = append(o.tpot, (r.RequestLatency.V-r.TTFT.V)/float64(osl-1))
		}
		if r.TurnIndex == 0 {
			o.ttftFirst = append(o.ttftFirst, r.TTFT.V)
		} else {
			o.ttftLater = append(o.ttftLater, r.TTFT.V)
		}
		if r.IntendedStartNs.OK {
			wait := float64(r.RequestStartNs-r.IntendedStartNs.V) / 1e6
			o.ttftIntended = append(o.ttftIntended, wait+r.TTFT.V)
			o.e2eIntended = append(o.e2eIntended, wait+r.RequestLatency.V)
		}
		if r.UsagePromptTokens.OK {
			o.prompt[r.TurnIndex] += r.UsagePromptTokens.V
			o.cached[r.TurnIndex] += r.UsageCachedTokens.V
		}
	}
	// The most in flight: the count open just after W or any start in the window (a count only rises
	// at a start).
	for _, at := range recs {
		t := max(at.RequestStartNs, w)
		if t >= eff || at.RequestEndNs.V <= w {
			continue
		}
		open := 0
		for _, r := range recs {
			if r.RequestStartNs <= t && r.RequestEndNs.V > t {
				open++
			}
		}
		o.inFlightMax = max(o.inFlightMax, open)
	}
	return o
}

// TestOracleRecomputesIssue16Metrics: TPOT, the latencies from the intended start, TTFT by turn,
// send lag (each n, mean, p50, p90, p95, p99, max, std), input/output/total tok/s, out chars/s,
// goodput (req/s and share), in-flight mean and max and cache hit by turn, from generated records —
// in memory and through a records file read back — and from a real `plload run` of
// scenarios/smoke.yaml on the mock (testdata/mock_smoke_records.jsonl).
func TestOracleRecomputesIssue16Metrics(t *testing.T) {
	recs := genRecords(16)
	path := filepath.Join(t.TempDir(), "profile_export.jsonl")
	var buf []byte
	for _, r := range recs {
		buf = append(r.AppendJSON(buf), '\n')
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := SummarizeFile(path, oracleIn(), false)
	if err != nil {
		t.Fatal(err)
	}
	for name, sum := range map[string]*StageSummary{"in memory": summary(oracleIn(), recs...), "from the file": fromFile} {
		t.Run(name, func(t *testing.T) {
			o := checkOracle(t, recs, sum)
			if o.goodStarted == 0 || o.goodStarted == o.inWindow {
				t.Errorf("the fixture must have good and bad requests: %d of %d good", o.goodStarted, o.inWindow)
			}
			// A stall of up to 1.5 s now and then: the replay is not valid.
			if sum.ReplayValid != Some(false) || sum.ReplayInvalidReason == "" {
				t.Errorf("replay_valid %+v (%q) with stalls over 1 s", sum.ReplayValid, sum.ReplayInvalidReason)
			}
		})
	}
	t.Run("a real mock run", func(t *testing.T) {
		// Stage 2 (concurrency 4) of `plload run scenarios/smoke.yaml`: t0 from its stage.json.
		path := filepath.Join("testdata", "mock_smoke_records.jsonl")
		in := oracleIn()
		in.T0Ns, in.Warmup, in.Duration, in.Replay = Some(int64(1796191447577580612)), 3*time.Second, 10*time.Second, false
		sum, err := SummarizeFile(path, in, false)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var mock []*Record
		if err := ReadRecords(f, func(r *Record) error { mock = append(mock, r); return nil }); err != nil {
			t.Fatal(err)
		}
		o := checkOracle(t, mock, sum)
		if sum.Requests.InWindow != 21 || o.inFlightMax != 4 || sum.ReplayValid.OK {
			t.Errorf("%d requests in the window (21 in stage.json), %d in flight at most (concurrency 4), replay_valid %+v on a concurrency stage",
				sum.Requests.InWindow, o.inFlightMax, sum.ReplayValid)
		}
	})
}

func checkOracle(t *testing.T, recs []*Record, s *StageSummary) oracle {
	t.Helper()
	w, eff := s.Window.WNs, s.Window.EEffNs
	secs := float64(eff-w) / 1e9
	o := computeOracle(recs, w, eff)
	checkDist(t, "tpot_ms", s.TPOT, o.tpot)
	checkDist(t, "send_lag_ms", s.SendLag, o.sendLag)
	checkDist(t, "ttft_ms_by_turn.first", s.TTFTByTurn.First, o.ttftFirst)
	checkDist(t, "ttft_ms_by_turn.later", s.TTFTByTurn.Later, o.ttftLater)
	checkDist(t, "ttft_from_intended_ms", s.TTFTFromIntended, o.ttftIntended)
	checkDist(t, "e2e_from_intended_ms", s.E2EFromIntended, o.e2eIntended)
	tp := s.Throughput
	relNear(t, "input_tok_per_sec", tp.InTokPerSec, float64(o.inTok)/secs)
	relNear(t, "out_tok_per_sec", tp.OutTokPerSec, float64(o.outTok)/secs)
	relNear(t, "total_tok_per_sec", tp.TotalTokPerSec, float64(o.inTok+o.outTok)/secs)
	switch {
	case o.charsMissing && tp.OutCharsPerSec.OK:
		t.Errorf("out_chars_per_sec %v, though a counted request has no output_char_count", tp.OutCharsPerSec.V)
	case !o.charsMissing && !tp.OutCharsPerSec.OK:
		t.Error("out_chars_per_sec unknown, though every counted request has output_char_count")
	case !o.charsMissing:
		relNear(t, "out_chars_per_sec", tp.OutCharsPerSec.V, float64(o.chars)/secs)
	}
	if !s.Goodput.ReqPerSec.OK || !s.Goodput.Share.OK {
		t.Fatalf("goodput unknown with per-request limits set: %+v", s.Goodput)
	}
	relNear(t, "goodput.req_per_sec", s.Goodput.ReqPerSec.V, float64(o.goodEnded)/secs)
	relNear(t, "goodput.share", s.Goodput.Share.V, float64(o.goodStarted)/float64(o.inWindow))
	relNear(t, "in_flight.mean", s.InFlight.Mean, o.inFlightArea/float64(eff-w))
	if s.InFlight.Max != o.inFlightMax {
		t.Errorf("in_flight.max = %d, oracle %d", s.InFlight.Max, o.inFlightMax)
	}
	if len(s.CacheHitByTurn) != len(o.prompt) {
		t.Fatalf("cache_hit_by_turn has %d turns, oracle %d: %+v", len(s.CacheHitByTurn), len(o.prompt), s.CacheHitByTurn)
	}
	for i, c := range s.CacheHitByTurn {
		if c.Turn != i {
			t.Errorf("cache_hit_by_turn[%d] is turn %d", i, c.Turn)
		}
		relNear(t, "cache hit of turn "+string(rune('0'+i)), c.CacheHit.V, float64(o.cached[i])/float64(o.prompt[i]))
	}
	return o
}
