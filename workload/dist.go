package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/goccy/go-yaml"
)

// Distribution kinds accepted in `dist:`.
const (
	DistUniform     = "uniform"
	DistLognormal   = "lognormal"
	DistExponential = "exponential"
	DistConstant    = "constant"
)

var distKinds = []string{DistUniform, DistLognormal, DistExponential, DistConstant}

// DefaultSigma is the lognormal shape (standard deviation of ln X) when a scenario gives only the mean.
const DefaultSigma = 0.5

// Dist is a distribution of token counts, turn counts or (for think time) seconds. Draws are clamped
// to [Min, Max]. Integer distributions round a continuous draw half away from zero before clamping.
//
//	uniform:     min, max (both required); integers are drawn uniformly from min..max inclusive
//	constant:    value (a bare scalar such as `turns: 3` is a constant)
//	lognormal:   mean (of the unclamped distribution), sigma (shape, default 0.5), optional min/max
//	exponential: mean, optional min/max
type Dist struct {
	Kind  string
	Min   float64
	Max   float64
	Mean  float64
	Sigma float64
	Value float64
	// Seconds is set for think_time: values are durations, in seconds.
	Seconds bool
	// Limit is the largest value the field accepts; draws are clamped to it even without a max, so a
	// long-tailed distribution cannot ask for a billion tokens.
	Limit float64

	HasMin, HasMax, HasMean, HasSigma, HasValue bool
}

// Constant returns the constant distribution v.
func Constant(v float64) Dist { return Dist{Kind: DistConstant, Value: v, HasValue: true} }

// Uniform returns the uniform distribution on [lo, hi].
func Uniform(lo, hi float64) Dist {
	return Dist{Kind: DistUniform, Min: lo, Max: hi, HasMin: true, HasMax: true}
}

// lower is the clamp floor: min when given, else floor (1 for counts, 0 for seconds).
func (d Dist) lower(floor float64) float64 {
	if d.HasMin {
		return d.Min
	}
	return floor
}

func (d Dist) upper() float64 {
	hi := math.Inf(1)
	if d.Limit > 0 {
		hi = d.Limit
	}
	if d.HasMax {
		hi = math.Min(hi, d.Max)
	}
	return hi
}

func (d Dist) mu() float64 { return math.Log(d.Mean) - d.Sigma*d.Sigma/2 }

// draw returns one unclamped continuous draw. The explicit float64 conversions stop the compiler from
// fusing a*b+c into one FMA instruction on some architectures (arm64), which would round differently
// and break "same seed, same bytes on any machine".
func (d Dist) draw(r *rand.Rand) float64 {
	switch d.Kind {
	case DistConstant:
		return d.Value
	case DistUniform:
		return d.Min + float64(r.Float64()*(d.Max-d.Min))
	case DistLognormal:
		return math.Exp(d.mu() + float64(d.Sigma*r.NormFloat64()))
	case DistExponential:
		return d.Mean * r.ExpFloat64()
	}
	return 0
}

// SampleInt draws a count (tokens, turns) of at least 1.
func (d Dist) SampleInt(r *rand.Rand) int {
	if d.Kind == DistUniform {
		lo, hi := int(d.Min), int(d.Max)
		return max(1, lo+r.IntN(hi-lo+1))
	}
	x := math.Round(d.draw(r))
	x = math.Min(math.Max(x, d.lower(1)), d.upper())
	return max(1, int(x))
}

// SampleDuration draws a duration (think time), never negative.
func (d Dist) SampleDuration(r *rand.Rand) time.Duration {
	x := d.draw(r)
	x = math.Min(math.Max(x, d.lower(0)), d.upper())
	return time.Duration(math.Round(x * 1e9))
}

