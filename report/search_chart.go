package report

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// SearchPoint is one stage on the capacity curve: x is the SLO statistic (ms), y its output tok/s
// and goodput; the last run of each load is the point (a load's repeats pool into its verdict).
type SearchPoint struct {
	Stage         int
	Value         float64
	Verdict       string
	X             float64 // the SLO statistic in ms; NaN when unknown
	OutTokPerSec  float64
	GoodputPerSec float64 // NaN when unknown (no per-request limit)
	Chosen        bool
	// GPU is the stage's GPU telemetry (nil: none): at the chosen point, what the GPUs did at the knee.
	GPU *metrics.GPUSummary
}

// SearchCurve is everything the capacity chart draws, so a test can check it without pixels.
type SearchCurve struct {
	XLabel  string  // "TTFT p95 (ms)"
	LimitMs float64 // the SLO line; 0 when the SLO sets no latency limit
	Unit    string  // the knob's unit, for the point labels ("sessions", "req/s")
	Points  []SearchPoint
}

// NewSearchCurve places each probed load's last stage on the curve, sorted by load. The x axis is
// the SLO's first latency limit (TTFT p95 when it sets none); chosen is the stage of the answer.
func NewSearchCurve(stages []*resultfiles.StageReport, probes []resultfiles.SearchProbe, chosen int, unit string) SearchCurve {
	c := SearchCurve{XLabel: "TTFT p95 (ms)", Unit: unit}
	metric, stat := metrics.SLOMetricTTFT, metrics.SLOStatP95
	if len(stages) > 0 {
		if ls := stages[0].SLO.Limits(); len(ls) > 0 {
			metric, stat, c.LimitMs = ls[0].Metric, ls[0].Stat, ls[0].LimitMs
			c.XLabel = fmt.Sprintf("%s %s (ms)", strings.ToUpper(metric), stat)
		}
	}
	byStage := map[int]*resultfiles.StageReport{}
	for _, st := range stages {
		byStage[st.Stage] = st
	}
	last := map[float64]resultfiles.SearchProbe{}
	for _, p := range probes {
		if byStage[p.Stage] != nil {
			last[p.Value] = p
		}
	}
	for _, p := range last {
		sum := byStage[p.Stage].Summary
		x, ok := sum.LatencyDist(metric).Stat(stat)
		pt := SearchPoint{Stage: p.Stage, Value: p.Value, Verdict: p.Verdict, X: math.NaN(), OutTokPerSec: sum.Throughput.OutTokPerSec,
			GoodputPerSec: math.NaN(), Chosen: p.Stage == chosen, GPU: byStage[p.Stage].GPU}
		if ok {
			pt.X = x
		}
		if g := sum.Goodput.ReqPerSec; g.OK {
			pt.GoodputPerSec = g.V
		}
		c.Points = append(c.Points, pt)
	}
	sort.Slice(c.Points, func(i, j int) bool { return c.Points[i].Value < c.Points[j].Value })
	return c
}

var undecidedOrange = color.RGBA{255, 127, 14, 255}

