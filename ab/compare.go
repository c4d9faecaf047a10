package ab

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// Verdicts of B relative to A.
const (
	Better  = "better"
	Worse   = "worse"
	Same    = "same" // no significant difference: the interval holds 0
	Unknown = "n/a"  // a side has no value (no successful request with it, no char counts)
)

// Options are the bootstrap's: Resamples per interval and the Seed that makes them reproducible.
type Options struct {
	Resamples int
	Seed      uint64
}

// DefaultResamples is enough for stable 2.5th and 97.5th percentiles of the resampled differences.
const DefaultResamples = 2000

// maxResampleWork bounds resamples × groups of the mean and rate bootstraps (which, unlike
// metrics.BootstrapDiff, do not thin): a million-request stage gets fewer resamples, not minutes.
const maxResampleWork = 40_000_000

// The metrics every comparison has, in ab.json's order (docs/measurement.md), then tpoc (time per output
// character: TPOT without a tokenizer). The SLO's limits follow (Compare).
var baseMetrics = []metricDef{
	percentileOf("ttft_p50_ms", singles(func(s Sample) []float64 { return s.TTFT }), 50),
	percentileOf("ttft_p95_ms", singles(func(s Sample) []float64 { return s.TTFT }), 95),
	percentileOf("tpot_p50_ms", singles(func(s Sample) []float64 { return s.TPOT }), 50),
	percentileOf("e2e_p50_ms", singles(func(s Sample) []float64 { return s.E2E }), 50),
	percentileOf("tpoc_p50_ms", singles(func(s Sample) []float64 { return s.TPOC }), 50),
	rateOf("out_tok_per_sec", func(c Completion) float64 { return c.Tokens }, func(Sample) bool { return true }),
	rateOf("out_chars_per_sec", func(c Completion) float64 { return c.Chars }, func(s Sample) bool { return s.CharsKnown }),
}

// metricDef computes one metric of both samples: the values, and the interval of B − A.
type metricDef struct {
	name        string
	lowerBetter bool
	// share: the metric is a share in [0, 1] (the error rate), so B − A and its interval lie in
	// [−1, 1]; the widening about the point would otherwise carry the interval past them.
	share   bool
	compute func(a, b Sample, o Options) (va, vb float64, lo, hi float64)
}

func singles(field func(Sample) []float64) func(Sample) [][]float64 {
	return func(s Sample) [][]float64 { return metrics.Singletons(field(s)) }
}

// percentileOf is a latency percentile: metrics.BootstrapDiff resamples whole groups (requests).
func percentileOf(name string, groups func(Sample) [][]float64, p float64) metricDef {
	return metricDef{name: name, lowerBetter: true, compute: func(a, b Sample, o Options) (float64, float64, float64, float64) {
		ga, gb := groups(a), groups(b)
		iv := metrics.BootstrapDiff(ga, gb, p, o.Resamples, o.Seed)
		return groupPercentile(ga, p), groupPercentile(gb, p), iv.Lo, iv.Hi
	}}
}

// meanOf is a mean over every value of every group (a latency's mean, the pooled ITL's, the error
// rate over requests), resampling whole groups as percentileOf does.
func meanOf(name string, groups func(Sample) [][]float64) metricDef {
	return metricDef{name: name, lowerBetter: true, compute: func(a, b Sample, o Options) (float64, float64, float64, float64) {
		sa, sb := groupSums(groups(a)), groupSums(groups(b))
		lo, hi := resampledDiff(o, len(sa)+len(sb), meanResample(sa), meanResample(sb))
		return meanOfSums(sa), meanOfSums(sb), lo, hi
	}}
}

// rateSlices is how many equal slices of the window a throughput's interval is computed over, and
// t975 Student's t 97.5th percentile with rateSlices − 1 = 9 degrees of freedom.
const (
	rateSlices = 10
	t975       = 2.2622
)

