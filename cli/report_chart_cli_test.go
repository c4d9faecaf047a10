package cli

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// overlayRun runs a two-stage scenario (1 s per stage) on the embedded mock with its TTFT and its SLO's
// TTFT p95 limit, and returns the results directory (name-<timestamp> under a fresh directory).
func overlayRun(t *testing.T, name, ttft, sloTTFT string) string {
	t.Helper()
	text := fmt.Sprintf(`name: %s
seed: 5
target: {base_url: mock, mock: {ttft: %s, tps: 400, jitter: 0.1, seed: 1}, timeout: 10s}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
session: {turns: {min: 2, max: 3}, user_input_tokens: {min: 5, max: 15}, max_output_tokens: 8, think_time: {min: 5ms, max: 20ms}}
load:
  mode: concurrency
  drain_timeout: 10s
  session_pool_factor: 40
  stages:
    - {concurrency: 2, warmup: 200ms, duration: 1s}
    - {concurrency: 4, warmup: 200ms, duration: 1s}
slo: {ttft_p95: %s, itl_p95: 100ms, error_rate_max: 0.01}
cost: {gpu_hourly_usd: 1}
`, name, ttft, sloTTFT)
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if code, stdout, stderr := plload(t, "run", path, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("run %s: exit %d\n%s%s", name, code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, name+"-*"))
	if len(dirs) != 1 {
		t.Fatalf("run %s: results %v", name, dirs)
	}
	for _, st := range []string{"stage_01", "stage_02"} {
		if _, err := os.Stat(filepath.Join(dirs[0], st, "stage.json")); err != nil {
			t.Fatalf("run %s: %v", name, err)
		}
	}
	return dirs[0]
}

// TestReportChartOverlaysRuns: `plload report RUN1 RUN2 --chart FILE` writes one chart of both runs'
// latency–throughput curves with their SLO lines, as SVG or PNG by the file's extension. The two
// runs (two stages each on the embedded mock) differ in their TTFT limit (1000 ms and 300 ms) and
// share the ITL limit (100 ms): the SVG's legend names each run's p95 and p99 curves, each run's own
// TTFT limit with the run's name, and the shared ITL limit once, without a name. The PNG decodes to
// the chart's size. A name that is neither .svg nor .png, or a file whose directory is missing or is
// a file, exits 2 with report --chart and the reason on stderr, and leaves no chart behind.
func TestReportChartOverlaysRuns(t *testing.T) {
	runA := overlayRun(t, "overlay-a", "20ms", "1s")
	runB := overlayRun(t, "overlay-b", "40ms", "300ms")
	nameA, nameB := filepath.Base(runA), filepath.Base(runB)
	dir := t.TempDir()

	svgPath := filepath.Join(dir, "overlay.svg")
	code, stdout, stderr := plload(t, "report", runA, runB, "--chart", svgPath)
	if code != 0 {
		t.Fatalf("report --chart %s: exit %d\n%s%s", svgPath, code, stdout, stderr)
	}
	if !strings.Contains(stdout, "chart written to "+svgPath) || !strings.Contains(stdout, "| run | stage |") {
		t.Errorf("stdout lacks the comparison table or \"chart written to %s\":\n%s", svgPath, stdout)
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(svg) < 10_000 || !bytes.HasPrefix(bytes.TrimSpace(svg), []byte("<?xml")) || !bytes.Contains(svg, []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(svg), []byte("</svg>")) {
		t.Errorf("%s is not a whole SVG of a chart (%d bytes): %.200s…", svgPath, len(svg), svg)
	}
	for _, want := range []string{
		"TTFT vs throughput", "ITL vs throughput", "achieved output tokens/s",
		nameA + " p95", nameA + " p99", nameB + " p95", nameB + " p99", // both runs' curves
		"SLO 1000 ms (" + nameA + ")", "SLO 300 ms (" + nameB + ")", // each run's own TTFT limit, named
		"SLO 100 ms", // the shared ITL limit
	} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the overlay SVG lacks %q", want)
		}
	}
	if n := bytes.Count(svg, []byte("SLO 100 ms")); n != 1 {
		t.Errorf("the shared ITL limit is in the legend %d times, want once", n)
	}
	if bytes.Contains(svg, []byte("SLO 100 ms (")) {
		t.Error("the shared ITL limit is named by a run, as if only one run had it")
	}

	pngPath := filepath.Join(dir, "overlay.png")
	if code, stdout, stderr := plload(t, "report", runA, runB, "--chart", pngPath); code != 0 || !strings.Contains(stdout, "chart written to "+pngPath) {
		t.Fatalf("report --chart %s: exit %d\n%s%s", pngPath, code, stdout, stderr)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", pngPath, err)
	}
	if b := img.Bounds(); fi.Size() < 10_000 || b.Dx() < 500 || b.Dy() < 200 || b.Dx() <= b.Dy() {
		t.Errorf("%s: %d bytes, %dx%d; want a wide two-panel chart", pngPath, fi.Size(), b.Dx(), b.Dy())
	}
	t.Logf("overlay.svg %d bytes, overlay.png %d bytes (%dx%d)", len(svg), fi.Size(), img.Bounds().Dx(), img.Bounds().Dy())

	blocker := filepath.Join(dir, "a-file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"unsupported extension", filepath.Join(dir, "overlay.jpg"), []string{"report --chart: " + filepath.Join(dir, "overlay.jpg") + ": accepted: a file name ending in .svg or .png"}},
		{"no extension", filepath.Join(dir, "overlay"), []string{"accepted: a file name ending in .svg or .png"}},
		{"missing directory", filepath.Join(dir, "no", "such", "overlay.svg"), []string{"report --chart: ", filepath.Join(dir, "no", "such"), "no such file or directory"}},
		{"directory is a file", filepath.Join(blocker, "overlay.png"), []string{"report --chart: ", blocker, "not a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := plload(t, "report", runA, runB, "--chart", tc.path)
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if _, err := os.Stat(tc.path); err == nil {
				t.Errorf("%s was written", tc.path)
			}
			t.Logf("stderr: %s", strings.TrimSpace(stderr))
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 { // overlay.svg, overlay.png, a-file: no temporary file left
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v, want overlay.svg, overlay.png and a-file", dir, names)
	}
}
