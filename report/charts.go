package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/plload/plload/metrics"
)

// CurvePoint is one stage on the latency–throughput curve.
type CurvePoint struct {
	Stage                   int
	OutTokPerSec            float64
	ReqPerSec               float64
	TTFTP95, TTFTP99        float64 // ms; NaN when unknown
	ITLP95, ITLP99          float64
	Pass, Partial, Headline bool
	// Failed: judged by an SLO and did not pass it (a stage of a run without an SLO is not failed).
	Failed bool
}

// CurveRun is one run's curve.
type CurveRun struct {
	Name   string
	Points []CurvePoint
}

// CurveModel is everything the latency–throughput chart draws, so tests can check it without pixels:
// x = achieved out tok/s, y = TTFT and ITL p95/p99, SLO lines, the headline stage, failed stages apart.
// Several runs (plload report A B …) overlay in one chart, one colour per run.
type CurveModel struct {
	Runs []CurveRun
	// SLOTTFTMs and SLOITLMs are the first run's TTFT and ITL p95 limits (0: none).
	SLOTTFTMs float64
	SLOITLMs  float64
	// Limits are the SLO lines the panels draw: every run's TTFT and ITL limit at p95 or p99 (the
	// statistics the curves show), once per distinct value; Run names the runs that set it when the
	// runs do not all share it ("" when they do).
	Limits []CurveLimit
}

// CurveLimit is one SLO line of the curve chart.
type CurveLimit struct {
	Metric, Stat string // ttft or itl; p95 or p99
	Ms           float64
	Run          string // the runs with this limit, when not every run has it
}

// Label is the line's legend: "SLO 250 ms" for a p95 limit (the statistic the solid curve shows),
// "SLO p99 800 ms" for p99, and the runs in parentheses when not every run has it.
func (l CurveLimit) Label() string {
	text := "SLO " + lat(l.Ms) + " ms"
	if l.Stat != metrics.SLOStatP95 {
		text = "SLO " + l.Stat + " " + lat(l.Ms) + " ms"
	}
	if l.Run != "" {
		text += " (" + l.Run + ")"
	}
	return text
}

// curveLimits lists the runs' TTFT and ITL limits at p95 and p99, each distinct value once, naming
// its runs when some run does not have it.
func curveLimits(runs []Run) []CurveLimit {
	type key struct {
		metric, stat string
		ms           float64
	}
	var order []key
	byKey := map[key][]string{}
	for _, r := range runs {
		if len(r.Stages) == 0 {
			continue
		}
		for _, l := range r.Stages[0].SLO.Limits() {
			k := key{l.Metric, l.Stat, l.LimitMs}
			if (l.Metric != metrics.SLOMetricTTFT && l.Metric != metrics.SLOMetricITL) || (l.Stat != metrics.SLOStatP95 && l.Stat != metrics.SLOStatP99) {
				continue
			}
			if _, seen := byKey[k]; !seen {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], r.Name)
		}
	}
	var out []CurveLimit
	for _, k := range order {
		l := CurveLimit{Metric: k.metric, Stat: k.stat, Ms: k.ms}
		if names := byKey[k]; len(names) < len(runs) {
			l.Run = strings.Join(names, ", ")
		}
		out = append(out, l)
	}
	return out
}

func nanIfUnknown(d metrics.Dist, v float64) float64 {
	if !d.Known() {
		return math.NaN()
	}
	return v
}

// Curve builds the model for one or more runs (the SLO lines are the first run's).
func Curve(runs []Run) CurveModel {
	var m CurveModel
	for i, r := range runs {
		sums := make([]*metrics.StageSummary, len(r.Stages))
		for k, s := range r.Stages {
			sums[k] = s.Summary
		}
		best := metrics.Headline(sums)
		cr := CurveRun{Name: r.Name}
		for k, s := range r.Stages {
			sum := s.Summary
			cr.Points = append(cr.Points, CurvePoint{Stage: s.Stage, OutTokPerSec: sum.Throughput.OutTokPerSec, ReqPerSec: sum.Throughput.ReqPerSec,
				TTFTP95: nanIfUnknown(sum.TTFT, sum.TTFT.P95), TTFTP99: nanIfUnknown(sum.TTFT, sum.TTFT.P99),
				ITLP95: nanIfUnknown(sum.ITL, sum.ITL.P95), ITLP99: nanIfUnknown(sum.ITL, sum.ITL.P99),
				Pass: sum.SLO.Verdict == metrics.SLOPass, Partial: s.Partial, Headline: k == best,
				Failed: s.SLO.Set() && sum.SLO.Verdict != metrics.SLOPass})
		}
		m.Runs = append(m.Runs, cr)
		if i == 0 && len(r.Stages) > 0 {
			m.SLOTTFTMs, m.SLOITLMs = r.Stages[0].SLO.TTFTP95Ms, r.Stages[0].SLO.ITLP95Ms
		}
	}
	m.Limits = curveLimits(runs)
	return m
}

var (
	palette = []color.Color{color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
		color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255}, color.RGBA{23, 190, 207, 255}}
	failRed = color.RGBA{214, 39, 40, 255}
	sloGray = color.RGBA{90, 90, 90, 255}
)

