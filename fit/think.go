package fit

import (
	"fmt"
	"math"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// ThinkChoice is the think-time distribution the scenario writes: of the shapes a scenario takes,
// the one whose p50/p95/p99 are nearest the log's, each given the log's own mean. The mean is what
// sets a session's pace (and with it the load a closed loop offers), so it is kept exactly; the shape
// only decides how the pauses spread around it. A lognormal fitted on ln x alone, or a uniform over
// the log's p1..p99, can miss the mean by a factor of two on exponential pauses.
type ThinkChoice struct {
	// Kind is "constant", "lognormal", "exponential" or "uniform".
	Kind string
	// Mean is the mean written: for a lognormal or exponential that of the unclamped distribution,
	// chosen so that its draws clamped to Max have the log's mean gap; otherwise the log's mean gap
	// (seconds). Sigma is the lognormal's shape; Min and Max the uniform's bounds, or the largest
	// gap a lognormal or exponential is clamped to (the log's largest).
	Mean, Sigma, Min, Max float64
	// Err is the largest relative error of the shape's p50/p95/p99 against the log's.
	Err float64
}

// noThink is the gap below which a pause is no pause: a run with think time 0 shows only the client's
// own send lag, well under a millisecond.
const noThink = 0.001

// chooseThink picks the think-time distribution for sorted gaps (seconds, ≥ 0).
func chooseThink(sorted []float64) ThinkChoice {
	n := len(sorted)
	if n == 0 {
		return ThinkChoice{Kind: "constant"}
	}
	m := mean(sorted)
	hi := sorted[n-1]
	if n < 2 || metrics.Percentile(sorted, 99) < noThink || hi-sorted[0] < noThink {
		return ThinkChoice{Kind: "constant", Mean: m}
	}
	sd := 0.0
	for _, v := range sorted {
		sd += (v - m) * (v - m)
	}
	sd = math.Sqrt(sd / float64(n))
	empirical := [3]float64{metrics.Percentile(sorted, 50), metrics.Percentile(sorted, 95), metrics.Percentile(sorted, 99)}
	errOf := func(q func(p float64) float64) float64 {
		e := 0.0
		for i, p := range [3]float64{0.50, 0.95, 0.99} {
			want := math.Max(empirical[i], noThink)
			e = math.Max(e, math.Abs(math.Min(q(p), hi)-want)/want)
		}
		return e
	}
	var candidates []ThinkChoice

	// Lognormal: the shape of ln x, moved so that its mean is the log's.
	if f := fitLognormal(sorted, noThink); f.Sigma >= minSigma {
		mu := math.Log(m) - f.Sigma*f.Sigma/2
		c := ThinkChoice{Kind: "lognormal", Mean: m, Sigma: f.Sigma, Max: hi}
		c.Err = errOf(func(p float64) float64 { return math.Exp(mu + f.Sigma*normalQuantile(p)) })
		candidates = append(candidates, c)
	}
	// Exponential of the log's mean: what a Poisson user's pauses look like.
	exp := ThinkChoice{Kind: "exponential", Mean: m, Max: hi}
	exp.Err = errOf(func(p float64) float64 { return -m * math.Log(1-p) })
	candidates = append(candidates, exp)
	// Uniform with the log's mean and, where that stays ≥ 0, its standard deviation (mean ± √3 sd).
	lo := math.Max(0, m-math.Sqrt(3)*sd)
	uni := ThinkChoice{Kind: "uniform", Mean: m, Min: lo, Max: 2*m - lo}
	uni.Err = errOf(func(p float64) float64 { return lo + p*(uni.Max-lo) })
	candidates = append(candidates, uni)

	best := candidates[0]
	for _, c := range candidates[1:] {
		if c.Err < best.Err {
			best = c
		}
	}
	best.Mean = clampedMean(best, m)
	return best
}

// clampedMean is the mean to write for a lognormal or exponential clamped to c.Max so that its draws'
// mean is m: the clamp cuts the tail (by a few per cent for a long-tailed lognormal), and the written
// mean is that of the unclamped distribution. The clamped mean grows with the written one almost in
// proportion, so a few rescalings settle it.
func clampedMean(c ThinkChoice, m float64) float64 {
	kind := map[string]string{"lognormal": workload.DistLognormal, "exponential": workload.DistExponential}[c.Kind]
	if kind == "" || m <= 0 {
		return c.Mean
	}
	d := workload.Dist{Kind: kind, Mean: m, Sigma: c.Sigma, Max: c.Max, HasMax: true, Seconds: true}
	for range 20 {
		got := d.MeanSeconds()
		if got <= 0 || math.Abs(got-m) <= 1e-6*m {
			break
		}
		d.Mean *= m / got
	}
	return d.Mean
}

// normalQuantile is the standard normal's quantile at p50, p95 and p99 (the only ones used).
func normalQuantile(p float64) float64 {
	switch p {
	case 0.95:
		return z95
	case 0.99:
		return z99
	}
	return 0
}

// yaml writes the choice as a scenario's think_time.
func (c ThinkChoice) yaml() string {
	limit := func(v float64) string { return num(math.Min(v, maxThinkSec)) }
	switch c.Kind {
	case "lognormal":
		return fmt.Sprintf("{dist: lognormal, mean: %ss, sigma: %.4f, max: %ss}", limit(c.Mean), c.Sigma, limit(c.Max))
	case "exponential":
		return fmt.Sprintf("{dist: exponential, mean: %ss, max: %ss}", limit(c.Mean), limit(c.Max))
	case "uniform":
		return fmt.Sprintf("{min: %ss, max: %ss}", limit(c.Min), limit(c.Max))
	}
	if c.Mean < noThink {
		return "{dist: constant, value: 0s}"
	}
	return fmt.Sprintf("{dist: constant, value: %ss}", limit(c.Mean))
}

// note says why the choice was made, for the scenario's comment.
func (c ThinkChoice) note() string {
	switch c.Kind {
	case "constant":
		if c.Mean < noThink {
			return "every gap is under 1 ms: no think time"
		}
		return "every gap is the same"
	case "uniform":
		return fmt.Sprintf("uniform with the log's mean and spread fits best (p50/p95/p99 within %.0f %%)", 100*c.Err)
	}
	return fmt.Sprintf("%s with the log's mean fits best (p50/p95/p99 within %.0f %%)", c.Kind, 100*c.Err)
}
