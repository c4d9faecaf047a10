package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// cdfPlot is the empirical CDF of sorted values (ms).
func cdfPlot(title string, sorted []float64, slo float64) (*chart, error) {
	p := newChart()
	p.Title.Text = title
	p.X.Label.Text = "ms"
	p.Y.Label.Text = "share of values ≤ x"
	p.Y.Min, p.Y.Max = 0, 1
	if len(sorted) > 0 {
		xy := make(plotter.XYs, len(sorted))
		for i, v := range sorted {
			xy[i] = plotter.XY{X: v, Y: float64(i+1) / float64(len(sorted))}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = palette[0]
		p.Add(l)
		p.addPoints(xy)
	}
	v := plotter.NewFunction(func(float64) float64 { return 0.95 })
	v.Color, v.Dashes = sloGray, []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(v)
	p.addLegend("p95", v)
	lo, hi := 0.0, 1.0
	if len(sorted) > 0 {
		lo, hi = sorted[0], sorted[len(sorted)-1]
		pad := math.Max((hi-lo)*0.1, hi*0.02)
		lo, hi = math.Max(0, lo-pad), hi+pad
	}
	switch {
	case slo <= 0:
	case slo <= hi*2: // near the data: draw it
		sloLine, _ := plotter.NewLine(plotter.XYs{{X: slo, Y: 0}, {X: slo, Y: 1}})
		sloLine.Color, sloLine.Dashes = failRed, []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(sloLine)
		p.addLegend(fmt.Sprintf("SLO %s ms", lat(slo)), sloLine)
		hi = math.Max(hi, slo*1.05)
	default: // far beyond the data: say so rather than squash the curve against the axis
		p.addLegend(fmt.Sprintf("SLO %s ms (off the chart, right)", lat(slo)))
	}
	p.X.Min, p.X.Max = lo, hi
	p.Add(plotter.NewGrid())
	return p, nil
}

// rollingSeconds is the window of the rolling mean drawn over the per-second counts: one second's
// count of a few requests jumps between 0 and 3, and five seconds read as a rate.
const rollingSeconds = 5

// rollingMean is the centred mean of ys over window buckets (fewer at the ends), NaNs skipped.
func rollingMean(ys []float64, window int) []float64 {
	out := make([]float64, len(ys))
	half := window / 2
	for i := range ys {
		sum, n := 0.0, 0
		for j := max(0, i-half); j <= min(len(ys)-1, i+window-1-half); j++ {
			if !math.IsNaN(ys[j]) {
				sum, n = sum+ys[j], n+1
			}
		}
		out[i] = math.NaN()
		if n > 0 {
			out[i] = sum / float64(n)
		}
	}
	return out
}

// seriesPlot is one time-series panel with warmup shaded and the window's ends marked, and, for a
// stage whose load rose, the windows that broke a latency limit shaded and the absorption marked.
// A rolling panel draws each second's value as a faint dot and the rolling mean as the line.
func seriesPlot(title, ylabel string, s metrics.StageSeries, ys []float64, absorb *metrics.Absorb, rolling bool) (*chart, error) {
	p := newChart()
	p.Title.Text = title
	p.X.Label.Text = "seconds since t0"
	p.Y.Label.Text = ylabel
	var xy plotter.XYs
	maxY := 0.0
	for i, y := range ys {
		if !math.IsNaN(y) {
			xy = append(xy, plotter.XY{X: s.Seconds[i] + 0.5, Y: y})
			maxY = math.Max(maxY, y)
		}
	}
	maxY = math.Max(maxY*1.15, 1)
	frameSeries(p, s, absorb, maxY)
	switch {
	case len(xy) > 0 && rolling:
		if err := addRolling(p, s, ys, xy); err != nil {
			return nil, err
		}
	case len(xy) > 0:
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		l.Color, pts.Color, pts.Radius = palette[0], palette[0], vg.Points(1.5)
		p.Add(l, pts)
		p.addPoints(xy)
	}
	setSeriesAxes(p, s, maxY)
	p.Add(plotter.NewGrid())
	return p, nil
}

// frameSeries draws what every time-series panel shares, under its data: warmup shaded, the
// window's start and end dashed, the absorption marked.
func frameSeries(p *chart, s metrics.StageSeries, absorb *metrics.Absorb, maxY float64) {
	w := float64(s.WNs-s.T0Ns) / 1e9
	e := float64(s.EEffNs-s.T0Ns) / 1e9
	if w > 0 {
		shade, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: w, Y: 0}, {X: w, Y: maxY}, {X: 0, Y: maxY}})
		if err == nil {
			shade.Color, shade.LineStyle.Width = color.RGBA{230, 230, 230, 255}, 0
			p.Add(shade)
			p.addLegend("warmup", shade)
		}
	}
	drawAbsorb(p, absorb, maxY)
	for _, at := range []float64{w, e} {
		l, _ := plotter.NewLine(plotter.XYs{{X: at, Y: 0}, {X: at, Y: maxY}})
		l.Color, l.Dashes = sloGray, []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(l)
	}
}