// MeanInt is the exact expected value of SampleInt: the rounding and the clamping are included.
func (d Dist) MeanInt() float64 {
	switch d.Kind {
	case DistConstant:
		return math.Max(1, math.Min(math.Max(math.Round(d.Value), d.lower(1)), d.upper()))
	case DistUniform:
		return math.Max(1, (math.Trunc(d.Min)+math.Trunc(d.Max))/2)
	}
	lo, hi := math.Max(1, d.lower(1)), d.upper()
	cdf := d.cdf
	// P(K=k) = F(k+½) − F(k−½) inside; the clamped ends collect the tails.
	mean := lo * cdf(lo+0.5)
	k := lo + 1
	for ; k < hi; k++ {
		mean += k * (cdf(k+0.5) - cdf(k-0.5))
		if 1-cdf(k+0.5) < 1e-15 {
			return mean
		}
		if k-lo >= 1e5 {
			// Far out, rounding no longer matters: add the rest of the tail as a continuous integral.
			return mean + d.partialMean(k+0.5, hi) + hi*(1-cdf(hi))
		}
	}
	return mean + hi*(1-cdf(hi-0.5))
}

// MeanSeconds is the exact expected value of a clamped continuous draw, in seconds.
func (d Dist) MeanSeconds() float64 {
	lo, hi := d.lower(0), d.upper()
	switch d.Kind {
	case DistConstant:
		return math.Min(math.Max(d.Value, lo), hi)
	case DistUniform:
		return (d.Min + d.Max) / 2
	}
	// E[clamp(X, lo, hi)] = lo·F(lo) + ∫_lo^hi x f(x) dx + hi·(1 − F(hi))
	upperMass := 0.0
	if !math.IsInf(hi, 1) {
		upperMass = hi * (1 - d.cdf(hi))
	}
	return lo*d.cdf(lo) + d.partialMean(lo, hi) + upperMass
}

// partialMean is ∫_a^b x f(x) dx for the unclamped lognormal or exponential.
func (d Dist) partialMean(a, b float64) float64 {
	switch d.Kind {
	case DistExponential:
		m := d.Mean
		at := func(x float64) float64 {
			if math.IsInf(x, 1) {
				return 0
			}
			return (x + m) * math.Exp(-x/m)
		}
		return at(a) - at(b)
	case DistLognormal:
		mu, s := d.mu(), d.Sigma
		phi := func(x float64) float64 {
			if x <= 0 {
				return 0
			}
			if math.IsInf(x, 1) {
				return 1
			}
			return normCDF((math.Log(x) - mu - s*s) / s)
		}
		return math.Exp(mu+s*s/2) * (phi(b) - phi(a))
	}
	return 0
}

