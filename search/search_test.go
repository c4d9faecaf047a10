package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
)

// threshold is a world without noise: a value passes when it is at most limit.
func threshold(limit float64) (Prober, Judge) {
	stage := 0
	probe := func(_ context.Context, v float64) (int, Measurement, error) {
		stage++
		return stage, Measurement{Requests: int(v * 1000)}, nil
	}
	judge := func(m Measurement, _ uint64) Judgement {
		if float64(m.Requests)/1000 <= limit {
			return Judgement{Verdict: Pass, Reason: "under"}
		}
		return Judgement{Verdict: Fail, Reason: "over"}
	}
	return probe, judge
}

func values(ps []Probe) []float64 {
	out := []float64{}
	for _, p := range ps {
		out = append(out, p.Value)
	}
	return out
}

func ptr(v float64) *float64 { return &v }

func TestSequence(t *testing.T) {
	pct5, _ := ParseResolution("5%")
	for _, tc := range []struct {
		name   string
		opt    Options
		limit  float64
		probes []float64
		best   *float64
		stop   string
	}{
		{"doubles from 1, then bisects to 5%", Options{Start: 1, Max: 4096, Resolution: pct5, Whole: true}, 48,
			[]float64{1, 2, 4, 8, 16, 32, 64, 48, 56, 52, 50}, ptr(48), "resolution 5% reached between 48 and 50"},
		{"a start that fails halves until a pass", Options{Start: 100, Max: 4096, Resolution: pct5, Whole: true}, 30,
			[]float64{100, 50, 25, 37, 31, 28, 29, 30}, ptr(30), "resolution 5% reached between 30 and 31"},
		{"every probe passes up to --max", Options{Start: 10, Max: 50, Resolution: pct5, Whole: true}, 1000,
			[]float64{10, 20, 40, 50}, ptr(50), "every probe up to --max 50 passed"},
		{"nothing passes", Options{Start: 4, Max: 64, Resolution: pct5, Whole: true}, 0.5,
			[]float64{4, 2, 1}, nil, "no probe passed, down to 1"},
		{"a rate bisects to round values", Options{Start: 10, Max: 1000, Resolution: pct5}, 33.3,
			[]float64{10, 20, 40, 30, 35, 33, 34}, ptr(33), "resolution 5% reached between 33 and 34"},
		{"an absolute resolution", Options{Start: 10, Max: 1000, Resolution: Resolution{Value: 4}, Whole: true}, 33,
			[]float64{10, 20, 40, 30, 35, 32}, ptr(32), "resolution 4 reached between 32 and 35"},
		{"the probe budget bounds the search", Options{Start: 1, Max: 4096, Resolution: pct5, Whole: true, MaxProbes: 5}, 1000,
			[]float64{1, 2, 4, 8, 16}, ptr(16), "the probe budget (5 probes) is spent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe, judge := threshold(tc.limit)
			res, err := Run(context.Background(), tc.opt, probe, judge)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.probes, values(res.Probes)); diff != "" {
				t.Errorf("probed values (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.best, res.Best); diff != "" {
				t.Errorf("best (-want +got):\n%s", diff)
			}
			// Above is the lowest value over the best that failed: the bracket's top, none when the
			// search never found one (a lower bound) or found no pass.
			var above *float64
			for _, v := range values(res.Probes) {
				if res.Best != nil && v > *res.Best && v > tc.limit && (above == nil || v < *above) {
					above = ptr(v)
				}
			}
			if diff := cmp.Diff(above, res.Above); diff != "" {
				t.Errorf("above (-want +got):\n%s", diff)
			}
			if res.Stop != tc.stop || res.Undecided != nil || res.Invalid {
				t.Errorf("stop %q (want %q), undecided %v, invalid %v", res.Stop, tc.stop, res.Undecided, res.Invalid)
			}
		})
	}
}

// world is a server whose TTFT has a knee: below knee it is base ms with noise, above it rises
// by step ms per unit of load; near (within band of) the given ambiguous values, its p95 sits on
// the limit. Each probe draws n requests from its own seed.
type world struct {
	knee, base, step float64
	n                int
	seed             uint64
	ambiguous        func(v float64) bool // the p95 is the limit itself
	limit            float64
	stage            int
}

