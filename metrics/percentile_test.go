package metrics

import (
	"math"
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