// panel draws one of the two panels: p95 (solid) and p99 (dashed) per run, the SLO lines of metric,
// the headline ringed, failed or partial stages as red crosses.
func (m CurveModel) panel(title, ylabel, metric string, p95, p99 func(CurvePoint) float64) (*chart, error) {
	p := newChart()
	p.Title.Text = title
	p.X.Label.Text = "achieved output tokens/s"
	p.Y.Label.Text = ylabel
	maxX := 0.0
	for i, r := range m.Runs {
		c := palette[i%len(palette)]
		for q, get := range []func(CurvePoint) float64{p95, p99} {
			var xy plotter.XYs
			for _, pt := range r.Points {
				if y := get(pt); !math.IsNaN(y) {
					xy = append(xy, plotter.XY{X: pt.OutTokPerSec, Y: y})
					maxX = math.Max(maxX, pt.OutTokPerSec)
				}
			}
			if len(xy) == 0 {
				continue
			}
			line, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return nil, err
			}
			line.Color, pts.Color = c, c
			pts.Shape = draw.CircleGlyph{}
			name := "p95"
			if q == 1 {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				pts.Shape = draw.PyramidGlyph{}
				name = "p99"
			}
			if len(m.Runs) > 1 {
				name = r.Name + " " + name
			}
			p.Add(line, pts)
			p.addPoints(xy)
			p.addLegend(name, line, pts)
		}
		var fail, ring plotter.XYs
		for _, pt := range r.Points {
			y := p95(pt)
			if math.IsNaN(y) {
				continue
			}
			if pt.Failed || pt.Partial {
				fail = append(fail, plotter.XY{X: pt.OutTokPerSec, Y: y})
			}
			if pt.Headline {
				ring = append(ring, plotter.XY{X: pt.OutTokPerSec, Y: y})
			}
		}
		if len(fail) > 0 {
			s, _ := plotter.NewScatter(fail)
			s.Shape, s.Color, s.Radius = draw.CrossGlyph{}, failRed, vg.Points(6)
			p.Add(s)
			if i == 0 {
				p.addLegend("SLO failed / partial", s)
			}
		}
		if len(ring) > 0 {
			s, _ := plotter.NewScatter(ring)
			s.Shape, s.Color, s.Radius = draw.RingGlyph{}, color.Black, vg.Points(8)
			p.Add(s)
			if i == 0 {
				p.addLegend("headline stage", s)
			}
		}
	}
	m.sloLines(p, metric)
	p.Y.Max *= 1.08 // the SLO line and the top points clear of the frame (the legend is under the chart)
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max = math.Max(p.X.Max, maxX*1.05)
	p.Add(plotter.NewGrid())
	return p, nil
}

// sloLines draws the limits of metric across the panel: gray, dotted for p95 and dashed for p99
// (as the curves), and, when runs' limits differ, in the colour of the one run that sets it.
func (m CurveModel) sloLines(p *chart, metric string) {
	for _, l := range m.Limits {
		if l.Metric != metric {
			continue
		}
		ms := l.Ms
		f := plotter.NewFunction(func(float64) float64 { return ms })
		f.Color, f.Dashes, f.Width = sloGray, []vg.Length{vg.Points(2), vg.Points(2)}, vg.Points(1)
		if l.Stat == metrics.SLOStatP99 {
			f.Dashes = []vg.Length{vg.Points(6), vg.Points(2)}
		}
		for i, r := range m.Runs {
			if l.Run == r.Name {
				f.Color = palette[i%len(palette)]
			}
		}
		p.addMarks(f)
		p.addLegend(l.Label(), f)
		p.Y.Max = math.Max(p.Y.Max, ms)
	}
}

// Render draws the two panels side by side as "svg" or "png".
func (m CurveModel) Render(format string) ([]byte, error) {
	ttft, err := m.panel("TTFT vs throughput", "TTFT (ms)", metrics.SLOMetricTTFT,
		func(p CurvePoint) float64 { return p.TTFTP95 }, func(p CurvePoint) float64 { return p.TTFTP99 })
	if err != nil {
		return nil, err
	}
	itl, err := m.panel("ITL vs throughput", "inter-token latency (ms)", metrics.SLOMetricITL,
		func(p CurvePoint) float64 { return p.ITLP95 }, func(p CurvePoint) float64 { return p.ITLP99 })
	if err != nil {
		return nil, err
	}
	return render(format, [][]*chart{{ttft, itl}}, 11*vg.Inch, 4.2*vg.Inch)
}

// WriteOverlay writes the curves of runs overlaid in one chart, with their SLO lines, to path: SVG or
// PNG by its extension.
func WriteOverlay(path string, runs []Run) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != "svg" && format != "png" {
		return fmt.Errorf("%s: accepted: a file name ending in .svg or .png", path)
	}
	data, err := Curve(runs).Render(format)
	if err != nil {
		return err
	}
	return metrics.WriteFileAtomic(path, data)
}

// WriteCharts writes charts/latency_throughput.svg and .png into dir.
func WriteCharts(dir string, runs []Run) error {
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		return err
	}
	m := Curve(runs)
	for _, format := range []string{"svg", "png"} {
		data, err := m.Render(format)
		if err != nil {
			return err
		}
		if err := metrics.WriteFileAtomic(filepath.Join(dir, "charts", "latency_throughput."+format), data); err != nil {
			return err
		}
	}
	return nil
}
