package ab

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		lo, hi      float64
		lowerBetter bool
		want        string
	}{
		{2, 5, true, Worse},      // B's latency is higher
		{-5, -2, true, Better},   // lower
		{-1, 1, true, Same},      // the interval holds 0
		{0, 3, true, Same},       // 0 at its edge is held
		{-3, 0, false, Same},     // likewise for a throughput
		{2, 5, false, Better},    // B's throughput is higher
		{-5, -2, false, Worse},   // lower
		{0, 0, true, Same},       // two identical samples
		{1e-9, 1, false, Better}, // any margin above 0 decides
	} {
		if got := Verdict(tc.lo, tc.hi, tc.lowerBetter); got != tc.want {
			t.Errorf("Verdict(%g, %g, lowerBetter %v) = %s, want %s", tc.lo, tc.hi, tc.lowerBetter, got, tc.want)
		}
	}
}

const w0, e0 = int64(1_000_000_000), int64(3_000_000_000) // a window [1 s, 3 s)

// rec is a successful request starting at startMs with the given TTFT, latency, tokens and chars.
func rec(session string, startMs, ttft, e2e float64, osl, chars int) *metrics.Record {
	start := int64(startMs * 1e6)
	return &metrics.Record{XCorrelationID: session, ConversationID: "conv-" + session, RequestStartNs: start,
		RequestEndNs: metrics.Some(start + int64(e2e*1e6)), TTFT: metrics.Some(ttft), TTFO: metrics.Some(ttft),
		RequestLatency: metrics.Some(e2e), InterChunkLatency: []float64{1, 2}, OutputSequenceLength: metrics.Some(osl),
		OutputChars: metrics.Some(chars)}
}

func failed(startMs float64, code int, cancelled bool) *metrics.Record {
	r := &metrics.Record{XCorrelationID: "f", RequestStartNs: int64(startMs * 1e6), WasCancelled: cancelled,
		Error: &metrics.RecordError{Code: metrics.Some(code), Type: "x"}}
	return r
}

// TestCollectorFollowsTheWindowRules: latencies from the successes that started in [W, E_eff),
// output from the successes that ended in it, grouped by session; 429s apart within the errors,
// cancellations apart from them.
func TestCollectorFollowsTheWindowRules(t *testing.T) {
	c := NewCollector(w0, e0)
	for _, r := range []*metrics.Record{
		rec("s1", 900, 10, 200, 5, 20),   // warmup start, ends in the window: output only
		rec("s1", 1500, 20, 120, 11, 40), // in the window
		rec("s2", 2950, 30, 100, 3, 9),   // starts in, ends after: latency only
		rec("s2", 3000, 40, 50, 2, 5),    // starts at E_eff: outside
		failed(1600, 429, false),
		failed(1700, 500, false),
		failed(1800, 499, true),
	} {
		c.Add(r)
	}
	want := Sample{
		WindowS: 2, TTFT: []float64{20, 30}, TTFO: []float64{20, 30}, E2E: []float64{120, 100},
		TPOT: []float64{(120 - 20) / 10.0, (100 - 30) / 2.0}, TPOC: []float64{(120 - 20) / 40.0, (100 - 30) / 9.0},
		ITL: [][]float64{{1, 2}, {1, 2}}, Failed: []float64{0, 0, 1, 1, 1},
		Completed:  []Completion{{AtS: 0.1, Tokens: 5, Chars: 20}, {AtS: 0.62, Tokens: 11, Chars: 40}},
		CharsKnown: true,
		Counts:     resultfiles.ABCounts{InWindow: 5, Succeeded: 2, Errors: 2, RateLimited: 1, Cancelled: 1},
	}
	got := c.Sample()
	slices.Sort(got.Failed)
	if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Collector{})); d != "" {
		t.Fatalf("sample (-want +got):\n%s", d)
	}
	// One counted request without output_char_count makes chars unknown, not short.
	c = NewCollector(w0, e0)
	r := rec("s3", 1500, 20, 100, 4, 0)
	r.OutputChars = metrics.Opt[int]{}
	c.Add(r)
	if s := c.Sample(); s.CharsKnown || len(s.TPOC) != 0 {
		t.Fatalf("a record without chars: CharsKnown %v, TPOC %v", s.CharsKnown, s.TPOC)
	}
}

