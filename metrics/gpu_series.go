package metrics

import (
	"fmt"
	"math"
	"strconv"
)

// The ways a window's energy is found (GPUSummary.EnergyMethod).
const (
	energyByCounter = "counter"
	energyByPower   = "power integral"
	energyByBoth    = "counter and power integral"
)

// gpuSeries is one GPU's readings over a stage, in time order.
type gpuSeries struct {
	stats    GPUStats
	points   []gpuPoint
	warnings []string
}

type gpuPoint struct {
	t int64
	r GPUReading
}

func (s *gpuSeries) less(o *gpuSeries) bool {
	a, b := s.stats, o.stats
	if a.Host != b.Host {
		return a.Host < b.Host
	}
	ai, errA := strconv.Atoi(a.GPU)
	bi, errB := strconv.Atoi(b.GPU)
	if errA == nil && errB == nil && ai != bi {
		return ai < bi
	}
	if a.GPU != b.GPU {
		return a.GPU < b.GPU
	}
	return a.Source < b.Source
}

func (s *gpuSeries) name() string {
	n := "GPU " + s.stats.GPU
	if s.stats.Host != "" {
		n += " on " + s.stats.Host
	}
	return n
}

// summarize fills stats from the readings in [w.WNs, w.EEffNs], and the window's energy.
func (s *gpuSeries) summarize(w GPUWindow) {
	st := &s.stats
	var power, util, sm, mem, temp []float64
	for _, p := range s.points {
		if p.t < w.WNs || p.t > w.EEffNs {
			continue
		}
		st.Samples++
		appendValue(&power, p.r.PowerW)
		appendValue(&util, p.r.UtilPct)
		appendValue(&sm, p.r.SMActive)
		appendValue(&mem, p.r.MemUsedMiB)
		appendValue(&temp, p.r.TempC)
	}
	st.PowerMeanW, st.PowerMaxW = meanOpt(power), maxOpt(power)
	st.UtilMeanPct, st.SMActiveMean = meanOpt(util), meanOpt(sm)
	st.MemUsedMean, st.MemUsedMax = meanOpt(mem), maxOpt(mem)
	st.TempMaxC = maxOpt(temp)
	if w.EEffNs-w.WNs >= int64(gpuMinWindow) {
		s.energy(w)
	}
}

// energy finds the window's energy: from the counter where the GPU has one (a counter is right across
// a gap in the readings, as it kept counting), else from the power readings; a counter that went back
// is bridged by the power readings on either side. Each interval between two readings adds its share
// of the window linearly; an edge of the window up to gpuMaxGap from the nearest reading takes that
// interval's rate. A gap that cannot be bridged leaves the energy absent, with a warning.
func (s *gpuSeries) energy(w GPUWindow) {
	var counter, power []gpuPoint
	for _, p := range s.points {
		if p.r.EnergyMJ != nil {
			counter = append(counter, p)
		}
		if p.r.PowerW != nil {
			power = append(power, p)
		}
	}
	method := energyByPower
	pts := power
	if len(counter) >= 2 {
		method, pts = energyByCounter, counter
	}
	if len(pts) < 2 {
		s.warn("%s: fewer than two readings of energy or power, so no energy for the window", s.name())
		return
	}
	if pts[0].t-w.WNs > int64(gpuMaxGap) || w.EEffNs-pts[len(pts)-1].t > int64(gpuMaxGap) {
		s.warn("%s: the readings cover %s of the window's %s, so no energy for the window", s.name(),
			secs(min(pts[len(pts)-1].t, w.EEffNs)-max(pts[0].t, w.WNs)), secs(w.EEffNs-w.WNs))
		return
	}
	total, resets := 0.0, 0
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		dt := b.t - a.t
		if dt <= 0 {
			continue
		}
		var joules float64
		switch {
		case method == energyByCounter && *b.r.EnergyMJ >= *a.r.EnergyMJ:
			joules = (*b.r.EnergyMJ - *a.r.EnergyMJ) / 1000
		case method == energyByCounter:
			resets++
			bridged, ok := powerBetween(power, a.t, b.t)
			if !ok {
				s.warn("%s: the energy counter went back (%.0f → %.0f mJ, a driver reload or a new exporter) with no power readings across it, so no energy for the window",
					s.name(), *a.r.EnergyMJ, *b.r.EnergyMJ)
				return
			}
			joules = bridged
		case dt > int64(gpuMaxGap):
			if overlap(a.t, b.t, w.WNs, w.EEffNs) > 0 {
				s.warn("%s: no readings for %s in the window; energy from power is not filled across a gap, so no energy for the window", s.name(), secs(dt))
				return
			}
			continue
		default:
			joules = (*a.r.PowerW + *b.r.PowerW) / 2 * float64(dt) / 1e9
		}
		lo, hi := a.t, b.t
		if i == 1 && lo > w.WNs { // the window's first edge takes the first interval's rate
			lo = w.WNs
		}
		if i == len(pts)-1 && hi < w.EEffNs {
			hi = w.EEffNs
		}
		total += joules / float64(dt) * float64(overlap(lo, hi, w.WNs, w.EEffNs))
	}
	if resets > 0 {
		method = energyByBoth
		s.warn("%s: the energy counter went back %d time(s) in the stage (a driver reload or a new exporter); the energy across each reset is counted from power", s.name(), resets)
	}
	s.stats.EnergyJ, s.stats.EnergyMethod = Some(total), method
}

// powerBetween is the power integral over [from, to] from the readings there, trapezoids between
// them; not ok when the readings leave a gap longer than gpuMaxGap or do not reach the ends.
func powerBetween(power []gpuPoint, from, to int64) (float64, bool) {
	var in []gpuPoint
	for _, p := range power {
		if p.t >= from && p.t <= to {
			in = append(in, p)
		}
	}
	if len(in) < 2 || in[0].t != from || in[len(in)-1].t != to {
		return 0, false
	}
	j := 0.0
	for i := 1; i < len(in); i++ {
		dt := in[i].t - in[i-1].t
		if dt > int64(gpuMaxGap) {
			return 0, false
		}
		j += (*in[i].r.PowerW + *in[i-1].r.PowerW) / 2 * float64(dt) / 1e9
	}
	return j, true
}

func overlap(a, b, lo, hi int64) int64 {
	return max(0, min(b, hi)-max(a, lo))
}

func (s *gpuSeries) warn(format string, args ...any) {
	s.warnings = append(s.warnings, fmt.Sprintf(format, args...))
}

func secs(ns int64) string {
	return fmt.Sprintf("%.1f s", float64(ns)/1e9)
}

func appendValue(dst *[]float64, v *float64) {
	if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
		*dst = append(*dst, *v)
	}
}

func maxOpt(v []float64) Opt[float64] {
	if len(v) == 0 {
		return Opt[float64]{}
	}
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return Some(m)
}
