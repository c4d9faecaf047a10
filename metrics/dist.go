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
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	// Std is the population standard deviation (as AIPerf and numpy's default compute it).
	Std float64 `json:"std"`
}

// Known reports whether the distribution has any value.
func (d Dist) Known() bool { return d.N > 0 }

// Stat is one statistic by its JSON key (n aside): mean, min, max, p50, p90, p95, p99 or std; false
// when the distribution is empty or the name unknown.
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
	case "p50":
		return d.P50, true
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
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n == 1:
		return sorted[0]
	}
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// summarize sorts values in place and returns their summary (N = 0 for none).
func summarize(values []float64) Dist {
	if len(values) == 0 {
		return Dist{}
	}
	sort.Float64s(values)
	sum := 0.0
	for _, v := range values {
		sum += v
	}
	mean := sum / float64(len(values))
	// Two passes (mean, then squared deviations): one pass of Σx² loses the digits of a narrow
	// distribution far from 0, as latencies in ns-derived ms are.
	sq := 0.0
	for _, v := range values {
		sq += (v - mean) * (v - mean)
	}
	return Dist{N: len(values), Mean: mean, Min: values[0], Max: values[len(values)-1],
		P50: Percentile(values, 50), P90: Percentile(values, 90), P95: Percentile(values, 95), P99: Percentile(values, 99),
		Std: math.Sqrt(sq / float64(len(values)))}
}

// SummarizeSorted is the summary of values already sorted ascending.
func SummarizeSorted(sorted []float64) Dist { return summarize(sorted) }
