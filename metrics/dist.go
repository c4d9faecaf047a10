package metrics

import (
	"encoding/json"
	"math"
	"sort"
)

// Dist is a distribution's summary. Percentiles use linear interpolation between closest ranks (as
// numpy's default): the p-th percentile of sorted x is x[h] interpolated at h = (n−1)·p/100.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	// P1, P5, P10, P25 and P75 are the low percentiles AIPerf's summary has (p1 … p99): left out of
	// JSON when 0, as where nothing computed them (a histogram's Dist), and read back as 0 either way.
	P1  float64 `json:"p1,omitempty"`
	P5  float64 `json:"p5,omitempty"`
	P10 float64 `json:"p10,omitempty"`
	P25 float64 `json:"p25,omitempty"`
	P50 float64 `json:"p50"`
	P75 float64 `json:"p75,omitempty"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	// Std is the population standard deviation (as AIPerf and numpy's default compute it).
	Std float64 `json:"std"`
}

// Known reports whether the distribution has any value.
func (d Dist) Known() bool { return d.N > 0 }

// Stat is one statistic by its JSON key (n aside): mean, min, max, p1, p5, p10, p25, p50, p75, p90,
// p95, p99 or std; false when the distribution is empty or the name unknown.
func (d Dist) Stat(name string) (float64, bool) {
	if d.N == 0 {
		return 0, false
	}
	switch name {
	case "mean":
		return d.Mean, true
	case "min":
		return d.Min, true
	case "max":
		return d.Max, true
	case "p1":
		return d.P1, true
	case "p5":
		return d.P5, true
	case "p10":
		return d.P10, true
	case "p25":
		return d.P25, true
	case "p50":
		return d.P50, true
	case "p75":
		return d.P75, true
	case "p90":
		return d.P90, true
	case "p95":
		return d.P95, true
	case "p99":
		return d.P99, true
	case "std":
		return d.Std, true
	}
	return 0, false
}

// MarshalJSON writes a distribution of no values with null statistics: its 0s are not measurements.
func (d Dist) MarshalJSON() ([]byte, error) {
	type plain Dist // without this method
	if d.N > 0 {
		return json.Marshal(plain(d))
	}
	return []byte(`{"n":0,"mean":null,"min":null,"max":null,"p50":null,"p90":null,"p95":null,"p99":null,"std":null}`), nil
}

// Percentile returns the p-th percentile (0–100) of sorted values, interpolated linearly.
func Percentile(sorted []float64, p float64) float64 { return sortedView{a: sorted}.percentile(p) }

// summarize sorts values in place and returns their summary (N = 0 for none).
func summarize(values []float64) Dist {
	sort.Float64s(values)
	return sortedView{a: values}.summary()
}

// summarizeUnion sorts a and b in place and returns the summary of both together, without a merged
// copy: a stage keeps TTFT by turn and lags by kind apart, and a million requests' worth of a
// second copy is memory the summary does not need.
func summarizeUnion(a, b []float64) Dist {
	sort.Float64s(a)
	sort.Float64s(b)
	return sortedView{a, b}.summary()
}

// SummarizeSorted is the summary of values already sorted ascending.
func SummarizeSorted(sorted []float64) Dist { return sortedView{a: sorted}.summary() }

// sortedView reads the ascending union of two sorted slices (b may be empty) by rank, or in order.
type sortedView struct{ a, b []float64 }

func (v sortedView) len() int { return len(v.a) + len(v.b) }

// at is the k-th smallest value (0-based): the split i of a and k+1−i of b whose largest is the k-th,
// found by bisection on i.
func (v sortedView) at(k int) float64 {
	a, b := v.a, v.b
	if len(b) == 0 {
		return a[k]
	}
	if len(a) == 0 {
		return b[k]
	}
	// The smallest i (taken from a) with a[i] ≥ b[k−i]: then a[:i] and b[:k+1−i] are the k+1 smallest.
	lo, hi := max(0, k+1-len(b)), min(k+1, len(a))
	for lo < hi {
		i := (lo + hi) / 2
		if a[i] < b[k-i] {
			lo = i + 1
		} else {
			hi = i
		}
	}
	i, j := lo, k+1-lo
	switch {
	case i == 0:
		return b[j-1]
	case j == 0:
		return a[i-1]
	}
	return max(a[i-1], b[j-1])
}

// each calls fn on every value in ascending order (a merge), so sums add in the same order as over
// one sorted slice and come out bit-identical.
func (v sortedView) each(fn func(float64)) {
	i, j := 0, 0
	for i < len(v.a) || j < len(v.b) {
		if j == len(v.b) || (i < len(v.a) && v.a[i] <= v.b[j]) {
			fn(v.a[i])
			i++
		} else {
			fn(v.b[j])
			j++
		}
	}
}

func (v sortedView) percentile(p float64) float64 {
	n := v.len()
	switch {
	case n == 0:
		return math.NaN()
	case n == 1:
		return v.at(0)
	}
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return v.at(n - 1)
	}
	x := v.at(lo)
	return x + (h-float64(lo))*(v.at(lo+1)-x)
}

func (v sortedView) summary() Dist {
	n := v.len()
	if n == 0 {
		return Dist{}
	}
	// Two passes (mean, then squared deviations): one pass of Σx² loses the digits of a narrow
	// distribution far from 0, as latencies in ns-derived ms are. One slice (the pooled gaps: most
	// values) is read by plain loops, not through each's calls.
	sum, sq := 0.0, 0.0
	if len(v.b) == 0 {
		for _, x := range v.a {
			sum += x
		}
	} else {
		v.each(func(x float64) { sum += x })
	}
	mean := sum / float64(n)
	if len(v.b) == 0 {
		for _, x := range v.a {
			sq += (x - mean) * (x - mean)
		}
	} else {
		v.each(func(x float64) { sq += (x - mean) * (x - mean) })
	}
	return Dist{N: n, Mean: mean, Min: v.at(0), Max: v.at(n - 1),
		P1: v.percentile(1), P5: v.percentile(5), P10: v.percentile(10), P25: v.percentile(25),
		P50: v.percentile(50), P75: v.percentile(75), P90: v.percentile(90), P95: v.percentile(95), P99: v.percentile(99),
		Std: math.Sqrt(sq / float64(n))}
}