// TestCollectorAgreesWithTheStageSummary: a/b values are the numbers stage.json shows for the same
// records (one window rule, one percentile).
func TestCollectorAgreesWithTheStageSummary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	st := metrics.NewStage(metrics.StageInput{T0Ns: metrics.Some(int64(0)), Warmup: time.Second, Duration: 2 * time.Second, NeverStarted: -1})
	c := NewCollector(w0, e0)
	for i := range 400 {
		start := rng.Float64() * 3500
		r := rec(string(rune('a'+i%26)), start, 50+20*rng.Float64(), 100+100*rng.Float64(), 2+rng.IntN(30), 10+rng.IntN(90))
		st.Add(r)
		c.Add(r)
	}
	sum, s := st.Summary(), c.Sample()
	a := Compare(1, s, s, metrics.SLOLimits{ErrorRateUnset: true}, Options{Resamples: 100, Seed: 1})
	got := map[string]float64{}
	for _, m := range a {
		got[m.Name] = m.A.V
	}
	want := map[string]float64{"ttft_p50_ms": sum.TTFT.P50, "ttft_p95_ms": sum.TTFT.P95, "tpot_p50_ms": sum.TPOT.P50,
		"e2e_p50_ms": sum.E2E.P50, "out_tok_per_sec": sum.Throughput.OutTokPerSec, "out_chars_per_sec": sum.Throughput.OutCharsPerSec.V}
	for name, w := range want {
		if math.Abs(got[name]-w) > 1e-9*math.Max(1, math.Abs(w)) {
			t.Errorf("%s: ab %v, stage summary %v", name, got[name], w)
		}
	}
	if s.Counts.InWindow != sum.Requests.InWindow || s.Counts.Succeeded != sum.Requests.Succeeded {
		t.Errorf("counts %+v, summary %+v", s.Counts, sum.Requests)
	}
}

// synthetic is a sample of n requests over a 10 s window with TTFT ~ ttft·(1 ± 20 %) and about
// tokens output tokens each, ending one after another across the window as a closed loop's do.
func synthetic(rng *rand.Rand, n int, ttft, tokens float64) Sample {
	s := Sample{WindowS: 10, CharsKnown: true}
	for i := range n {
		v := ttft * (1 + 0.4*(rng.Float64()-0.5))
		s.TTFT = append(s.TTFT, v)
		s.E2E = append(s.E2E, v+100)
		s.TPOT = append(s.TPOT, 5+rng.Float64())
		s.TPOC = append(s.TPOC, 1+rng.Float64())
		s.ITL = append(s.ITL, []float64{5 + rng.Float64(), 5 + rng.Float64()})
		s.Failed = append(s.Failed, 0)
		s.Completed = append(s.Completed, Completion{AtS: (float64(i) + rng.Float64()) * 10 / float64(n), Tokens: tokens * (0.5 + rng.Float64()), Chars: 4 * tokens * (0.5 + rng.Float64())})
	}
	s.Counts = resultfiles.ABCounts{InWindow: n, Succeeded: n}
	return s
}

