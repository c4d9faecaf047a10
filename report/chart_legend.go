package report

import (
	"bytes"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chart is a plot whose legend is drawn in a strip under it, entries left to right, never on the
// data: gonum's own legend sits inside the data area, where a point or line near its corner hides
// under it (the headroom that was added for it was a guess).
type chart struct {
	*plot.Plot
	entries []legendEntry
	// points are the data drawn (in data units), kept so a test can check that none is under the legend.
	points plotter.XYs
	// marks are the shapes added with addMarks (shaded windows, lines), kept so a test can check
	// where they are: gonum's plot does not list what it holds.
	marks []plot.Plotter
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

func newChart() *chart {
	c := &chart{Plot: plot.New()}
	c.Legend.TextStyle.Font.Size = vg.Points(10)
	return c
}

// addLegend adds a legend entry; addPoints records data drawn.
func (c *chart) addLegend(name string, thumbs ...plot.Thumbnailer) {
	c.entries = append(c.entries, legendEntry{name, thumbs})
}

func (c *chart) addPoints(xy plotter.XYs) { c.points = append(c.points, xy...) }

// addMarks adds shapes to the plot and records them.
func (c *chart) addMarks(ps ...plot.Plotter) {
	c.Add(ps...)
	c.marks = append(c.marks, ps...)
}

// Legend spacing: between entries on a row, between rows, and above the strip (under the x label).
const (
	legendGap    = vg.Length(14)
	legendRowGap = vg.Length(3)
	legendTopPad = vg.Length(6)
)

// legendBoxes lays the entries out in rows across width, from the top-left (0, 0) going down: each
// entry's box, and the strip's height.
func (c *chart) legendBoxes(width vg.Length) ([]vg.Rectangle, vg.Length) {
	if len(c.entries) == 0 {
		return nil, 0
	}
	sty := c.Legend.TextStyle
	h := sty.FontExtents().Height
	var boxes []vg.Rectangle
	x, y := vg.Length(0), -legendTopPad
	for _, e := range c.entries {
		w := c.Legend.ThumbnailWidth + sty.Rectangle(" "+e.name).Max.X
		if x > 0 && x+w > width {
			x, y = 0, y-h-legendRowGap
		}
		boxes = append(boxes, vg.Rectangle{Min: vg.Point{X: x, Y: y - h}, Max: vg.Point{X: x + w, Y: y}})
		x += w + legendGap
	}
	return boxes, -(y - h)
}

// chartLayout is where a chart's parts land on its canvas.
type chartLayout struct {
	data   vg.Rectangle   // the data area: every point and line is inside it
	legend []vg.Rectangle // each legend entry's box, under the data area
	points []vg.Point     // the data points, placed
}

// layout places the chart on dc with a legend strip of the given height at its bottom.
func (c *chart) layout(dc draw.Canvas, strip vg.Length) (draw.Canvas, chartLayout) {
	above := draw.Crop(dc, 0, 0, strip, 0)
	dataC := c.DataCanvas(above)
	l := chartLayout{data: dataC.Rectangle}
	boxes, _ := c.legendBoxes(dc.Size().X)
	for _, b := range boxes {
		l.legend = append(l.legend, b.Add(vg.Point{X: dc.Min.X, Y: dc.Min.Y + strip}))
	}
	tx, ty := c.Transforms(&dataC)
	for _, p := range c.points {
		l.points = append(l.points, vg.Point{X: tx(p.X), Y: ty(p.Y)})
	}
	return above, l
}

// draw draws the chart on dc, its legend in the bottom strip.
func (c *chart) draw(dc draw.Canvas, strip vg.Length) {
	above, l := c.layout(dc, strip)
	c.Plot.Draw(above)
	for i, e := range c.entries {
		leg := plot.NewLegend()
		leg.TextStyle, leg.ThumbnailWidth, leg.Left, leg.Top = c.Legend.TextStyle, c.Legend.ThumbnailWidth, true, true
		leg.Add(e.name, e.thumbs...)
		leg.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: l.legend[i]})
	}
}

// layoutGrid aligns the charts' data areas in rows × cols on dc and gives each its canvas and the
// legend strip of its row (the tallest legend of the row, so the row's x axes stay level).
func layoutGrid(grid [][]*chart, dc draw.Canvas) ([][]draw.Canvas, []vg.Length) {
	tiles := draw.Tiles{Rows: len(grid), Cols: len(grid[0]), PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	plots := make([][]*plot.Plot, len(grid))
	for i, row := range grid {
		for _, c := range row {
			var p *plot.Plot // nil: an empty tile (plot.Align leaves it blank)
			if c != nil {
				p = c.Plot
			}
			plots[i] = append(plots[i], p)
		}
	}
	canvases := plot.Align(plots, tiles, dc)
	strips := make([]vg.Length, len(grid))
	for i, row := range grid {
		for j, c := range row {
			if c == nil {
				continue
			}
			_, h := c.legendBoxes(canvases[i][j].Size().X)
			strips[i] = max(strips[i], h)
		}
	}
	return canvases, strips
}

// render lays out charts in rows × cols and encodes them as "svg" or "png"; a nil chart is an empty
// tile (an odd last panel of a two-column grid).
func render(format string, grid [][]*chart, w, h vg.Length) ([]byte, error) {
	draws := func(dc draw.Canvas) {
		canvases, strips := layoutGrid(grid, dc)
		for i, row := range grid {
			for j, c := range row {
				if c != nil {
					c.draw(canvases[i][j], strips[i])
				}
			}
		}
	}
	var buf bytes.Buffer
	var err error
	switch format {
	case "svg":
		c := vgsvg.New(w, h)
		draws(draw.New(c))
		_, err = c.WriteTo(&buf)
	case "png":
		c := vgimg.New(w, h)
		draws(draw.New(c))
		_, err = vgimg.PngCanvas{Canvas: c}.WriteTo(&buf)
	default:
		err = fmt.Errorf("chart format %q: accepted: svg, png", format)
	}
	return buf.Bytes(), err
}