// setSeriesAxes sets the axes every time-series panel shares, once its data is added (adding data
// widens them): y from 0 to maxY, x from t0 to the series' end (seriesXMax), so the panels line up
// second for second.
func setSeriesAxes(p *chart, s metrics.StageSeries, maxY float64) {
	p.Y.Min, p.Y.Max, p.X.Min, p.X.Max = 0, maxY, 0, seriesXMax(s)
}

// faintBlue is the per-second dots under a rolling mean.
var faintBlue = color.NRGBA{31, 119, 180, 120}

// addRolling draws the per-second values xy as faint dots and their rolling mean as the line.
func addRolling(p *chart, s metrics.StageSeries, ys []float64, xy plotter.XYs) error {
	dots, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	dots.Color, dots.Radius, dots.Shape = faintBlue, vg.Points(1.8), draw.CircleGlyph{}
	var mean plotter.XYs
	for i, y := range rollingMean(ys, rollingSeconds) {
		if !math.IsNaN(y) {
			mean = append(mean, plotter.XY{X: s.Seconds[i] + 0.5, Y: y})
		}
	}
	l, err := plotter.NewLine(mean)
	if err != nil {
		return err
	}
	l.Color, l.Width = palette[0], vg.Points(1.5)
	p.Add(dots, l)
	p.addPoints(xy)
	p.addLegend("each second", dots)
	p.addLegend(fmt.Sprintf("%d s rolling mean", rollingSeconds), l)
	return nil
}

// WriteStageCharts writes charts/stage_NN_cdf.{svg,png} (TTFT and ITL distributions) and
// charts/stage_NN_timeseries.{svg,png}: requests answered and failed per second (an outage shows as
// errors, not only as a gap), output tokens/s, requests sent/s, TTFT p95 and active sessions; the
// counts with a rolling mean over the per-second dots. Under them, on the same seconds, the stage
// directory's server and GPU readings where it has them (ReadTimeline): requests running and
// waiting, KV-cache use, GPU power and utilisation, preemptions/s, speculative decoding's acceptance.
func WriteStageCharts(dir string, st *resultfiles.StageReport, s metrics.StageSeries) error {
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		return err
	}
	ttft, err := cdfPlot(fmt.Sprintf("stage %02d: TTFT distribution", st.Stage), s.TTFT, st.SLO.TTFTP95Ms)
	if err != nil {
		return err
	}
	itl, err := cdfPlot(fmt.Sprintf("stage %02d: ITL distribution (per token)", st.Stage), s.ITL, st.SLO.ITLP95Ms)
	if err != nil {
		return err
	}
	var panels []*chart
	for _, p := range []struct {
		title, ylabel string
		ys            []float64
		rolling       bool
	}{{"requests answered/s", "req/s", s.ReqPerSec, true}, {"errors/s (failed requests, by end)", "errors/s", s.ErrorsPerSec, true},
		{"output tokens/s", "tok/s", s.OutTokPerSec, true}, {"requests sent/s", "req/s", s.SentPerSec, true},
		{"TTFT p95 of requests started each second", "ms", s.TTFTP95Ms, false}, {"active sessions", "sessions", s.ActiveSessions, false}} {
		pl, err := seriesPlot(fmt.Sprintf("stage %02d: %s", st.Stage, p.title), p.ylabel, s, p.ys, st.Summary.Absorb, p.rolling)
		if err != nil {
			return err
		}
		panels = append(panels, pl)
	}
	timeline, err := ReadTimeline(filepath.Join(dir, fmt.Sprintf("stage_%02d", st.Stage)), s)
	if err != nil {
		return fmt.Errorf("the server's and GPUs' readings: %w", err)
	}
	for _, tp := range timeline.Panels {
		pl, err := timelinePlot(fmt.Sprintf("stage %02d: %s", st.Stage, tp.Title), tp, s, st.Summary.Absorb)
		if err != nil {
			return err
		}
		panels = append(panels, pl)
	}
	var grid [][]*chart // two panels a row; an odd last one alone
	for i := 0; i < len(panels); i += 2 {
		if i+1 < len(panels) {
			grid = append(grid, []*chart{panels[i], panels[i+1]})
		} else {
			grid = append(grid, []*chart{panels[i], nil})
		}
	}
	for _, format := range []string{"svg", "png"} {
		cdf, err := render(format, [][]*chart{{ttft, itl}}, 11*vg.Inch, 4*vg.Inch)
		if err != nil {
			return err
		}
		ts, err := render(format, grid, 11*vg.Inch, 3.5*vg.Inch*vg.Length(len(grid)))
		if err != nil {
			return err
		}
		base := filepath.Join(dir, "charts", fmt.Sprintf("stage_%02d_", st.Stage))
		if err := metrics.WriteFileAtomic(base+"cdf."+format, cdf); err != nil {
			return err
		}
		if err := metrics.WriteFileAtomic(base+"timeseries."+format, ts); err != nil {
			return err
		}
	}
	return nil
}

