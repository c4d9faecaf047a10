package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotter"

	"github.com/plload/plload/metrics"
)

// overlayRuns are two runs of the golden stages (two server configs, say): a with the golden SLO
// (TTFT p95 250 ms, ITL p95 50 ms), b with TTFT p95 300 ms and p99 800 ms and the same ITL limit.
func overlayRuns(t *testing.T) []Run {
	_, a := goldenStages(t)
	_, b := goldenStages(t)
	for _, st := range b {
		st.SLO = metrics.SLOLimits{TTFTP95Ms: 300, ITLP95Ms: 50, ErrorRateUnset: true,
			Latency: []metrics.LatencyLimit{{Metric: metrics.SLOMetricTTFT, Stat: metrics.SLOStatP99, LimitMs: 800}}}
	}
	return []Run{{Name: "a", Stages: a}, {Name: "b", Stages: b}}
}

// TestOverlayDrawsEveryRunsCurveAndSLO: several runs in one chart, each run's p95 and p99 curves in
// its own colour, and every run's SLO lines — a limit all runs share drawn once, one that differs
// drawn per run and named by it, p99 limits as well as p95. Catches the SLO lines of the first run
// only (the second run's limit never shown), a shared limit drawn twice, and a p99 limit left out.
func TestOverlayDrawsEveryRunsCurveAndSLO(t *testing.T) {
	m := Curve(overlayRuns(t))
	want := []CurveLimit{{"ttft", "p95", 250, "a"}, {"itl", "p95", 50, ""}, {"ttft", "p95", 300, "b"}, {"ttft", "p99", 800, "b"}}
	if diff := cmp.Diff(want, m.Limits); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	ttft, err := m.panel("TTFT", "ms", metrics.SLOMetricTTFT, func(p CurvePoint) float64 { return p.TTFTP95 }, func(p CurvePoint) float64 { return p.TTFTP99 })
	if err != nil {
		t.Fatal(err)
	}
	var legends []string
	for _, e := range ttft.entries {
		legends = append(legends, e.name)
	}
	wantLegends := []string{"a p95", "a p99", "SLO failed / partial", "headline stage", "b p95", "b p99", "SLO 250 ms (a)", "SLO 300 ms (b)", "SLO p99 800 ms (b)"}
	if diff := cmp.Diff(wantLegends, legends); diff != "" {
		t.Errorf("TTFT legend (-want +got):\n%s", diff)
	}
	var lines []float64
	for _, mk := range ttft.marks {
		if f, ok := mk.(*plotter.Function); ok {
			lines = append(lines, f.F(0))
			if got, want := f.Color, palette[1]; f.F(0) == 300 && got != want {
				t.Errorf("run b's SLO line is %v, want b's colour %v", got, want)
			}
		}
	}
	if diff := cmp.Diff([]float64{250, 300, 800}, lines); diff != "" {
		t.Errorf("TTFT SLO lines (-want +got):\n%s", diff)
	}
}

// TestWriteOverlay: the overlay chart goes to the file named, SVG or PNG by its extension; any other
// name is refused, saying what is accepted.
func TestWriteOverlay(t *testing.T) {
	runs := overlayRuns(t)
	dir := t.TempDir()
	svgPath := filepath.Join(dir, "overlay.svg")
	if err := WriteOverlay(svgPath, runs); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "a p95", "b p95", "SLO 250 ms (a)", "SLO 300 ms (b)", "SLO 50.0 ms"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the overlay SVG lacks %q", want)
		}
	}
	if err := WriteOverlay(filepath.Join(dir, "overlay.PNG"), runs); err != nil {
		t.Fatal(err)
	}
	if err := WriteOverlay(filepath.Join(dir, "overlay.jpg"), runs); err == nil || !strings.Contains(err.Error(), "accepted: a file name ending in .svg or .png") {
		t.Errorf("a .jpg: %v", err)
	}
}