// TestCompareFindsAShiftAndItsDirection: a 10 % slower TTFT is worse with an interval above 0; more
// output per second is better; the same distribution drawn twice is the same in (nearly) every
// draw — the interval's coverage, measured.
func TestCompareFindsAShiftAndItsDirection(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	noSLO := metrics.SLOLimits{ErrorRateUnset: true}
	a, b := synthetic(rng, 400, 50, 20), synthetic(rng, 400, 55, 24)
	ms := Compare(1, a, b, noSLO, Options{Seed: 1})
	byName := map[string]resultfiles.ABMetric{}
	for _, m := range ms {
		byName[m.Name] = m
	}
	p50 := byName["ttft_p50_ms"]
	if p50.Verdict != Worse || p50.CI[0] <= 0 || math.Abs(p50.Diff.V-5) > 1.5 {
		t.Errorf("10 %% slower TTFT: %+v (CI %v), want worse with an interval above 0 and a diff near +5 ms", p50, *p50.CI)
	}
	if v := byName["out_tok_per_sec"]; v.Verdict != Better || v.BetterWhen != "higher" || v.CI[0] <= 0 {
		t.Errorf("20 %% more tokens per request: %+v (CI %v), want better", v, *v.CI)
	}
	if v := byName["tpot_p50_ms"]; v.Verdict != Same {
		t.Errorf("the same TPOT distribution: %s (CI %v)", v.Verdict, *v.CI)
	}
	same := 0
	const trials = 40
	for i := range trials {
		x, y := synthetic(rng, 200, 50, 20), synthetic(rng, 200, 50, 20)
		differ := 0
		for _, m := range Compare(1, x, y, noSLO, Options{Resamples: 500, Seed: uint64(i)}) {
			if m.Verdict != Same {
				differ++
			}
		}
		if differ == 0 {
			same++
		}
	}
	// The rows hold together at 95 %: every row says "same" in about 95 % of the trials or more
	// (the rows are correlated, so more); fewer than 90 % means the intervals are too narrow.
	t.Logf("identical distributions: every row the same in %d of %d trials", same, trials)
	if same < trials*9/10 {
		t.Errorf("identical distributions: every row the same in only %d of %d trials", same, trials)
	}
}

func TestFamilyWidening(t *testing.T) {
	for _, tc := range []struct {
		m    int
		want float64
	}{{0, 1}, {1, 1}, {2, 2.2414 / 1.9600}, {10, 2.8070 / 1.9600}} {
		if got := FamilyWidening(tc.m); math.Abs(got-tc.want) > 1e-3 {
			t.Errorf("FamilyWidening(%d) = %.4f, want %.4f", tc.m, got, tc.want)
		}
	}
}

// TestRateIntervalPairsTheSlices: when the load swings over the window the same way on both sides
// (drift both see), B's steady 10 % more output per request is still found: slice j of A is
// compared with slice j of B, so the swing cancels. Unpaired, its spread would hide the 10 %.
func TestRateIntervalPairsTheSlices(t *testing.T) {
	swing := func(perRequest float64) Sample {
		s := Sample{WindowS: 10, CharsKnown: true}
		for j := range rateSlices {
			n := []int{100, 20}[j%2] // requests completed in slice j
			for i := range n {
				s.Completed = append(s.Completed, Completion{AtS: float64(j) + (float64(i)+0.5)/float64(n), Tokens: perRequest, Chars: 4 * perRequest})
			}
		}
		return s
	}
	a, b := swing(10), swing(11)
	var got resultfiles.ABMetric
	for _, m := range Compare(1, a, b, metrics.SLOLimits{ErrorRateUnset: true}, Options{Resamples: 100}) {
		if m.Name == "out_tok_per_sec" {
			got = m
		}
	}
	if got.Verdict != Better || math.Abs(got.Diff.V-60) > 1e-9 || math.Abs(got.A.V-600) > 1e-9 {
		t.Fatalf("out_tok_per_sec %+v, want A 600, diff +60, better", got)
	}
	if got.CI[0] <= 0 {
		t.Fatalf("interval %v does not exclude 0", *got.CI)
	}
}

// TestCompareAddsTheSLOLimits: one row per SLO limit not already listed, by its stage.json check
// name, and error_rate when the SLO sets it; no name twice.
func TestCompareAddsTheSLOLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	a, b := synthetic(rng, 100, 50, 20), synthetic(rng, 100, 50, 20)
	b.Failed[0] = 1
	slo := metrics.SLOLimits{TTFTP95Ms: 500, ErrorRateMax: 0.01, Latency: []metrics.LatencyLimit{
		{Metric: "itl", Stat: "p99", LimitMs: 100}, {Metric: "e2e", Stat: "mean", LimitMs: 1000}, {Metric: "tpot", Stat: "max", LimitMs: 50}}}
	ms := Compare(2, a, b, slo, Options{Resamples: 200, Seed: 1})
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
		if m.Stage != 2 {
			t.Errorf("%s: stage %d", m.Name, m.Stage)
		}
	}
	want := []string{"ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "e2e_p50_ms", "tpoc_p50_ms", "out_tok_per_sec", "out_chars_per_sec",
		"tpot_max_ms", "itl_p99_ms", "e2e_mean_ms", "error_rate"}
	if d := cmp.Diff(want, names); d != "" {
		t.Fatalf("names (-want +got):\n%s", d)
	}
	last := ms[len(ms)-1]
	if math.Abs(last.B.V-0.01) > 1e-12 || last.A.V != 0 || last.BetterWhen != "lower" {
		t.Errorf("error_rate: %+v", last)
	}
	mean := ms[len(ms)-2]
	if math.Abs(mean.A.V-meanOfSums(groupSums(metrics.Singletons(a.E2E)))) > 1e-9 {
		t.Errorf("e2e_mean_ms: %+v", mean)
	}
}

