package search

import (
	"fmt"
	"math"
	"strings"
)

// Point is one observation of a quantity over a probe's window: at At (ns), value V.
type Point struct {
	At int64
	V  float64
}

// Quarters is the mean of the points in each quarter of [from, to) (NaN for an empty quarter).
func Quarters(points []Point, from, to int64) [4]float64 {
	var sum, n [4]float64
	span := to - from
	for _, p := range points {
		if span <= 0 || p.At < from || p.At >= to {
			continue
		}
		q := int((p.At - from) * 4 / span)
		sum[q] += p.V
		n[q]++
	}
	var out [4]float64
	for i := range out {
		out[i] = math.NaN()
		if n[i] > 0 {
			out[i] = sum[i] / n[i]
		}
	}
	return out
}

// Growing reports whether a quantity grew without bound over the window: it rose from each quarter
// to the next, ended at least twice where it began, and ended at or over floor (the level where it
// matters: the SLO's limit for a latency). A server past capacity queues more with every second; one
// at a steady high load does not rise quarter after quarter.
func Growing(q [4]float64, floor float64) bool {
	for i := 1; i < len(q); i++ {
		if math.IsNaN(q[i]) || math.IsNaN(q[i-1]) || q[i] <= q[i-1] {
			return false
		}
	}
	return q[3] >= 2*q[0] && q[3] >= floor
}

// GrowthText writes the quarters for a reason: "12 → 40 → 95 → 160 ms".
func GrowthText(q [4]float64, unit string) string {
	parts := make([]string, len(q))
	for i, v := range q {
		parts[i] = fmt.Sprintf("%.3g", v)
	}
	return strings.Join(parts, " → ") + unit
}