// rateOf is a throughput: Σ field over the completions ÷ the window's seconds.
//
// Its interval is by batch means (the method of steady-state simulation output): the window is cut
// into rateSlices equal slices, each side's rate is taken per slice, and slice j of A is paired
// with slice j of B — the same instants, as both windows start together — so drift in the client,
// the machine or the network, which hits both in the same slice, cancels in the difference. The
// mean of the paired differences is exactly B's rate minus A's; its t interval has rateSlices − 1
// degrees of freedom. A closed loop's throughput varies mostly by how many requests fit in the
// window, which each request's latency decides: resampling sessions or requests holds that count
// fixed and measured intervals far too narrow (identical mocks came out "better"). Neighbouring
// slices share requests that end near their border, which makes their counts negatively
// correlated, so the interval errs wide, toward "same".
func rateOf(name string, field func(Completion) float64, known func(Sample) bool) metricDef {
	return metricDef{name: name, compute: func(a, b Sample, _ Options) (float64, float64, float64, float64) {
		if !known(a) || !known(b) || a.WindowS <= 0 || b.WindowS <= 0 {
			return math.NaN(), math.NaN(), math.NaN(), math.NaN()
		}
		ra, rb := sliceRates(a, field), sliceRates(b, field)
		var d [rateSlices]float64
		for j := range d {
			d[j] = rb[j] - ra[j]
		}
		mean := sum(d[:]) / rateSlices
		var sq float64
		for _, x := range d {
			sq += (x - mean) * (x - mean)
		}
		half := t975 * math.Sqrt(sq/(rateSlices-1)/rateSlices)
		// The values as stage.json has them (the slices' mean is the same number but for rounding).
		va, vb := total(a.Completed, field)/a.WindowS, total(b.Completed, field)/b.WindowS
		return va, vb, vb - va - half, vb - va + half
	}}
}

// sliceRates is the sample's rate of field in each of the window's rateSlices slices; their mean is
// the rate over the whole window.
func sliceRates(s Sample, field func(Completion) float64) [rateSlices]float64 {
	var out [rateSlices]float64
	width := s.WindowS / rateSlices
	for _, c := range s.Completed {
		j := min(max(int(c.AtS/width), 0), rateSlices-1)
		out[j] += field(c)
	}
	for j := range out {
		out[j] /= width
	}
	return out
}

// Compare compares one stage's samples of A and B: the base metrics, then one per SLO limit not
// among them (its CheckName, e.g. ttft_p99_ms, itl_p95_ms) and error_rate when the SLO sets it.
func Compare(stage int, a, b Sample, slo metrics.SLOLimits, o Options) []resultfiles.ABMetric {
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	defs := slices.Clone(baseMetrics)
	for _, lim := range slo.Limits() {
		if !slices.ContainsFunc(defs, func(d metricDef) bool { return d.name == lim.CheckName() }) {
			defs = append(defs, limitMetric(lim))
		}
	}
	if !slo.ErrorRateUnset {
		er := meanOf("error_rate", singles(func(s Sample) []float64 { return s.Failed }))
		er.share = true
		defs = append(defs, er)
	}
	type computed struct{ va, vb, lo, hi float64 }
	values := make([]computed, len(defs))
	known := 0
	for i, d := range defs {
		mo := o
		mo.Seed = o.Seed ^ nameHash(d.name) // each metric its own resamples, whatever the order
		v := &values[i]
		v.va, v.vb, v.lo, v.hi = d.compute(a, b, mo)
		if !anyNaN(v.va, v.vb, v.lo, v.hi) {
			known++
		}
	}
	widen := FamilyWidening(known)
	out := make([]resultfiles.ABMetric, 0, len(defs))
	for i, d := range defs {
		v := values[i]
		p := v.vb - v.va
		lo, hi := p-max(p-v.lo, 0)*widen, p+max(v.hi-p, 0)*widen
		if d.share {
			lo, hi = max(lo, -1), min(hi, 1)
		}
		out = append(out, row(stage, d, v.va, v.vb, lo, hi))
	}
	return out
}