// panel draws one y quantity against the SLO statistic: the curve in load order, each point
// labelled with its load, failed ones as red crosses, undecided as orange triangles, the answer
// ringed, the limit as a vertical dashed line.
func (c SearchCurve) panel(title, ylabel string, y func(SearchPoint) float64) (*chart, error) {
	p := newChart()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title+" (points labelled in "+c.Unit+")", c.XLabel, ylabel
	var all plotter.XYs
	var labels []string
	groups := map[string]plotter.XYs{}
	for _, pt := range c.Points {
		if v := y(pt); !math.IsNaN(pt.X) && !math.IsNaN(v) {
			xy := plotter.XY{X: pt.X, Y: v}
			all = append(all, xy)
			labels = append(labels, fmt.Sprintf(" %g", pt.Value))
			groups[pt.Verdict] = append(groups[pt.Verdict], xy)
			if pt.Chosen {
				groups["chosen"] = append(groups["chosen"], xy)
			}
		}
	}
	if len(all) > 0 {
		line, err := plotter.NewLine(all)
		if err != nil {
			return nil, err
		}
		line.Color = palette[0]
		p.Add(line)
		p.addPoints(all)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: all, Labels: labels})
		if err == nil {
			p.Add(lb)
		}
	}
	for _, g := range []struct {
		verdict, name string
		shape         draw.GlyphDrawer
		color         color.Color
	}{
		{"pass", "pass", draw.CircleGlyph{}, palette[0]},
		{"fail", "fail", draw.CrossGlyph{}, failRed},
		{"undecided", "undecided", draw.PyramidGlyph{}, undecidedOrange},
		{"chosen", "capacity at SLO", draw.RingGlyph{}, color.Black},
		{"invalid", "invalid (client strained)", draw.SquareGlyph{}, sloGray},
	} {
		if xy := groups[g.verdict]; len(xy) > 0 {
			s, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, err
			}
			s.Shape, s.Color, s.Radius = g.shape, g.color, vg.Points(5)
			if g.verdict == "chosen" {
				s.Radius = vg.Points(9)
			}
			p.Add(s)
			p.addLegend(g.name, s)
		}
	}
	p.X.Min, p.Y.Min = 0, 0
	if c.LimitMs > 0 {
		p.X.Max = math.Max(p.X.Max, c.LimitMs) * 1.08
		top := math.Max(p.Y.Max, 1)
		line, err := plotter.NewLine(plotter.XYs{{X: c.LimitMs, Y: 0}, {X: c.LimitMs, Y: top}})
		if err != nil {
			return nil, err
		}
		line.Color, line.Dashes, line.Width = sloGray, []vg.Length{vg.Points(2), vg.Points(2)}, vg.Points(1)
		p.Add(line)
		p.addLegend(fmt.Sprintf("SLO %s ms", lat(c.LimitMs)), line)
	}
	p.Y.Max *= 1.1
	p.Add(plotter.NewGrid())
	return p, nil
}

// Render draws output tok/s and goodput against the SLO statistic, side by side, as "svg" or "png".
func (c SearchCurve) Render(format string) ([]byte, error) {
	out, err := c.panel("Output tokens/s vs "+strings.TrimSuffix(c.XLabel, " (ms)"), "achieved output tokens/s", func(p SearchPoint) float64 { return p.OutTokPerSec })
	if err != nil {
		return nil, err
	}
	good, err := c.panel("Goodput vs "+strings.TrimSuffix(c.XLabel, " (ms)"), "goodput (requests/s meeting every limit)", func(p SearchPoint) float64 { return p.GoodputPerSec })
	if err != nil {
		return nil, err
	}
	return render(format, [][]*chart{{out, good}}, 11*vg.Inch, 4.2*vg.Inch)
}

// SearchHeadline is the answer in one line: "capacity at SLO: 12 sessions / 35.2 req/s / 1126 out
// tok/s; $0.62 per 1M out, $0.0197 per 1K turns", from the chosen stage's own numbers and cost (cost
// only when the scenario gives a price). sessions is the knob's value for a closed loop, the mean of
// sessions open for an open one; atLeast writes "at least 12 sessions": the search stopped before a
// higher load was decided.
func SearchHeadline(chosen *resultfiles.StageReport, sessions float64, atLeast bool) string {
	s := chosen.Summary
	bound := ""
	if atLeast {
		bound = "at least "
	}
	line := fmt.Sprintf("capacity at SLO: %s%s sessions / %.1f req/s / %.0f out tok/s", bound, trimNumber(sessions), s.Throughput.ReqPerSec, s.Throughput.OutTokPerSec)
	if !chosen.Cost.Unpriced {
		line += fmt.Sprintf("; %s per 1M out, %s per 1K turns", resultfiles.Money(s.Cost.USDPer1MOut, 3), resultfiles.Money(s.Cost.USDPer1KTurns, 4))
	}
	return line
}

