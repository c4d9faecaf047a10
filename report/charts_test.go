package report

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
)

func TestCurveModel(t *testing.T) {
	_, stages := goldenStages(t)
	m := Curve([]Run{{Name: "golden", Stages: stages}})
	if m.SLOTTFTMs != 250 || m.SLOITLMs != 50 || len(m.Runs) != 1 || len(m.Runs[0].Points) != 2 {
		t.Fatalf("%+v", m)
	}
	p1, p2 := m.Runs[0].Points[0], m.Runs[0].Points[1]
	if !p1.Headline || !p1.Pass || p2.Headline || p2.Pass || p1.OutTokPerSec != 4 {
		t.Fatalf("points %+v %+v", p1, p2)
	}
	if math.Abs(p1.TTFTP95-157) > 1e-9 || math.Abs(p2.TTFTP95-485) > 1e-9 || p1.ITLP95 != 30 {
		t.Fatalf("latencies %+v %+v", p1, p2)
	}
	// Two runs overlay: one curve each, SLO lines from the first.
	_, other := goldenStages(t)
	m2 := Curve([]Run{{Name: "a", Stages: stages}, {Name: "b", Stages: other}})
	if len(m2.Runs) != 2 || m2.Runs[1].Name != "b" {
		t.Fatalf("%+v", m2)
	}
}

func TestChartFiles(t *testing.T) {
	_, stages := goldenStages(t)
	dir := t.TempDir()
	if err := WriteCharts(dir, []Run{{Name: "golden", Stages: stages}}); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "charts", "latency_throughput.svg"))
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the SVG does not parse: %v", err)
		}
	}
	for _, want := range []string{"TTFT vs throughput", "ITL vs throughput", "p95", "p99", "SLO 250 ms", "SLO 50.0 ms", "headline stage", "SLO failed / partial"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	f, err := os.Open(filepath.Join(dir, "charts", "latency_throughput.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() < 500 {
		t.Fatalf("png: %v", err)
	}
}

func TestHTMLIsSelfContained(t *testing.T) {
	_, a := goldenStages(t)
	_, b := goldenStages(t)
	page, err := HTML([]Run{{Name: "before", Stages: a}, {Name: "after", Stages: b}}, "plload test", "## Method\n- a <b> line")
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, want := range []string{"<!doctype html>", "<svg", "before: stage 01:", "after: stage 01:", "<table>", "1 of 2 stages meet the SLO", "a &lt;b&gt; line"} {
		if !strings.Contains(s, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, banned := range []string{"<script", "src=", `href="http`, "@import", "url("} {
		if strings.Contains(s, banned) {
			t.Errorf("report.html must not fetch anything, found %q", banned)
		}
	}
}

func TestStageSeriesAndCharts(t *testing.T) {
	_, stages := goldenStages(t)
	st := stages[0]
	// Two successes started at 1.5 s and 2.5 s after t0 (see goldenStages' rec), one session each.
	recs := []*metrics.Record{rec(1.5, 100, 10, "a"), rec(2.5, 120, 10, "b")}
	s := metrics.Series(recs, st.Summary)
	if len(s.Seconds) < 3 || s.ReqPerSec[1] != 1 || s.ReqPerSec[2] != 1 || s.OutTokPerSec[1] != 10 || s.TTFTP95Ms[1] != 100 ||
		!math.IsNaN(s.TTFTP95Ms[0]) || s.ActiveSessions[1] != 1 || len(s.TTFT) != 2 || len(s.ITL) != 18 {
		t.Fatalf("series %+v", s)
	}
	dir := t.TempDir()
	if err := WriteStageCharts(dir, st, s); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"stage_01_cdf.svg", "stage_01_cdf.png", "stage_01_timeseries.svg", "stage_01_timeseries.png"} {
		data, err := os.ReadFile(filepath.Join(dir, "charts", f))
		if err != nil || len(data) < 1000 {
			t.Fatalf("%s: %v", f, err)
		}
		if strings.HasSuffix(f, ".svg") && !bytes.Contains(data, []byte("stage 01")) {
			t.Fatalf("%s lacks its title", f)
		}
	}
}