func (w *world) probe(_ context.Context, v float64) (int, Measurement, error) {
	w.stage++
	r := rand.New(rand.NewPCG(w.seed, uint64(w.stage)))
	center := w.base + max(0, v-w.knee)*w.step
	if w.ambiguous != nil && w.ambiguous(v) {
		center = w.limit / 1.18 // uniform on ±20 %: the p95 is 0.8c + 0.95·0.4c = 1.18c, the limit
	}
	xs := make([]float64, w.n)
	for i := range xs {
		xs[i] = center * (1 + 0.2*(2*r.Float64()-1))
	}
	return w.stage, Measurement{Latency: map[string][][]float64{metrics.SLOMetricTTFT: metrics.Singletons(xs)}, Requests: w.n}, nil
}

// noFlapping: every value that passed lies below every value that did not — the verdicts never
// alternate along the axis.
func noFlapping(t *testing.T, res Result) {
	t.Helper()
	final := map[float64]Verdict{}
	for _, p := range res.Probes {
		final[p.Value] = p.Verdict
	}
	for v, a := range final {
		for u, b := range final {
			if a == Pass && b != Pass && v >= u {
				t.Errorf("%g passed but %g (below it) is %s: %+v", v, u, b, res.Probes)
			}
		}
	}
}

// TestKneeWithNoise: over 25 seeds of a noisy server with a knee at 24 (TTFT 20 ms ± 20 %, then
// +10 ms per session), the search from 4 finds 24 within 5 % in at most 12 probes, every time.
func TestKneeWithNoise(t *testing.T) {
	slo := SLO{Latency: []metrics.LatencyLimit{{Metric: "ttft", Stat: "p95", LimitMs: 30}}}
	pct5, _ := ParseResolution("5%")
	for seed := range uint64(25) {
		w := &world{knee: 24, base: 20, step: 10, n: 200, seed: seed}
		res, err := Run(context.Background(), Options{Start: 4, Max: 4096, Resolution: pct5, Repeats: 3, Whole: true}, w.probe, slo.Judge)
		if err != nil {
			t.Fatal(err)
		}
		if res.Best == nil || math.Abs(*res.Best-24) > 0.05*24 || len(res.Probes) > 12 {
			t.Fatalf("seed %d: best %v in %d probes (want 24 ± 5 %% in ≤ 12): %+v", seed, res.Best, len(res.Probes), res.Probes)
		}
		noFlapping(t, res)
	}
}

// TestUndecidedIsARange: where the p95 sits on the limit, each value runs --repeats times and is
// then reported as undecided — a range, never a verdict that flips — and the answer stays the
// last value that surely passed.
func TestUndecidedIsARange(t *testing.T) {
	slo := SLO{Latency: []metrics.LatencyLimit{{Metric: "ttft", Stat: "p95", LimitMs: 30}}}
	pct5, _ := ParseResolution("5%")
	w := &world{knee: 52, base: 10, step: 100, n: 200, seed: 7, limit: 30, ambiguous: func(v float64) bool { return v >= 42 && v <= 52 }}
	res, err := Run(context.Background(), Options{Start: 10, Max: 4096, Resolution: pct5, Repeats: 3, Whole: true}, w.probe, slo.Judge)
	if err != nil {
		t.Fatal(err)
	}
	noFlapping(t, res)
	// 10, 20, 40 pass, 80 and 60 fail, 50, 45 and 42 stay undecided; 40 and 42 are within 5 %.
	if res.Best == nil || *res.Best != 40 {
		t.Errorf("best %v, want 40 (the last value under the band): %+v", res.Best, res.Probes)
	}
	if diff := cmp.Diff(&[2]float64{42, 50}, res.Undecided); diff != "" {
		t.Fatalf("undecided (-want +got):\n%s\n%+v", diff, res.Probes)
	}
	runs := map[float64]int{}
	for _, p := range res.Probes {
		runs[p.Value]++
		if p.Value >= 42 && p.Value <= 52 && p.Verdict != Undecided {
			t.Errorf("%g in the band got %s: %s", p.Value, p.Verdict, p.Reason)
		}
	}
	for v, n := range runs {
		if v >= 42 && v <= 52 && n != 3 {
			t.Errorf("%g ran %d times, want --repeats 3", v, n)
		}
	}
}