// TestCompareUnknownIsNotAGuess: a side without a value gives n/a and null diff and interval.
func TestCompareUnknownIsNotAGuess(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	a, b := synthetic(rng, 50, 50, 20), synthetic(rng, 50, 50, 20)
	b.TPOT, b.CharsKnown = nil, false
	v := map[string]resultfiles.ABMetric{}
	for _, m := range Compare(1, a, b, metrics.SLOLimits{ErrorRateUnset: true}, Options{Resamples: 100}) {
		v[m.Name] = m
	}
	for _, name := range []string{"tpot_p50_ms", "out_chars_per_sec"} {
		m := v[name]
		if m.Verdict != Unknown || m.CI != nil || m.Diff.OK || m.B.OK {
			t.Errorf("%s: %+v, want n/a with no diff, interval or B", name, m)
		}
	}
	if !v["tpot_p50_ms"].A.OK {
		t.Error("tpot_p50_ms: A's known value was dropped")
	}
}

func TestMarkdownShowsTheVerdictsAndThe429s(t *testing.T) {
	r := resultfiles.AB{
		Targets:    []resultfiles.ABTarget{{Name: "old", URL: "http://a/v1", Model: "m", Dir: "old"}, {Name: "new", URL: "http://b/v1", Model: "m", Dir: "new"}},
		Confidence: 0.95, Resamples: 2000, SameDataset: true,
		Metrics: []resultfiles.ABMetric{
			{Name: "ttft_p50_ms", A: metrics.Some(50.0), B: metrics.Some(55.25), Diff: metrics.Some(5.25), CI: &[2]float64{4.5, 6}, Verdict: Worse, Stage: 1},
			{Name: "out_tok_per_sec", A: metrics.Some(812.0), B: metrics.Some(790.0), Diff: metrics.Some(-22.0), CI: &[2]float64{-60, 15}, Verdict: Same, Stage: 1},
			{Name: "out_chars_per_sec", Verdict: Unknown, Stage: 1},
		},
		Requests: []resultfiles.ABStageCounts{{Stage: 1, Target: "old", ABCounts: resultfiles.ABCounts{InWindow: 100, Succeeded: 100}},
			{Stage: 1, Target: "new", ABCounts: resultfiles.ABCounts{InWindow: 100, Succeeded: 63, Errors: 37, RateLimited: 37}}},
	}
	r.Notes = StageNotes(1, r.Targets[0], r.Targets[1], r.Requests[0].ABCounts, r.Requests[1].ABCounts)
	md := Markdown(r)
	for _, line := range []string{
		"| ttft_p50_ms | 50.00 | 55.25 | +5.25 | +4.50 … +6.00 | new worse |",
		"| out_tok_per_sec | 812.0 | 790.0 | -22.00 | -60.00 … +15.00 | no significant difference |",
		"| out_chars_per_sec | n/a | n/a | n/a | n/a | n/a |",
		"| HTTP 429 (rate limited) | 0 | 37 |",
		"| errors (429 not included) | 0 | 0 |",
		"- stage 01: new answered 37 of 100 requests with HTTP 429 (rate limited)",
	} {
		if !strings.Contains(md, line) {
			t.Errorf("no line %q in:\n%s", line, md)
		}
	}
	if strings.Contains(md, "not sent the same dataset") {
		t.Error("a fair comparison flagged as unfair")
	}
	r.SameDataset = false
	if !strings.Contains(Markdown(r), "not sent the same dataset") {
		t.Error("different datasets not flagged")
	}
}

