package metrics

import (
	"math/rand/v2"
	"sort"
)

// Interval is a bootstrap confidence interval of a relative difference (candidate ÷ baseline − 1).
type Interval struct {
	Point, Lo, Hi float64
	N             int // resamples
}

// BootstrapRelDiff resamples both samples with replacement iters times and returns the 95 % interval
// of candidate's p-th percentile over baseline's, minus 1. The seed makes it reproducible.
func BootstrapRelDiff(baseline, candidate []float64, p float64, iters int, seed uint64) Interval {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	pct := func(xs []float64) float64 {
		s := append([]float64(nil), xs...)
		sort.Float64s(s)
		return Percentile(s, p)
	}
	point := pct(candidate)/pct(baseline) - 1
	diffs := make([]float64, iters)
	bufA, bufB := make([]float64, len(baseline)), make([]float64, len(candidate))
	for i := range diffs {
		for k := range bufA {
			bufA[k] = baseline[rng.IntN(len(baseline))]
		}
		for k := range bufB {
			bufB[k] = candidate[rng.IntN(len(candidate))]
		}
		sort.Float64s(bufA)
		sort.Float64s(bufB)
		diffs[i] = Percentile(bufB, p)/Percentile(bufA, p) - 1
	}
	sort.Float64s(diffs)
	return Interval{Point: point, Lo: Percentile(diffs, 2.5), Hi: Percentile(diffs, 97.5), N: iters}
}
