package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Interval is a bootstrap confidence interval of a relative difference (candidate ÷ baseline − 1).
type Interval struct {
	Point, Lo, Hi float64
	N             int // resamples
}

// maxBootstrapValues bounds the values one resample sorts, so a gate over millions of chunk gaps
// stays quick; larger samples are thinned evenly within each group.
const maxBootstrapValues = 20_000

// BootstrapRelDiff returns the 95 % interval of candidate's p-th percentile over baseline's, minus 1,
// from iters resamples. Each sample is a list of groups, one per request, and the resampling draws
// whole groups with replacement: the chunk gaps of one request share its batch and its moment, so
// treating them as independent would claim more certainty than the data holds (a cluster
// bootstrap). Single values are groups of one. The seed makes it reproducible. Either side without
// a value gives NaN.
func BootstrapRelDiff(baseline, candidate [][]float64, p float64, iters int, seed uint64) Interval {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	pct := func(groups [][]float64) float64 {
		s := slices.Concat(groups...)
		slices.Sort(s)
		return Percentile(s, p)
	}
	point := pct(candidate)/pct(baseline) - 1 // from every value, before any thinning
	baseline, candidate = thinGroups(baseline), thinGroups(candidate)
	if len(baseline) == 0 || len(candidate) == 0 {
		return Interval{Point: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	diffs := make([]float64, iters)
	var bufA, bufB []float64
	resample := func(buf []float64, groups [][]float64) []float64 {
		buf = buf[:0]
		for range groups {
			buf = append(buf, groups[rng.IntN(len(groups))]...)
		}
		slices.Sort(buf)
		return buf
	}
	for i := range diffs {
		bufA, bufB = resample(bufA, baseline), resample(bufB, candidate)
		diffs[i] = Percentile(bufB, p)/Percentile(bufA, p) - 1
	}
	slices.Sort(diffs)
	return Interval{Point: point, Lo: Percentile(diffs, 2.5), Hi: Percentile(diffs, 97.5), N: iters}
}

// thinGroups keeps every k-th value of each group (offset by the group's index, so no position in
// a request is favoured) when the groups hold more than maxBootstrapValues values in all. Groups left
// empty are dropped.
func thinGroups(groups [][]float64) [][]float64 {
	total := 0
	for _, g := range groups {
		total += len(g)
	}
	k := (total + maxBootstrapValues - 1) / maxBootstrapValues
	out := make([][]float64, 0, len(groups))
	for i, g := range groups {
		if k > 1 {
			var kept []float64
			for j := i % k; j < len(g); j += k {
				kept = append(kept, g[j])
			}
			g = kept
		}
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// Singletons makes each value its own group, for samples with one value per request (TTFT, E2E).
func Singletons(xs []float64) [][]float64 {
	out := make([][]float64, len(xs))
	for i := range xs {
		out[i] = xs[i : i+1 : i+1]
	}
	return out
}
