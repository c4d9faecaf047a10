package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

func inside(p vg.Point, r vg.Rectangle) bool {
	const eps = 0.01
	return p.X >= r.Min.X-eps && p.X <= r.Max.X+eps && p.Y >= r.Min.Y-eps && p.Y <= r.Max.Y+eps
}

// checkLegends lays grid out as render does and checks that no legend entry covers the data area
// (which holds every point, and so every line between them), that entries do not overlap each
// other, and that they stay on the canvas.
func checkLegends(t *testing.T, name string, grid [][]*chart, w, h vg.Length) {
	t.Helper()
	dc := draw.New(vgimg.New(w, h))
	canvases, strips := layoutGrid(grid, dc)
	for i, row := range grid {
		for j, c := range row {
			_, l := c.layout(canvases[i][j], strips[i])
			if len(l.legend) != len(c.entries) || len(l.points) != len(c.points) {
				t.Fatalf("%s [%d][%d]: %d boxes for %d entries, %d points placed of %d", name, i, j, len(l.legend), len(c.entries), len(l.points), len(c.points))
			}
			for k, p := range l.points {
				if !inside(p, l.data) {
					t.Errorf("%s [%d][%d]: point %v at %v is outside the data area %v", name, i, j, c.points[k], p, l.data)
				}
			}
			for k, b := range l.legend {
				if overlaps(b, l.data) {
					t.Errorf("%s [%d][%d]: legend entry %q at %v covers the data area %v", name, i, j, c.entries[k].name, b, l.data)
				}
				if !inside(b.Min, dc.Rectangle) || !inside(b.Max, dc.Rectangle) {
					t.Errorf("%s [%d][%d]: legend entry %q at %v is off the canvas", name, i, j, c.entries[k].name, b)
				}
				for m := k + 1; m < len(l.legend); m++ {
					if overlaps(b, l.legend[m]) {
						t.Errorf("%s [%d][%d]: legend entries %q and %q overlap", name, i, j, c.entries[k].name, c.entries[m].name)
					}
				}
			}
		}
	}
}

// TestChartLegendsNeverCoverData: in every chart (the latency–throughput curve, one run and six with
// long names whose legend wraps; a point in the top-left corner, where the legend used to sit; the
// stage CDFs and time series) the legend is outside the data area.
func TestChartLegendsNeverCoverData(t *testing.T) {
	_, stages := goldenStages(t)
	corner := func() []*resultfiles.StageReport {
		_, st := goldenStages(t)
		// The highest latency at the lowest throughput: top-left, under the old legend.
		st[0].Summary.TTFT.P95, st[0].Summary.TTFT.P99 = 5000, 6000
		st[0].Summary.Throughput.OutTokPerSec = 0.1
		return st
	}
	var many []Run
	for i := range 6 {
		many = append(many, Run{Name: fmt.Sprintf("run-with-a-long-name-%d-%s", i, strings.Repeat("x", 10)), Stages: corner()})
	}
	for name, runs := range map[string][]Run{"one run": {{Name: "golden", Stages: stages}}, "top-left point": {{Name: "c", Stages: corner()}}, "six runs": many} {
		m := Curve(runs)
		ttft, err := m.panel("TTFT vs throughput", "TTFT (ms)", metrics.SLOMetricTTFT, func(p CurvePoint) float64 { return p.TTFTP95 }, func(p CurvePoint) float64 { return p.TTFTP99 })
		if err != nil {
			t.Fatal(err)
		}
		itl, err := m.panel("ITL vs throughput", "ITL (ms)", metrics.SLOMetricITL, func(p CurvePoint) float64 { return p.ITLP95 }, func(p CurvePoint) float64 { return p.ITLP99 })
		if err != nil {
			t.Fatal(err)
		}
		if len(ttft.points) == 0 || len(ttft.entries) < 3 {
			t.Fatalf("%s: %d points, %d legend entries", name, len(ttft.points), len(ttft.entries))
		}
		checkLegends(t, name, [][]*chart{{ttft, itl}}, 11*vg.Inch, 4.2*vg.Inch)
	}
	// Stage charts: a CDF with its SLO line in view, and the time series.
	recs := []*metrics.Record{rec(1.5, 100, 10, "a"), rec(2.5, 240, 10, "b"), rec(3.5, 120, 10, "a")}
	s := metrics.Series(recs, stages[0].Summary)
	cdf, err := cdfPlot("TTFT", s.TTFT, 250)
	if err != nil {
		t.Fatal(err)
	}
	cdf2, err := cdfPlot("ITL", s.ITL, 50)
	if err != nil {
		t.Fatal(err)
	}
	checkLegends(t, "cdf", [][]*chart{{cdf, cdf2}}, 11*vg.Inch, 4*vg.Inch)
	var panels []*chart
	// With a time to absorb: a shaded window and the absorption's mark add two legend entries.
	absorb := &metrics.Absorb{WindowS: 1, FirstViolationS: metrics.Some(1.0), AbsorbedS: metrics.Some(2.0),
		Windows: []metrics.AbsorbWindow{{StartS: 0, EndS: 1, State: metrics.WindowMet}, {StartS: 1, EndS: 2, State: metrics.WindowViolated}, {StartS: 2, EndS: 3, State: metrics.WindowMet}}}
	for i, ys := range [][]float64{s.ReqPerSec, s.ErrorsPerSec, s.OutTokPerSec, s.SentPerSec, s.TTFTP95Ms, s.ActiveSessions} {
		p, err := seriesPlot("series", "y", s, ys, absorb, i < 4) // the counts with a rolling mean
		if err != nil {
			t.Fatal(err)
		}
		panels = append(panels, p)
	}
	checkLegends(t, "time series", [][]*chart{{panels[0], panels[1]}, {panels[2], panels[3]}, {panels[4], panels[5]}}, 11*vg.Inch, 10.5*vg.Inch)
	if math.IsNaN(s.TTFTP95Ms[1]) {
		t.Fatal("the series has no TTFT in its second bucket; the chart would be empty")
	}
}