// TestErrorRateIntervalIsAShareDifference: B − A of two error rates lies in [−1, 1], so its
// interval, widened for the stage's rows, is cut there — a B that failed almost everything read
// "+0.753 … +1.04" (a difference of shares above 1).
func TestErrorRateIntervalIsAShareDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, tc := range []struct {
		name             string
		failedA, failedB int // of 35 requests each
	}{
		{"B failed almost everything", 0, 32},
		{"A failed almost everything", 32, 0},
		{"both failed everything but one", 34, 34},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := synthetic(rng, 35, 50, 20), synthetic(rng, 35, 50, 20)
			for i := range tc.failedA {
				a.Failed[i] = 1
			}
			for i := range tc.failedB {
				b.Failed[i] = 1
			}
			ms := Compare(1, a, b, metrics.SLOLimits{ErrorRateMax: 0.01}, Options{Resamples: 500, Seed: 1})
			er := ms[len(ms)-1]
			if er.Name != "error_rate" || er.CI == nil {
				t.Fatalf("last row %+v", er)
			}
			if lo, hi := er.CI[0], er.CI[1]; lo < -1 || hi > 1 || lo > er.Diff.V || hi < er.Diff.V {
				t.Errorf("error_rate diff %.3f, interval %.3f … %.3f: want within [−1, 1] and holding the diff", er.Diff.V, lo, hi)
			}
		})
	}
}

// TestValidityNotesSayWhatTheTablesShow: a stage compared on numbers its tables cannot vouch for is
// said to be so, per side, in the stage tables' words — partial, not a valid replay, a strained
// client — and a sound stage, with or without an SLO, gets no such note.
func TestValidityNotesSayWhatTheTablesShow(t *testing.T) {
	a, b := resultfiles.ABTarget{Name: "old"}, resultfiles.ABTarget{Name: "new"}
	sound := func() *resultfiles.StageReport {
		s := &metrics.StageSummary{}
		s.Throughput.Requests = 100
		s.SLO.Verdict = metrics.SLOPass
		return &resultfiles.StageReport{Stage: 1, Summary: s, Injector: metrics.InjectorHealth{CPUPercent: 40, Cores: 2}}
	}
	for _, tc := range []struct {
		name string
		edit func(sa, sb *resultfiles.StageReport)
		want []string
	}{
		{"sound", func(_, _ *resultfiles.StageReport) {}, nil},
		{"no SLO", func(sa, sb *resultfiles.StageReport) {
			sa.Summary.SLO.Verdict, sb.Summary.SLO.Verdict = metrics.SLONA, metrics.SLONA
		}, nil},
		{"partial", func(sa, _ *resultfiles.StageReport) { sa.Summary.Partial = true },
			[]string{"stage 01 is partial (cut short): its windows are what ran"}},
		{"a replay that fell behind on B", func(_, sb *resultfiles.StageReport) {
			sb.Summary.ReplayValid, sb.Summary.ReplayInvalidReason = metrics.Some(false), "send lag p99 37.6 ms (slot wait 0.2 ms, client 37.4 ms)"
		}, []string{"stage 01 is not a valid replay on new: client could not keep the trace's pace: send lag p99 37.6 ms (slot wait 0.2 ms, client 37.4 ms); its latencies are not the trace's, so this stage's verdicts do not stand"}},
		{"a strained client while measuring A", func(sa, _ *resultfiles.StageReport) { sa.Injector.CPUPercent = 190 },
			[]string{"stage 01: the client was strained while it measured old (injector CPU busy: 190 % of 200 %"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sa, sb := sound(), sound()
			tc.edit(sa, sb)
			notes := ValidityNotes(1, a, b, sa, sb)
			if len(notes) != len(tc.want) {
				t.Fatalf("notes %q, want %d", notes, len(tc.want))
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(notes[i], want) {
					t.Errorf("note %q, want it to start %q", notes[i], want)
				}
			}
			r := resultfiles.AB{Targets: []resultfiles.ABTarget{a, b}, Notes: notes}
			for _, n := range notes {
				if !strings.Contains(Markdown(r), "- "+n+"\n") {
					t.Errorf("ab.md lacks the note %q", n)
				}
			}
		})
	}
}
