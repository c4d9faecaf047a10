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
type CurveModel struct {
	Runs      []CurveRun
	SLOTTFTMs float64
	SLOITLMs  float64
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
	return m
}

var (
	palette = []color.Color{color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
		color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255}, color.RGBA{23, 190, 207, 255}}
	failRed = color.RGBA{214, 39, 40, 255}
	sloGray = color.RGBA{90, 90, 90, 255}
)

// panel draws one of the two panels: p95 (solid) and p99 (dashed) per run, the SLO line, the
// headline ringed, failed or partial stages as red crosses.
func (m CurveModel) panel(title, ylabel string, slo float64, p95, p99 func(CurvePoint) float64) (*chart, error) {
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
	if slo > 0 {
		f := plotter.NewFunction(func(float64) float64 { return slo })
		f.Color, f.Dashes, f.Width = sloGray, []vg.Length{vg.Points(2), vg.Points(2)}, vg.Points(1)
		p.Add(f)
		p.addLegend(fmt.Sprintf("SLO %s ms", lat(slo)), f)
		p.Y.Max = math.Max(p.Y.Max, slo)
	}
	p.Y.Max *= 1.08 // the SLO line and the top points clear of the frame (the legend is under the chart)
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max = math.Max(p.X.Max, maxX*1.05)
	p.Add(plotter.NewGrid())
	return p, nil
}

// Render draws the two panels side by side as "svg" or "png".
func (m CurveModel) Render(format string) ([]byte, error) {
	ttft, err := m.panel("TTFT vs throughput", "TTFT (ms)", m.SLOTTFTMs,
		func(p CurvePoint) float64 { return p.TTFTP95 }, func(p CurvePoint) float64 { return p.TTFTP99 })
	if err != nil {
		return nil, err
	}
	itl, err := m.panel("ITL vs throughput", "inter-token latency (ms)", m.SLOITLMs,
		func(p CurvePoint) float64 { return p.ITLP95 }, func(p CurvePoint) float64 { return p.ITLP99 })
	if err != nil {
		return nil, err
	}
	return render(format, [][]*chart{{ttft, itl}}, 11*vg.Inch, 4.2*vg.Inch)
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