func TestRepeatsPoolSamples(t *testing.T) {
	// 20 requests a probe: too few to decide alone, enough once two are pooled.
	slo := SLO{Latency: []metrics.LatencyLimit{{Metric: "ttft", Stat: "p95", LimitMs: 30}}}
	w := &world{knee: 1000, base: 10, n: 20, seed: 1}
	res, err := Run(context.Background(), Options{Start: 8, Max: 8, Resolution: Resolution{Value: 1}, Repeats: 3, Whole: true}, w.probe, slo.Judge)
	if err != nil {
		t.Fatal(err)
	}
	got := []Verdict{}
	for _, p := range res.Probes {
		got = append(got, p.Verdict)
	}
	if diff := cmp.Diff([]Verdict{Undecided, Pass}, got); diff != "" {
		t.Errorf("verdicts of 8 (-want +got):\n%s\n%+v", diff, res.Probes)
	}
	if !strings.Contains(res.Probes[0].Reason, "fewer than the 30") {
		t.Errorf("reason: %s", res.Probes[0].Reason)
	}
}

func TestInvalidAndSaturatedProbes(t *testing.T) {
	pass := func(Measurement, uint64) Judgement { return Judgement{Verdict: Pass, Reason: "fine"} }
	t.Run("an invalid probe stops the search", func(t *testing.T) {
		probe := func(_ context.Context, v float64) (int, Measurement, error) {
			if v >= 8 {
				return 4, Measurement{Invalid: "injector CPU busy: 190 % of 200 %"}, nil
			}
			return int(v), Measurement{}, nil
		}
		res, err := Run(context.Background(), Options{Start: 2, Max: 64, Resolution: Resolution{Value: 0.05, Relative: true}, Repeats: 3, Whole: true}, probe, pass)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Invalid || len(res.Probes) != 3 || res.Stop != "probe at 8 is invalid: injector CPU busy: 190 % of 200 %" || *res.Best != 4 {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("a saturated probe fails without a repeat", func(t *testing.T) {
		probe := func(_ context.Context, v float64) (int, Measurement, error) {
			if v >= 8 {
				return 1, Measurement{Saturated: "send lag rose 1 → 2 → 4 → 8 ms"}, nil
			}
			return 1, Measurement{}, nil
		}
		res, _ := Run(context.Background(), Options{Start: 4, Max: 8, Resolution: Resolution{Value: 4}, Repeats: 3, Whole: true}, probe, pass)
		last := res.Probes[len(res.Probes)-1]
		if len(res.Probes) != 2 || last.Verdict != Fail || last.Reason != "saturated: send lag rose 1 → 2 → 4 → 8 ms" ||
			len(last.Decided) != 1 || last.Decided[0] != (Decision{Limit: "saturation", Outcome: "broken", Rule: RuleSaturated}) {
			t.Fatalf("%+v", res.Probes)
		}
	})
	t.Run("a probe stopped early, its records showing no saturation, fails by the limit that stopped it", func(t *testing.T) {
		probe := func(_ context.Context, v float64) (int, Measurement, error) {
			if v >= 8 {
				return 1, Measurement{StoppedEarly: "ttft p95 cannot be met: 30 of 30 requests so far over 1.00 ms", StoppedLimit: "ttft p95"}, nil
			}
			return 1, Measurement{}, nil
		}
		res, _ := Run(context.Background(), Options{Start: 4, Max: 8, Resolution: Resolution{Value: 4}, Repeats: 3, Whole: true}, probe, pass)
		last := res.Probes[len(res.Probes)-1]
		if len(res.Probes) != 2 || last.Verdict != Fail || last.Reason != "stopped early, the load could no longer pass: ttft p95 cannot be met: 30 of 30 requests so far over 1.00 ms" ||
			len(last.Decided) != 1 || last.Decided[0] != (Decision{Limit: "ttft p95", Outcome: "broken", Rule: RuleEarlyStop}) {
			t.Fatalf("%+v", res.Probes)
		}
	})
	t.Run("a strained client: a pass stands, a fail runs again unless it survives the lateness", func(t *testing.T) {
		// Every request of load v takes 2.5·v ms against a 30 ms limit: 4 and 8 pass, 16 fails by
		// 10 ms. strained[v] runs of v are strained, late by up to late ms.
		slo := SLO{Latency: []metrics.LatencyLimit{{Metric: "ttft", Stat: "p95", LimitMs: 30}}}
		var strained map[float64]int
		var late float64
		runs := map[float64]int{}
		probe := func(_ context.Context, v float64) (int, Measurement, error) {
			runs[v]++
			xs := make([]float64, 100)
			for i := range xs {
				xs[i] = 2.5 * v
			}
			m := Measurement{Latency: map[string][][]float64{"ttft": metrics.Singletons(xs)}, Requests: 100}
			if runs[v] <= strained[v] {
				m.Strained, m.LateMs = "threads waited for a CPU 20% of the time", late
			}
			return len(runs), m, nil
		}
		search := func() (Result, []string) {
			runs = map[float64]int{}
			res, err := Run(context.Background(), Options{Start: 4, Max: 16, Resolution: Resolution{Value: 8}, Repeats: 3, Whole: true}, probe, slo.Judge)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range res.Probes {
				got = append(got, fmt.Sprintf("%g %s", p.Value, p.Verdict))
			}
			return res, got
		}
		for _, tc := range []struct {
			name     string
			strained map[float64]int
			late     float64
			want     []string
			invalid  bool
		}{
			{"strained twice, late by 20 ms: the fail runs again", map[float64]int{8: 1, 16: 2}, 20, []string{"4 pass", "8 pass", "16 undecided", "16 undecided", "16 fail"}, false},
			{"strained at every run: invalid", map[float64]int{16: 3}, 20, []string{"4 pass", "8 pass", "16 undecided", "16 undecided", "16 invalid"}, true},
			{"late by 5 ms only: the fail stands", map[float64]int{16: 3}, 5, []string{"4 pass", "8 pass", "16 fail"}, false},
		} {
			strained, late = tc.strained, tc.late
			res, got := search()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s\n%+v", tc.name, diff, res.Probes)
			}
			if res.Invalid != tc.invalid {
				t.Errorf("%s: invalid %v: %s", tc.name, res.Invalid, res.Stop)
			}
		}
		strained, late = map[float64]int{8: 1, 16: 1}, 20
		res, _ := search()
		if !strings.Contains(res.Probes[1].Reason, "read up to 20.0 ms longer, never shorter") || !strings.Contains(res.Probes[2].Reason, "run again") {
			t.Errorf("reasons: %+v", res.Probes)
		}
	})
	t.Run("a probe's error stops the search and is returned", func(t *testing.T) {
		boom := errors.New("disk full")
		probe := func(context.Context, float64) (int, Measurement, error) { return 0, Measurement{}, boom }
		if _, err := Run(context.Background(), Options{Start: 1, Max: 8, Whole: true}, probe, pass); !errors.Is(err, boom) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestParseResolution(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Resolution
		err  string
	}{
		{"5%", Resolution{Value: 0.05, Relative: true}, ""},
		{" 2.5% ", Resolution{Value: 0.025, Relative: true}, ""},
		{"2", Resolution{Value: 2}, ""},
		{"0.5", Resolution{Value: 0.5}, ""},
		{"0%", Resolution{}, "more than 0"},
		{"100%", Resolution{}, "under 100%"},
		{"-1", Resolution{}, "more than 0"},
		{"five", Resolution{}, `--resolution "five": accepted: a percentage such as 5%`},
		{"NaN", Resolution{}, "accepted: a percentage"},
	} {
		got, err := ParseResolution(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestUndecidedStartGoesUp: a start that its repeats leave undecided is not a failure. The search
// goes on upward and finds the knee above it; the undecided start is the range it reports. With
// no pass and no fail at all, the answer is undecided, never "none".
func TestUndecidedStartGoesUp(t *testing.T) {
	pct5, _ := ParseResolution("5%")
	// Below 4 the probe sees too few requests for any decision; from 4 to 12 it passes, above 12 it fails.
	probe := func(_ context.Context, v float64) (int, Measurement, error) {
		return int(v), Measurement{Requests: int(v)}, nil
	}
	judge := func(m Measurement, _ uint64) Judgement {
		switch v := float64(m.Requests); {
		case v < 4:
			return Judgement{Verdict: Undecided, Reason: "too few"}
		case v <= 12:
			return Judgement{Verdict: Pass, Reason: "under"}
		}
		return Judgement{Verdict: Fail, Reason: "over"}
	}
	res, err := Run(context.Background(), Options{Start: 1, Max: 64, Resolution: pct5, Repeats: 1, Whole: true}, probe, judge)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{1, 2, 4, 8, 16, 12, 14, 13}, values(res.Probes)); diff != "" {
		t.Errorf("probed values (-want +got):\n%s", diff)
	}
	if res.Best == nil || *res.Best != 12 || res.LowestFailed {
		t.Errorf("best %v (want 12), lowest failed %v: %+v", res.Best, res.LowestFailed, res.Probes)
	}
	if diff := cmp.Diff(&[2]float64{1, 2}, res.Undecided); diff != "" {
		t.Errorf("undecided (-want +got):\n%s", diff)
	}

	t.Run("undecided up to the first fail: the search looks below it", func(t *testing.T) {
		undecidedTo := func(m Measurement, _ uint64) Judgement {
			if m.Requests <= 8 {
				return Judgement{Verdict: Undecided, Reason: "too few"}
			}
			return Judgement{Verdict: Fail, Reason: "over"}
		}
		res, err := Run(context.Background(), Options{Start: 4, Max: 64, Resolution: pct5, Repeats: 1, Whole: true}, probe, undecidedTo)
		if err != nil {
			t.Fatal(err)
		}
		// 4 and 8 undecided, 16 fails; below: 8 and 4 are not run again, 2 and 1 are.
		if diff := cmp.Diff([]float64{4, 8, 16, 2, 1}, values(res.Probes)); diff != "" {
			t.Errorf("probed values (-want +got):\n%s", diff)
		}
		if res.Best != nil || res.LowestFailed || res.Undecided == nil || *res.Undecided != [2]float64{1, 8} {
			t.Errorf("best %v, lowest failed %v, undecided %v: %+v", res.Best, res.LowestFailed, res.Undecided, res.Probes)
		}
	})
	t.Run("a fail at the lowest load is a real none", func(t *testing.T) {
		probe, judge := threshold(0.5)
		res, err := Run(context.Background(), Options{Start: 4, Max: 64, Resolution: pct5, Whole: true}, probe, judge)
		if err != nil || res.Best != nil || !res.LowestFailed {
			t.Errorf("best %v, lowest failed %v, err %v", res.Best, res.LowestFailed, err)
		}
	})
	t.Run("everything undecided up to --max", func(t *testing.T) {
		never := func(Measurement, uint64) Judgement { return Judgement{Verdict: Undecided, Reason: "too few"} }
		res, err := Run(context.Background(), Options{Start: 8, Max: 32, Resolution: pct5, Repeats: 1, Whole: true}, probe, never)
		if err != nil || res.Best != nil || res.LowestFailed || res.Stop != "no probe up to --max 32 was decided" {
			t.Errorf("best %v, lowest failed %v, stop %q, err %v", res.Best, res.LowestFailed, res.Stop, err)
		}
	})
}

// TestErrorRateLimitDoesNotHoldBackShortProbes: the customer's default SLO (TTFT p95 and
// error_rate_max 0.01) with short probes of about 100 requests against a server that never errs:
// the search finds the knee, as it does without the error-rate limit.
func TestErrorRateLimitDoesNotHoldBackShortProbes(t *testing.T) {
	pct5, _ := ParseResolution("5%")
	for _, errSet := range []bool{false, true} {
		slo := SLO{Latency: []metrics.LatencyLimit{{Metric: "ttft", Stat: "p95", LimitMs: 30}}, ErrorRateMax: 0.01, ErrorRateSet: errSet}
		w := &world{knee: 8, base: 10, step: 10, n: 97, seed: 3}
		res, err := Run(context.Background(), Options{Start: 1, Max: 4096, Resolution: pct5, Repeats: 3, Whole: true}, w.probe, slo.Judge)
		if err != nil {
			t.Fatal(err)
		}
		if res.Best == nil || *res.Best < 8 || *res.Best > 9 || res.Undecided != nil {
			t.Errorf("error-rate limit %v: best %v, undecided %v, want 8–9: %+v", errSet, res.Best, res.Undecided, res.Probes)
		}
	}
}