// FamilyWidening is the factor by which each of m rows' 95 % intervals is widened about its
// point, z(1 − 0.05/2m) ÷ z(0.975), so that the rows hold together at 95 % (Bonferroni): with two
// identical targets, the chance that any row of a stage says better or worse is at most 5 %, not
// the 1 − 0.95^k of k independent 95 % intervals (a stage's ten rows are about five independent
// ones — TTFT's, decode's, throughput's — which alone would call identical targets different in
// one run of four). The widening takes the bootstrap's 95 % spread as normal, rather than reading
// the 0.25th percentile of a few thousand resamples, which would rest on a handful of them.
func FamilyWidening(m int) float64 {
	if m <= 1 {
		return 1
	}
	z := func(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
	return z(1-0.05/(2*float64(m))) / z(0.975)
}

func anyNaN(xs ...float64) bool { return slices.ContainsFunc(xs, math.IsNaN) }

// limitMetric is the metric an SLO latency limit reads: the per-request values of ttft, ttfo, tpot
// and e2e; itl is the pooled token gaps (grouped by request), as stage.json's SLO checks read them.
func limitMetric(lim metrics.LatencyLimit) metricDef {
	groups := map[string]func(Sample) [][]float64{
		metrics.SLOMetricTTFT: singles(func(s Sample) []float64 { return s.TTFT }),
		metrics.SLOMetricTTFO: singles(func(s Sample) []float64 { return s.TTFO }),
		metrics.SLOMetricTPOT: singles(func(s Sample) []float64 { return s.TPOT }),
		metrics.SLOMetricE2E:  singles(func(s Sample) []float64 { return s.E2E }),
		metrics.SLOMetricITL:  func(s Sample) [][]float64 { return s.ITL },
	}[lim.Metric]
	if groups == nil {
		groups = func(Sample) [][]float64 { return nil } // unknown metric: n/a, never a guess
	}
	switch lim.Stat {
	case metrics.SLOStatMean:
		return meanOf(lim.CheckName(), groups)
	case metrics.SLOStatMax:
		return percentileOf(lim.CheckName(), groups, 100)
	}
	p := map[string]float64{metrics.SLOStatP50: 50, metrics.SLOStatP90: 90, metrics.SLOStatP95: 95, metrics.SLOStatP99: 99}[lim.Stat]
	return percentileOf(lim.CheckName(), groups, p)
}

// row makes the ab.json row; a NaN anywhere (a side without a value) is n/a, not a guess.
func row(stage int, d metricDef, va, vb, lo, hi float64) resultfiles.ABMetric {
	m := resultfiles.ABMetric{Name: d.name, Stage: stage, Verdict: Unknown, BetterWhen: "higher"}
	if d.lowerBetter {
		m.BetterWhen = "lower"
	}
	if !math.IsNaN(va) {
		m.A = metrics.Some(va)
	}
	if !math.IsNaN(vb) {
		m.B = metrics.Some(vb)
	}
	if !m.A.OK || !m.B.OK || math.IsNaN(lo) || math.IsNaN(hi) {
		return m
	}
	m.Diff = metrics.Some(vb - va)
	m.CI = &[2]float64{lo, hi}
	m.Verdict = Verdict(lo, hi, d.lowerBetter)
	return m
}

// Verdict is B's verdict from the interval [lo, hi] of B − A: same when it holds 0; otherwise
// better or worse by the metric's direction.
func Verdict(lo, hi float64, lowerBetter bool) string {
	switch {
	case lo <= 0 && hi >= 0:
		return Same
	case (hi < 0) == lowerBetter:
		return Better
	}
	return Worse
}

// resampledDiff is the 2.5th–97.5th percentile range of B's resampled statistic minus A's.
func resampledDiff(o Options, groups int, a, b func(*rand.Rand) float64) (lo, hi float64) {
	iters := o.Resamples
	if groups > 0 {
		iters = max(min(iters, maxResampleWork/groups), 200)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	diffs := make([]float64, iters)
	for i := range diffs {
		x, y := a(rng), b(rng)
		diffs[i] = y - x
	}
	if slices.ContainsFunc(diffs, math.IsNaN) {
		return math.NaN(), math.NaN()
	}
	slices.Sort(diffs)
	return metrics.Percentile(diffs, 2.5), metrics.Percentile(diffs, 97.5)
}

// groupSum is one group's total and count, so a resample of groups costs one step per group.
type groupSum struct{ sum, n float64 }

func groupSums(groups [][]float64) []groupSum {
	out := make([]groupSum, 0, len(groups))
	for _, g := range groups {
		if len(g) > 0 {
			out = append(out, groupSum{sum(g), float64(len(g))})
		}
	}
	return out
}

func meanOfSums(gs []groupSum) float64 {
	var s, n float64
	for _, g := range gs {
		s, n = s+g.sum, n+g.n
	}
	if n == 0 {
		return math.NaN()
	}
	return s / n
}

// meanResample draws len(gs) groups with replacement and returns their values' mean.
func meanResample(gs []groupSum) func(*rand.Rand) float64 {
	return func(rng *rand.Rand) float64 {
		if len(gs) == 0 {
			return math.NaN()
		}
		var s, n float64
		for range gs {
			g := gs[rng.IntN(len(gs))]
			s, n = s+g.sum, n+g.n
		}
		return s / n
	}
}

func total(cs []Completion, field func(Completion) float64) float64 {
	var s float64
	for _, c := range cs {
		s += field(c)
	}
	return s
}

func groupPercentile(groups [][]float64, p float64) float64 {
	all := slices.Concat(groups...)
	slices.Sort(all)
	return metrics.Percentile(all, p)
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}