// StageChartsFromRecords reads a stage's records (when they were kept) and writes its charts.
func StageChartsFromRecords(runDir string, st *resultfiles.StageReport) error {
	path := filepath.Join(runDir, fmt.Sprintf("stage_%02d", st.Stage), "profile_export.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil // records deleted (record_requests: false): the curve is all there is
	}
	defer f.Close()
	series := metrics.NewSeriesBuilder(st.Summary) // one record at a time: a stage's records may not fit in memory
	if err := metrics.ReadRecords(f, func(r *metrics.Record) error { series.Add(r); return nil }); err != nil {
		return err
	}
	return WriteStageCharts(runDir, st, series.Series())
}

// violatedPink shades the windows that broke a latency limit; absorbedGreen marks absorbed_s.
var (
	violatedPink  = color.RGBA{248, 200, 200, 255}
	absorbedGreen = color.RGBA{44, 160, 44, 255}
)

// drawAbsorb shades the stage's violated windows (docs/measurement.md) and marks when the load was absorbed
// (nothing for a stage without an absorb).
func drawAbsorb(p *chart, a *metrics.Absorb, maxY float64) {
	if a == nil {
		return
	}
	var shade *plotter.Polygon
	for _, w := range a.Windows {
		if w.State != metrics.WindowViolated {
			continue
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: w.StartS, Y: 0}, {X: w.EndS, Y: 0}, {X: w.EndS, Y: maxY}, {X: w.StartS, Y: maxY}})
		if err != nil {
			continue
		}
		poly.Color, poly.LineStyle.Width = violatedPink, 0
		p.addMarks(poly)
		shade = poly
	}
	if shade != nil {
		p.addLegend(fmt.Sprintf("window of %s s over a latency limit", resultfiles.Seconds(a.WindowS)), shade)
	}
	switch {
	case a.AbsorbedS.OK:
		l, err := plotter.NewLine(plotter.XYs{{X: a.AbsorbedS.V, Y: 0}, {X: a.AbsorbedS.V, Y: maxY}})
		if err != nil {
			return
		}
		l.Color, l.Width = absorbedGreen, vg.Points(2)
		p.addMarks(l)
		p.addLegend(fmt.Sprintf("absorbed at %s s", resultfiles.Seconds(a.AbsorbedS.V)), l)
	case a.NotAbsorbed():
		p.addLegend("not absorbed by the end of the stage")
	}
}