// cdf is P(X ≤ x) of the unclamped lognormal or exponential.
func (d Dist) cdf(x float64) float64 {
	if x <= 0 {
		return 0
	}
	switch d.Kind {
	case DistExponential:
		return 1 - math.Exp(-x/d.Mean)
	case DistLognormal:
		return normCDF((math.Log(x) - d.mu()) / d.Sigma)
	}
	return 0
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// MaxValue is the largest value a draw can take (+Inf when unbounded).
func (d Dist) MaxValue() float64 {
	switch d.Kind {
	case DistConstant:
		return d.Value
	case DistUniform:
		return d.Max
	}
	return d.upper()
}

// check returns the problems of one distribution: the key inside it and what is wrong.
// isCount distributions take whole numbers ≥ 1; think times take durations ≥ 0.
func (d Dist) check() []fieldProblem {
	var out []fieldProblem
	add := func(key, format string, args ...any) {
		out = append(out, fieldProblem{key, fmt.Sprintf(format, args...)})
	}
	if !slices.Contains(distKinds, d.Kind) {
		msg := fmt.Sprintf("found %q; accepted: uniform, lognormal, exponential, constant", d.Kind)
		if s := suggest(d.Kind, distKinds); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		add("dist", "%s", msg)
		return out
	}
	floor, what := 1.0, "a whole number ≥ 1"
	if d.Seconds {
		floor, what = 0, "a duration ≥ 0"
	}
	if d.Limit > 0 {
		what += " and ≤ " + d.format(d.Limit)
	}
	checkValue := func(key string, has bool, v float64) {
		if !has {
			return
		}
		if v < floor || (!d.Seconds && v != math.Trunc(v)) || (d.Limit > 0 && v > d.Limit) || math.IsNaN(v) {
			add(key, "found %s; accepted: %s", d.format(v), what)
		}
	}
	checkValue("min", d.HasMin, d.Min)
	checkValue("max", d.HasMax, d.Max)
	checkValue("value", d.HasValue, d.Value)
	if d.HasMean && d.Limit > 0 && d.Mean > d.Limit {
		add("mean", "found %s; accepted: a mean ≤ %s", d.format(d.Mean), d.format(d.Limit))
	}
	if d.HasMin && d.HasMax && d.Min > d.Max {
		add("min", "min %s is greater than max %s; accepted: min ≤ max", d.format(d.Min), d.format(d.Max))
	}
	unused := func(key string, has bool) {
		if has {
			add(key, "%s is not used by dist %s; remove it or change dist", key, d.Kind)
		}
	}
	switch d.Kind {
	case DistUniform:
		if !d.HasMin || !d.HasMax {
			add("", "dist uniform needs both min and max")
		}
		unused("mean", d.HasMean)
		unused("sigma", d.HasSigma)
		unused("value", d.HasValue)
	case DistConstant:
		if !d.HasValue {
			add("", "dist constant needs value")
		}
		unused("mean", d.HasMean)
		unused("sigma", d.HasSigma)
	case DistLognormal, DistExponential:
		if !d.HasMean {
			add("", "dist %s needs mean", d.Kind)
		} else if d.Mean <= 0 {
			add("mean", "found %s; accepted: a mean > 0", d.format(d.Mean))
		}
		if d.Kind == DistLognormal && d.HasSigma && (d.Sigma <= 0 || d.Sigma > 10) {
			add("sigma", "found %s; accepted: sigma > 0 and ≤ 10", strconv.FormatFloat(d.Sigma, 'g', -1, 64))
		}
		if d.Kind == DistExponential {
			unused("sigma", d.HasSigma)
		}
		unused("value", d.HasValue)
	}
	return out
}

type fieldProblem struct {
	key     string // key inside the value ("" for the value itself)
	message string
}

func (d Dist) format(v float64) string {
	if d.Seconds {
		return formatDuration(time.Duration(math.Round(v * 1e9)))
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// MarshalYAML writes the distribution back in the form a scenario accepts, with every default filled.
func (d Dist) MarshalYAML() (any, error) {
	out := yaml.MapSlice{{Key: "dist", Value: d.Kind}}
	put := func(key string, has bool, v float64) {
		if !has {
			return
		}
		if d.Seconds && key != "sigma" {
			out = append(out, yaml.MapItem{Key: key, Value: d.format(v)})
		} else if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			out = append(out, yaml.MapItem{Key: key, Value: int64(v)})
		} else {
			out = append(out, yaml.MapItem{Key: key, Value: v})
		}
	}
	put("value", d.HasValue, d.Value)
	put("min", d.HasMin, d.Min)
	put("max", d.HasMax, d.Max)
	put("mean", d.HasMean, d.Mean)
	put("sigma", d.HasSigma, d.Sigma)
	return out, nil
}

// String describes the distribution in a line: "uniform 2–4", "lognormal mean 60, σ 0.6, in [10, 300]".
func (d Dist) String() string {
	switch d.Kind {
	case DistConstant:
		return "constant " + d.format(d.Value)
	case DistUniform:
		return "uniform " + d.format(d.Min) + "–" + d.format(d.Max)
	}
	s := d.Kind + " mean " + d.format(d.Mean)
	if d.Kind == DistLognormal {
		s += ", σ " + strconv.FormatFloat(d.Sigma, 'g', -1, 64)
	}
	if d.HasMin || d.HasMax {
		floor := 1.0
		if d.Seconds {
			floor = 0
		}
		lo, hi := d.format(d.lower(floor)), "∞"
		if d.HasMax {
			hi = d.format(d.Max)
		}
		s += ", in [" + lo + ", " + hi + "]"
	}
	return s
}

// GammaDraw draws Gamma(k, 1) by Marsaglia and Tsang's method ("A simple method for generating gamma
// variables", 2000); for k < 1 it draws Gamma(k+1, 1)·U^(1/k), their boost for small shapes.
func GammaDraw(rng *rand.Rand, k float64) float64 {
	boost := 1.0
	if k < 1 {
		boost = math.Pow(1-rng.Float64(), 1/k) // 1−U is in (0, 1]: never 0^(1/k) = 0 from U = 0 exactly
		k++
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v * boost
		}
	}
}
