package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/plload/plload/metrics"
)

// The stage's timeline: the server's and the GPUs' own readings (stage_NN/server_metrics.jsonl and
// gpu_metrics.jsonl) as panels of the time series, on the clock of its TTFT panel. Both files carry
// epoch ns on the run's clock, as the records do, so a reading at t_ns sits at (t_ns − t0) seconds,
// where the per-second buckets place theirs.

// timelineMaxGap is the longest time between two readings that one line joins: readings come every
// second, a slow scrape may take two; past it the source did not answer, and a line across the gap
// would draw values nobody read (metrics.SummarizeGPU does not fill such a gap either).
const timelineMaxGap = 3 * time.Second

// Timeline is the telemetry panels of a stage's time series, so a test can check what they draw
// without pixels. A panel is there only where the readings have its values: a server without
// speculative decoding has no acceptance panel, a stage without GPU telemetry no GPU panels.
type Timeline struct {
	Panels []TimelinePanel
}

// TimelinePanel is one panel: its title, its y axis (Percent: 0–100 %) and its series.
type TimelinePanel struct {
	Title, YLabel string
	Percent       bool
	Series        []TimelineSeries
}

// TimelineSeries is one line of a panel. Segments are its points in seconds since t0, one segment
// per unbroken run of readings: where none came for more than timelineMaxGap, the next reading
// starts a new segment, so the gap shows as a gap.
type TimelineSeries struct {
	Name     string
	Segments []plotter.XYs
}

// Gapped reports whether a series of the panel is broken by a gap in its readings.
func (p TimelinePanel) Gapped() bool {
	for _, s := range p.Series {
		if len(s.Segments) > 1 {
			return true
		}
	}
	return false
}

