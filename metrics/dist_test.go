package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPercentileInterpolates(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]float64{0: 1, 50: 5.5, 90: 9.1, 95: 9.55, 99: 9.91, 100: 10} {
		if got := Percentile(x, p); math.Abs(got-want) > 1e-12 {
			t.Errorf("p%v = %v, want %v (numpy linear)", p, got, want)
		}
	}
	if Percentile([]float64{7}, 99) != 7 || !math.IsNaN(Percentile(nil, 50)) {
		t.Error("edge cases")
	}
	d := summarize([]float64{3, 1, 2})
	if d.N != 3 || d.Mean != 2 || d.Min != 1 || d.Max != 3 || d.P50 != 2 {
		t.Errorf("%+v", d)
	}
}

// TestBootstrapResamplesRequests: when each request's chunk gaps share a level (its batch, its
// moment), the interval from resampling whole requests is much wider than one that pretends the
// gaps are independent — and equal-level data gives the same interval whichever way it is grouped.
func TestBootstrapResamplesRequests(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	run := func() [][]float64 {
		groups := make([][]float64, 40)
		for i := range groups {
			level := 20 * math.Exp(0.3*rng.NormFloat64())
			for range 50 {
				groups[i] = append(groups[i], level*(1+0.01*rng.NormFloat64()))
			}
		}
		return groups
	}
	base, cand := run(), run()
	clustered := BootstrapRelDiff(base, cand, 95, 1000, 1)
	flat := BootstrapRelDiff(Singletons(slices.Concat(base...)), Singletons(slices.Concat(cand...)), 95, 1000, 1)
	if clustered.Point != flat.Point {
		t.Fatalf("the point estimate depends on grouping: %v vs %v", clustered.Point, flat.Point)
	}
	t.Logf("95%% interval width: %.3f resampling requests, %.3f resampling gaps", clustered.Hi-clustered.Lo, flat.Hi-flat.Lo)
	if cw, fw := clustered.Hi-clustered.Lo, flat.Hi-flat.Lo; cw < 2*fw {
		t.Fatalf("clustered width %.3f, independent %.3f: resampling requests should widen it", cw, fw)
	}
	if iv := BootstrapRelDiff(nil, cand, 95, 10, 1); !math.IsNaN(iv.Lo) {
		t.Fatalf("no baseline values: %+v", iv)
	}
}

// TestBootstrapThinsLargeSamples: over maxBootstrapValues values the groups are thinned, yet every
// request keeps a say and the interval still holds the true (zero) change.
func TestBootstrapThinsLargeSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	mk := func() [][]float64 {
		groups := make([][]float64, 500)
		for i := range groups {
			for range 100 {
				groups[i] = append(groups[i], 10+rng.ExpFloat64())
			}
		}
		return groups
	}
	base := mk()
	thin := thinGroups(base)
	total := 0
	for _, g := range thin {
		total += len(g)
	}
	if len(thin) != 500 || total > maxBootstrapValues || total < maxBootstrapValues/2 {
		t.Fatalf("%d groups, %d values after thinning 50,000", len(thin), total)
	}
	if iv := BootstrapRelDiff(base, mk(), 95, 200, 1); iv.Lo > 0 || iv.Hi < 0 {
		t.Fatalf("same distribution, interval %+v excludes 0", iv)
	}
}

// TestSummarizeUnionIsTheMergedSummary: the summary of two slices together equals, bit for bit, the
// summary of their concatenation — for empty sides, one value, ties across the sides, and random
// lengths. Catches: a rank off by one at the split, ties taken twice, sums in another order.
func TestSummarizeUnionIsTheMergedSummary(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := [][2][]float64{{nil, nil}, {{5}, nil}, {nil, {5}}, {{1, 2, 3}, {2, 2, 2}}, {{1, 1}, {1}}, {{10, 20}, {1, 2, 3, 4, 30}}}
	for range 200 {
		var a, b []float64
		for range rng.IntN(40) {
			a = append(a, float64(rng.IntN(20))) // few distinct values: many ties
		}
		for range rng.IntN(40) {
			b = append(b, float64(rng.IntN(20))+rng.Float64()/4)
		}
		cases = append(cases, [2][]float64{a, b})
	}
	for _, c := range cases {
		merged := append(slices.Clone(c[0]), c[1]...)
		want := summarize(merged)
		got := summarizeUnion(slices.Clone(c[0]), slices.Clone(c[1]))
		if got != want {
			t.Fatalf("union of %v and %v:\n got %+v\nwant %+v", c[0], c[1], got, want)
		}
	}
}
