package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotter"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// writeJSONLines writes one JSON object a line, as the engine writes the readings.
func writeJSONLines[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	var b bytes.Buffer
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	b.WriteString(`{"t_ns": 18`) // a killed run's torn last line, skipped
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// at is t0 + s seconds, in epoch ns.
func at(s float64) int64 { return t0 + int64(s*float64(time.Second)) }

// telemetryStage is the golden stage 01 (window t0 + 1 s to t0 + 11 s) with its records' series, and
// its directory holding the server's and the GPUs' readings, every second from t0 − 1 s to
// t0 + 14 s but for none from 5 s to 9 s (the exporters did not answer): the server runs 3 requests
// with 1 waiting, its KV cache half full, 2 preemptions a second, 100 draft tokens a second of which
// 70 are accepted; two GPUs draw 300 W and 200 W, 80 % and 60 % busy. readings false leaves the
// directory without them.
func telemetryStage(t *testing.T, readings bool) (string, *resultfiles.StageReport, metrics.StageSeries) {
	t.Helper()
	_, stages := goldenStages(t)
	st := stages[0]
	s := metrics.Series([]*metrics.Record{rec(1.5, 100, 10, "a"), rec(2.5, 120, 10, "b")}, st.Summary)
	dir := t.TempDir()
	stageDir := filepath.Join(dir, "stage_01")
	if err := os.MkdirAll(stageDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if !readings {
		return dir, st, s
	}
	f := func(v float64) *float64 { return &v }
	var server []metrics.ServerSample
	var gpu []metrics.GPUSample
	for k := -1; k <= 14; k++ {
		if k > 5 && k < 9 {
			continue
		}
		sec := float64(k)
		server = append(server, metrics.ServerSample{TNs: at(sec), Engine: "vllm", Running: f(3), Waiting: f(1), KVUsage: f(0.5),
			Preemptions: f(2 * sec), SpecDrafted: f(100 * sec), SpecAccepted: f(70 * sec)})
		gpu = append(gpu, metrics.GPUSample{TNs: at(sec), Source: "http://node-a:9400/metrics", GPUs: []metrics.GPUReading{
			{GPU: "0", Host: "node-a", PowerW: f(300), UtilPct: f(80)}, {GPU: "1", Host: "node-a", PowerW: f(200), UtilPct: f(60)}}})
	}
	writeJSONLines(t, filepath.Join(stageDir, "server_metrics.jsonl"), server)
	writeJSONLines(t, filepath.Join(stageDir, "gpu_metrics.jsonl"), gpu)
	return dir, st, s
}

// line is a segment of points at xs, all at y.
func line(y float64, xs ...float64) plotter.XYs {
	out := make(plotter.XYs, len(xs))
	for i, x := range xs {
		out[i] = plotter.XY{X: x, Y: y}
	}
	return out
}

// TestTimelinePanels: the readings become panels on the time series' seconds — the reading at
// t0 + k s at x = k, those before t0 and after the chart's end (its 12 one-second buckets) left
// out — and the 4 s without readings is a gap: each line is two segments, 0–5 s and 9–12 s, and
// the rates, placed at the middle of each interval between readings, have none across it.
func TestTimelinePanels(t *testing.T) {
	dir, _, s := telemetryStage(t, true)
	tl, err := ReadTimeline(filepath.Join(dir, "stage_01"), s)
	if err != nil {
		t.Fatal(err)
	}
	before, after := []float64{0, 1, 2, 3, 4, 5}, []float64{9, 10, 11, 12}
	mids, midsAfter := []float64{0.5, 1.5, 2.5, 3.5, 4.5}, []float64{9.5, 10.5, 11.5}
	want := []TimelinePanel{
		{Title: "server: requests running and waiting", YLabel: "requests", Series: []TimelineSeries{
			{"running", []plotter.XYs{line(3, before...), line(3, after...)}}, {"waiting", []plotter.XYs{line(1, before...), line(1, after...)}}}},
		{Title: "server: KV-cache use", YLabel: "% of KV cache", Percent: true, Series: []TimelineSeries{
			{"KV cache", []plotter.XYs{line(50, before...), line(50, after...)}}}},
		{Title: "GPU power (summed over GPUs)", YLabel: "W", Series: []TimelineSeries{
			{"2 GPUs", []plotter.XYs{line(500, before...), line(500, after...)}}}},
		{Title: "GPU utilisation (mean over GPUs)", YLabel: "%", Percent: true, Series: []TimelineSeries{
			{"2 GPUs", []plotter.XYs{line(70, before...), line(70, after...)}}}},
		{Title: "server: preemptions/s", YLabel: "preemptions/s", Series: []TimelineSeries{
			{"preemptions/s", []plotter.XYs{line(2, mids...), line(2, midsAfter...)}}}},
		{Title: "speculative decoding: acceptance rate", YLabel: "% of draft tokens accepted", Percent: true, Series: []TimelineSeries{
			{"accepted ÷ drafted", []plotter.XYs{line(70, mids...), line(70, midsAfter...)}}}},
	}
	if d := cmp.Diff(want, tl.Panels); d != "" {
		t.Errorf("timeline (-want +got):\n%s", d)
	}
	for _, p := range tl.Panels {
		if !p.Gapped() {
			t.Errorf("%s: the gap in the readings does not break it", p.Title)
		}
	}
}

// TestTimelineCounters: preemptions and speculative decoding are panels only where the server has
// the counters; an interval over which a counter went back (a restart) or nothing was drafted has no
// value, and breaks the line rather than joining its neighbours.
func TestTimelineCounters(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	_, stages := goldenStages(t)
	s := metrics.Series(nil, stages[0].Summary)
	plain := []metrics.ServerSample{{TNs: at(1), Running: f(1)}, {TNs: at(2), Running: f(2)}}
	tl := NewTimeline(plain, nil, s)
	if len(tl.Panels) != 1 || tl.Panels[0].Title != "server: requests running and waiting" {
		t.Fatalf("a server without the counters, and no GPU readings: %+v", tl.Panels)
	}
	counted := []metrics.ServerSample{
		{TNs: at(1), Preemptions: f(10), SpecDrafted: f(100), SpecAccepted: f(50)},
		{TNs: at(2), Preemptions: f(13), SpecDrafted: f(200), SpecAccepted: f(130)},
		{TNs: at(3), Preemptions: f(0), SpecDrafted: f(200), SpecAccepted: f(130)}, // restarted; nothing drafted
		{TNs: at(4), Preemptions: f(1), SpecDrafted: f(300), SpecAccepted: f(190)},
	}
	tl = NewTimeline(counted, nil, s)
	want := []TimelinePanel{
		{Title: "server: preemptions/s", YLabel: "preemptions/s", Series: []TimelineSeries{
			{"preemptions/s", []plotter.XYs{line(3, 1.5), line(1, 3.5)}}}},
		{Title: "speculative decoding: acceptance rate", YLabel: "% of draft tokens accepted", Percent: true, Series: []TimelineSeries{
			{"accepted ÷ drafted", []plotter.XYs{line(80, 1.5), line(60, 3.5)}}}},
	}
	if d := cmp.Diff(want, tl.Panels); d != "" {
		t.Errorf("timeline (-want +got):\n%s", d)
	}
	// llama.cpp without a draft model exports its speculative counters at 0: no acceptance panel.
	idle := []metrics.ServerSample{{TNs: at(1), SpecDrafted: f(0), SpecAccepted: f(0)}, {TNs: at(2), SpecDrafted: f(0), SpecAccepted: f(0)}}
	if tl := NewTimeline(idle, nil, s); len(tl.Panels) != 0 {
		t.Errorf("counters that never moved drew %+v", tl.Panels)
	}
	// SGLang has a gauge of the batch's acceptance instead of counters: drawn as read, in percent,
	// and not at all while it stays 0 (no speculative decoding).
	sglang := []metrics.ServerSample{{TNs: at(1), SpecAcceptRate: f(0.5)}, {TNs: at(2), SpecAcceptRate: f(0.75)}}
	tl = NewTimeline(sglang, nil, s)
	if len(tl.Panels) != 1 || tl.Panels[0].Series[0].Name != "server's gauge" || len(tl.Panels[0].Series[0].Segments) != 1 ||
		tl.Panels[0].Series[0].Segments[0][1].Y != 75 {
		t.Errorf("SGLang's acceptance gauge drew %+v", tl.Panels)
	}
	zero := []metrics.ServerSample{{TNs: at(1), SpecAcceptRate: f(0)}, {TNs: at(2), SpecAcceptRate: f(0)}}
	if tl := NewTimeline(zero, nil, s); len(tl.Panels) != 0 {
		t.Errorf("a gauge at 0 throughout drew %+v", tl.Panels)
	}
}

// TestTimelineGPUSources: each source is its own series, named by its source where there are
// several; a reading that lacks one GPU's power is left out of the sum rather than counted short.
func TestTimelineGPUSources(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	_, stages := goldenStages(t)
	s := metrics.Series(nil, stages[0].Summary)
	gpu := []metrics.GPUSample{
		{TNs: at(1), Source: "http://a:9400/metrics", GPUs: []metrics.GPUReading{{GPU: "0", PowerW: f(100)}, {GPU: "1", PowerW: f(150)}}},
		{TNs: at(1), Source: "http://b:9400/metrics", GPUs: []metrics.GPUReading{{GPU: "0", PowerW: f(400), UtilPct: f(90)}}},
		{TNs: at(2), Source: "http://a:9400/metrics", GPUs: []metrics.GPUReading{{GPU: "0", PowerW: f(120)}, {GPU: "1"}}},
		{TNs: at(3), Source: "http://a:9400/metrics", GPUs: []metrics.GPUReading{{GPU: "0", PowerW: f(110)}, {GPU: "1", PowerW: f(140)}}},
	}
	tl := NewTimeline(nil, gpu, s)
	want := []TimelinePanel{
		{Title: "GPU power (summed over GPUs)", YLabel: "W", Series: []TimelineSeries{
			{"http://a:9400/metrics (2 GPUs)", []plotter.XYs{{{X: 1, Y: 250}, {X: 3, Y: 250}}}},
			{"http://b:9400/metrics (1 GPU)", []plotter.XYs{line(400, 1)}}}},
		{Title: "GPU utilisation (mean over GPUs)", YLabel: "%", Percent: true, Series: []TimelineSeries{
			{"http://b:9400/metrics (1 GPU)", []plotter.XYs{line(90, 1)}}}},
	}
	if d := cmp.Diff(want, tl.Panels); d != "" {
		t.Errorf("timeline (-want +got):\n%s", d)
	}
}

// TestStageChartsWithTelemetry: the time series chart gets the telemetry panels, titled, with the
// legend saying where a gap broke a line; a stage directory without the readings gets none of them
// and its charts are written all the same.
func TestStageChartsWithTelemetry(t *testing.T) {
	for _, readings := range []bool{true, false} {
		dir, st, s := telemetryStage(t, readings)
		if err := WriteStageCharts(dir, st, s); err != nil {
			t.Fatal(err)
		}
		svg, err := os.ReadFile(filepath.Join(dir, "charts", "stage_01_timeseries.svg"))
		if err != nil {
			t.Fatal(err)
		}
		if png, err := os.Stat(filepath.Join(dir, "charts", "stage_01_timeseries.png")); err != nil || png.Size() < 1000 {
			t.Fatalf("png: %v", err)
		}
		for _, title := range []string{"stage 01: server: requests running and waiting", "stage 01: server: KV-cache use",
			"stage 01: GPU power (summed over GPUs)", "stage 01: GPU utilisation (mean over GPUs)", "stage 01: server: preemptions/s",
			"stage 01: speculative decoding: acceptance rate", "line broken: no reading for over 3 s"} {
			if got := bytes.Contains(svg, []byte(title)); got != readings {
				t.Errorf("readings %v: the time series has %q: %v", readings, title, got)
			}
		}
		if !bytes.Contains(svg, []byte("stage 01: TTFT p95 of requests started each second")) {
			t.Errorf("readings %v: the TTFT panel is gone", readings)
		}
	}
}