// kneeText is what the GPUs did at the knee, the capacity's stage, capitalised as a sentence ("" when
// there is no capacity or its stage has no GPU readings).
func (c SearchCurve) kneeText() string {
	for _, pt := range c.Points {
		if !pt.Chosen {
			continue
		}
		if text := KneeGPUText(pt.GPU, loadText(pt.Value, c.Unit), pt.Stage); text != "" {
			return "A" + strings.TrimPrefix(text, "a") + "."
		}
	}
	return ""
}

// loadText is a probed load in the knob's unit: "12 sessions", "1 session", "3.5 req/s".
func loadText(v float64, unit string) string {
	if v == 1 && unit == "sessions" {
		return "1 session"
	}
	return fmt.Sprintf("%g %s", v, unit)
}

func trimNumber(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// WriteSearchReport writes charts/search_curve.svg and .png and puts the search on top of the run's
// report.md and report.html (written before by Report.Write): the headline lines, the chart and
// the probes, so the page a user opens first answers the question.
func WriteSearchReport(dir string, curve SearchCurve, lines []string, probes []resultfiles.SearchProbe, unit string) error {
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		return err
	}
	var svg []byte
	for _, format := range []string{"svg", "png"} {
		data, err := curve.Render(format)
		if err != nil {
			return fmt.Errorf("search chart: %w", err)
		}
		if format == "svg" {
			svg = data
		}
		if err := metrics.WriteFileAtomic(filepath.Join(dir, "charts", "search_curve."+format), data); err != nil {
			return err
		}
	}
	var md, page strings.Builder
	md.WriteString("## Capacity search\n\n")
	page.WriteString("<h2>Capacity search</h2>\n")
	for _, l := range lines {
		md.WriteString("**" + mdCell(l) + "**\n\n")
		page.WriteString(`<div class="headline">` + html.EscapeString(l) + "</div>\n")
	}
	if knee := curve.kneeText(); knee != "" {
		md.WriteString(mdCell(knee) + "\n\n")
		page.WriteString(`<p class="note">` + html.EscapeString(knee) + "</p>\n")
	}
	md.WriteString("![capacity curve](charts/search_curve.png)\n\n| probe | load | verdict | stage | why |\n| --- | --- | --- | --- | --- |\n")
	page.WriteString(`<div class="chart">` + string(inlineSVG(svg)) + "</div>\n" +
		`<p class="note">Each point is the last run of a probed load at its SLO statistic (x) and achieved throughput (y), labelled with the load; the dashed line is the SLO limit; the ringed point is the capacity found.</p>` + "\n<table><tr><th>probe</th><th>load</th><th>verdict</th><th>stage</th><th>why</th></tr>\n")
	for i, p := range probes {
		load := loadText(p.Value, unit)
		fmt.Fprintf(&md, "| %d | %s | %s | %02d | %s |\n", i+1, load, p.Verdict, p.Stage, mdCell(p.Reason))
		fmt.Fprintf(&page, "<tr><td>%d</td><td>%s</td><td>%s</td><td>%02d</td><td style=\"text-align:left;white-space:normal\">%s</td></tr>\n",
			i+1, html.EscapeString(load), p.Verdict, p.Stage, html.EscapeString(p.Reason))
	}
	md.WriteString("\n")
	page.WriteString("</table>\n")
	if err := insertAfter(filepath.Join(dir, "report.md"), "\n\n", md.String()); err != nil {
		return err
	}
	return insertAfter(filepath.Join(dir, "report.html"), "</h1>\n", page.String())
}

// insertAfter puts text into the file right after the first occurrence of mark (at the end when
// there is none).
func insertAfter(path, mark, text string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	at := len(data)
	if i := bytes.Index(data, []byte(mark)); i >= 0 {
		at = i + len(mark)
	}
	out := append(append(append([]byte{}, data[:at]...), text...), data[at:]...)
	return metrics.WriteFileAtomic(path, out)
}
