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

// maxBootstrapValues bounds the values one resample sorts, so a gate over millions of token gaps
// stays quick; larger samples are thinned evenly within each group.
const maxBootstrapValues = 20_000

// BootstrapRelDiff returns the 95 % interval of candidate's p-th percentile over baseline's, minus 1,
// from iters resamples. Each sample is a list of groups, one per request, and the resampling draws
// whole groups with replacement: the token gaps of one request share its batch and its moment, so
// treating them as independent would claim more certainty than the data holds (a cluster
// bootstrap). Single values are groups of one. The seed makes it reproducible. Either side without
// a value gives NaN.
func BootstrapRelDiff(baseline, candidate [][]float64, p float64, iters int, seed uint64) Interval {
	return bootstrapTwo(baseline, candidate, p, iters, seed, func(a, b float64) float64 { return b/a - 1 })
}

// BootstrapDiff is BootstrapRelDiff for the plain difference: candidate's p-th percentile minus
// baseline's, in their unit (an A/B's "B is 12 ms slower at p95, 95 % interval 7–18 ms").
func BootstrapDiff(baseline, candidate [][]float64, p float64, iters int, seed uint64) Interval {
	return bootstrapTwo(baseline, candidate, p, iters, seed, func(a, b float64) float64 { return b - a })
}

// BootstrapPercentile is the 95 % interval of one sample's p-th percentile (Point is the percentile
// itself), resampling whole groups as BootstrapRelDiff does: whether a probe's p95 TTFT is surely
// under a limit, or the data cannot tell yet. No value gives NaN.
func BootstrapPercentile(sample [][]float64, p float64, iters int, seed uint64) Interval {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	point := groupPercentile(sample, p)
	sample = thinGroups(sample)
	if len(sample) == 0 {
		return Interval{Point: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	stats := make([]float64, iters)
	var buf []float64
	for i := range stats {
		buf = resampleGroups(rng, buf, sample)
		stats[i] = Percentile(buf, p)
	}
	slices.Sort(stats)
	return Interval{Point: point, Lo: Percentile(stats, 2.5), Hi: Percentile(stats, 97.5), N: iters}
}

// bootstrapTwo resamples both sides independently and takes the 2.5th and 97.5th percentiles of
// compare(baseline's percentile, candidate's) over the resamples.
func bootstrapTwo(baseline, candidate [][]float64, p float64, iters int, seed uint64, compare func(a, b float64) float64) Interval {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	point := compare(groupPercentile(baseline, p), groupPercentile(candidate, p)) // from every value, before any thinning
	baseline, candidate = thinGroups(baseline), thinGroups(candidate)
	if len(baseline) == 0 || len(candidate) == 0 {
		return Interval{Point: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	diffs := make([]float64, iters)
	var bufA, bufB []float64
	for i := range diffs {
		bufA, bufB = resampleGroups(rng, bufA, baseline), resampleGroups(rng, bufB, candidate)
		diffs[i] = compare(Percentile(bufA, p), Percentile(bufB, p))
	}
	slices.Sort(diffs)
	return Interval{Point: point, Lo: Percentile(diffs, 2.5), Hi: Percentile(diffs, 97.5), N: iters}
}

// groupPercentile is the p-th percentile of every value of every group.
func groupPercentile(groups [][]float64, p float64) float64 {
	s := slices.Concat(groups...)
	slices.Sort(s)
	return Percentile(s, p)
}

// resampleGroups draws len(groups) groups with replacement into buf, sorted.
func resampleGroups(rng *rand.Rand, buf []float64, groups [][]float64) []float64 {
	buf = buf[:0]
	for range groups {
		buf = append(buf, groups[rng.IntN(len(groups))]...)
	}
	slices.Sort(buf)
	return buf
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