// ReadTimeline reads a stage directory's server_metrics.jsonl and gpu_metrics.jsonl into its
// timeline; a file that is not there leaves its panels out (scraping was off, or the stage ran
// before telemetry existed).
func ReadTimeline(stageDir string, s metrics.StageSeries) (Timeline, error) {
	server, err := metrics.ReadJSONLines[metrics.ServerSample](filepath.Join(stageDir, "server_metrics.jsonl"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Timeline{}, err
	}
	gpu, err := metrics.ReadJSONLines[metrics.GPUSample](filepath.Join(stageDir, "gpu_metrics.jsonl"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Timeline{}, err
	}
	return NewTimeline(server, gpu, s), nil
}

// NewTimeline builds the panels from the readings: the server's requests running and waiting, its
// KV-cache use, the GPUs' power (summed over each source's GPUs) and utilisation (averaged over
// them), and where the server counts them, preemptions per second and speculative decoding's
// acceptance rate (accepted ÷ drafted tokens over each interval between readings).
func NewTimeline(server []metrics.ServerSample, gpu []metrics.GPUSample, s metrics.StageSeries) Timeline {
	server = append([]metrics.ServerSample(nil), server...)
	sort.SliceStable(server, func(i, j int) bool { return server[i].TNs < server[j].TNs })
	xMax := seriesXMax(s)
	place := func(segs []plotter.XYs) []plotter.XYs { return clipSegments(segs, xMax) }
	gauge := func(get func(metrics.ServerSample) *float64, scale float64) ([]plotter.XYs, bool) {
		var rs []timed[float64]
		for _, smp := range server {
			if v := get(smp); v != nil && !math.IsNaN(*v) {
				rs = append(rs, timed[float64]{smp.TNs, *v * scale})
			}
		}
		return place(gaugeSegments(rs, s.T0Ns)), len(rs) > 0
	}
	var t Timeline
	running, hasRunning := gauge(func(x metrics.ServerSample) *float64 { return x.Running }, 1)
	waiting, hasWaiting := gauge(func(x metrics.ServerSample) *float64 { return x.Waiting }, 1)
	if hasRunning || hasWaiting {
		t.Panels = append(t.Panels, TimelinePanel{Title: "server: requests running and waiting", YLabel: "requests",
			Series: []TimelineSeries{{"running", running}, {"waiting", waiting}}})
	}
	if kv, ok := gauge(func(x metrics.ServerSample) *float64 { return x.KVUsage }, 100); ok {
		t.Panels = append(t.Panels, TimelinePanel{Title: "server: KV-cache use", YLabel: "% of KV cache", Percent: true,
			Series: []TimelineSeries{{"KV cache", kv}}})
	}
	t.Panels = append(t.Panels, gpuPanels(gpu, s.T0Ns, place)...)
	var preempt []timed[float64]
	var spec []timed[[2]float64]
	for _, smp := range server {
		if smp.Preemptions != nil {
			preempt = append(preempt, timed[float64]{smp.TNs, *smp.Preemptions})
		}
		if smp.SpecDrafted != nil && smp.SpecAccepted != nil {
			spec = append(spec, timed[[2]float64]{smp.TNs, [2]float64{*smp.SpecDrafted, *smp.SpecAccepted}})
		}
	}
	if len(preempt) > 0 {
		perSec := intervalSegments(preempt, s.T0Ns, func(a, b timed[float64]) (float64, bool) {
			return (b.v - a.v) / (float64(b.tNs-a.tNs) / 1e9), b.v >= a.v // a counter that went back was reset
		})
		t.Panels = append(t.Panels, TimelinePanel{Title: "server: preemptions/s", YLabel: "preemptions/s",
			Series: []TimelineSeries{{"preemptions/s", place(perSec)}}})
	}
	rate := intervalSegments(spec, s.T0Ns, func(a, b timed[[2]float64]) (float64, bool) {
		drafted, accepted := b.v[0]-a.v[0], b.v[1]-a.v[1]
		return 100 * accepted / drafted, drafted > 0 && accepted >= 0
	})
	// llama.cpp exports the counters at 0 when it has no draft model: a panel only where it drafted.
	if len(rate) > 0 {
		t.Panels = append(t.Panels, TimelinePanel{Title: "speculative decoding: acceptance rate", YLabel: "% of draft tokens accepted", Percent: true,
			Series: []TimelineSeries{{"accepted ÷ drafted", place(rate)}}})
	} else if gaugeRate, ok := gauge(func(x metrics.ServerSample) *float64 { return x.SpecAcceptRate }, 100); ok && anyAbove(gaugeRate, 0) {
		// SGLang's gauge, at 0 throughout where nothing is drafted: a panel only where it moved.
		t.Panels = append(t.Panels, TimelinePanel{Title: "speculative decoding: acceptance rate", YLabel: "% of draft tokens accepted", Percent: true,
			Series: []TimelineSeries{{"server's gauge", gaugeRate}}})
	}
	return t
}

// gpuPanels are the GPU power and utilisation panels, one series per source: the sum of a reading's
// power over its GPUs (a reading that lacks one GPU's power is left out, not counted short), and the
// mean of their utilisation.
func gpuPanels(gpu []metrics.GPUSample, t0 int64, place func([]plotter.XYs) []plotter.XYs) []TimelinePanel {
	var sources []string
	power, util := map[string][]timed[float64]{}, map[string][]timed[float64]{}
	devices := map[string]map[string]bool{}
	for _, smp := range gpu {
		if devices[smp.Source] == nil {
			sources = append(sources, smp.Source)
			devices[smp.Source] = map[string]bool{}
		}
		watts, utilSum, utilN, whole := 0.0, 0.0, 0, len(smp.GPUs) > 0
		for _, g := range smp.GPUs {
			devices[smp.Source][g.Key()] = true
			if g.PowerW == nil || math.IsNaN(*g.PowerW) {
				whole = false
			} else {
				watts += *g.PowerW
			}
			if g.UtilPct != nil && !math.IsNaN(*g.UtilPct) {
				utilSum, utilN = utilSum+*g.UtilPct, utilN+1
			}
		}
		if whole {
			power[smp.Source] = append(power[smp.Source], timed[float64]{smp.TNs, watts})
		}
		if utilN > 0 {
			util[smp.Source] = append(util[smp.Source], timed[float64]{smp.TNs, utilSum / float64(utilN)})
		}
	}
	var powerSeries, utilSeries []TimelineSeries
	for _, src := range sources {
		name := fmt.Sprintf("%d GPUs", len(devices[src]))
		if len(devices[src]) == 1 {
			name = "1 GPU"
		}
		if len(sources) > 1 {
			name = src + " (" + name + ")"
		}
		for _, m := range []struct {
			readings map[string][]timed[float64]
			series   *[]TimelineSeries
		}{{power, &powerSeries}, {util, &utilSeries}} {
			rs := m.readings[src]
			if len(rs) == 0 {
				continue
			}
			sort.SliceStable(rs, func(i, j int) bool { return rs[i].tNs < rs[j].tNs })
			*m.series = append(*m.series, TimelineSeries{name, place(gaugeSegments(rs, t0))})
		}
	}
	var out []TimelinePanel
	if len(powerSeries) > 0 {
		out = append(out, TimelinePanel{Title: "GPU power (summed over GPUs)", YLabel: "W", Series: powerSeries})
	}
	if len(utilSeries) > 0 {
		out = append(out, TimelinePanel{Title: "GPU utilisation (mean over GPUs)", YLabel: "%", Percent: true, Series: utilSeries})
	}
	return out
}

// timed is one reading's value at its time (epoch ns on the run's clock).
type timed[T any] struct {
	tNs int64
	v   T
}

// secondsSince places a time on the time series' x axis.
func secondsSince(tNs, t0 int64) float64 { return float64(tNs-t0) / 1e9 }

// gaugeSegments places each reading at its time, starting a new segment after a gap of more than
// timelineMaxGap (readings sorted by time).
func gaugeSegments(rs []timed[float64], t0 int64) []plotter.XYs {
	var segs []plotter.XYs
	for i, r := range rs {
		if i == 0 || r.tNs-rs[i-1].tNs > int64(timelineMaxGap) {
			segs = append(segs, nil)
		}
		segs[len(segs)-1] = append(segs[len(segs)-1], plotter.XY{X: secondsSince(r.tNs, t0), Y: r.v})
	}
	return segs
}

// intervalSegments is a rate between consecutive readings of counters, placed at each interval's
// middle: rate gives the interval's value, or false where it has none (a counter reset, nothing
// drafted). An interval longer than timelineMaxGap, or one without a value, breaks the line: the
// next value starts a new segment.
func intervalSegments[T any](rs []timed[T], t0 int64, rate func(a, b timed[T]) (float64, bool)) []plotter.XYs {
	var segs []plotter.XYs
	lastEnd := int64(math.MinInt64)
	for i := 1; i < len(rs); i++ {
		a, b := rs[i-1], rs[i]
		if b.tNs <= a.tNs || b.tNs-a.tNs > int64(timelineMaxGap) {
			continue
		}
		y, ok := rate(a, b)
		if !ok || math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		if a.tNs != lastEnd {
			segs = append(segs, nil)
		}
		segs[len(segs)-1] = append(segs[len(segs)-1], plotter.XY{X: secondsSince(a.tNs+(b.tNs-a.tNs)/2, t0), Y: y})
		lastEnd = b.tNs
	}
	return segs
}

// clipSegments keeps the points on the time series' x axis, [0, xMax]: readings taken before the
// stage's t0 or after its charts end. A segment keeps its points in order, so clipping only
// shortens it at its ends.
func clipSegments(segs []plotter.XYs, xMax float64) []plotter.XYs {
	var out []plotter.XYs
	for _, seg := range segs {
		var kept plotter.XYs
		for _, p := range seg {
			if p.X >= 0 && p.X <= xMax {
				kept = append(kept, p)
			}
		}
		if len(kept) > 0 {
			out = append(out, kept)
		}
	}
	return out
}

// seriesXMax is the right end of the time series' x axis: its last bucket or the window's end.
func seriesXMax(s metrics.StageSeries) float64 {
	return math.Max(float64(len(s.Seconds)), float64(s.EEffNs-s.T0Ns)/1e9)
}

// timelinePlot draws one telemetry panel in the frame of the time series' other panels (warmup
// shaded, the window's ends dashed, the absorption marked), one colour per series, with a legend
// entry saying so where a gap in the readings broke a line.
func timelinePlot(title string, tp TimelinePanel, s metrics.StageSeries, absorb *metrics.Absorb) (*chart, error) {
	p := newChart()
	p.Title.Text = title
	p.X.Label.Text = "seconds since t0"
	p.Y.Label.Text = tp.YLabel
	maxY := 0.0
	for _, sr := range tp.Series {
		for _, seg := range sr.Segments {
			for _, xy := range seg {
				maxY = math.Max(maxY, xy.Y)
			}
		}
	}
	if tp.Percent { // the whole 0–100 %, so a panel reads at a glance
		maxY = math.Max(maxY*1.05, 105)
	} else {
		maxY = math.Max(maxY*1.15, 1)
	}
	frameSeries(p, s, absorb, maxY)
	for i, sr := range tp.Series {
		c := palette[i%len(palette)]
		var first *plotter.Line
		for _, seg := range sr.Segments {
			l, pts, err := plotter.NewLinePoints(seg)
			if err != nil {
				return nil, err
			}
			l.Color, pts.Color, pts.Radius = c, c, vg.Points(1.2)
			p.Add(l, pts)
			p.addPoints(seg)
			if first == nil {
				first = l
			}
		}
		if first != nil {
			p.addLegend(sr.Name, first)
		}
	}
	if tp.Gapped() {
		p.addLegend(fmt.Sprintf("line broken: no reading for over %g s", timelineMaxGap.Seconds()))
	}
	setSeriesAxes(p, s, maxY)
	p.Add(plotter.NewGrid())
	return p, nil
}

// anyAbove says whether a point of the segments is above v.
func anyAbove(segs []plotter.XYs, v float64) bool {
	for _, seg := range segs {
		for _, p := range seg {
			if p.Y > v {
				return true
			}
		}
	}
	return false
}
