package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// gpuStage runs one 2.5 s stage against base with the given GPU telemetry; it returns the result and
// the samples written.
func gpuStage(t *testing.T, base string, gpu GPUTelemetry) (StageResult, []metrics.GPUSample) {
	t.Helper()
	text := scenarioYAML(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 2500ms}")
	sc, issues := workload.Parse("t.yaml", []byte(text), workload.LoadOptions{Getenv: testEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, _ := sc.Build()
	dir := t.TempDir()
	res, err := Run(context.Background(), Config{Scenario: sc, Workload: w, Dir: dir, Getenv: testEnv, GPU: gpu})
	if err != nil {
		t.Fatal(err)
	}
	samples, _ := metrics.ReadJSONLines[metrics.GPUSample](filepath.Join(dir, "stage_01", "gpu_metrics.jsonl"))
	return res[0], samples
}

func TestGPUTelemetryFromTheMocksExporter(t *testing.T) {
	base, _ := startMock(t, func(c *mock.Config) { c.GPUs = 2 })
	root := strings.TrimSuffix(base, "/v1")
	// An exporter behind basic auth: its password is never written where the source is named.
	withPassword := strings.Replace(root, "http://", "http://plload:s3cret-pass@", 1) + "/dcgm/metrics"
	r, samples := gpuStage(t, base, GPUTelemetry{URLs: []string{withPassword}})
	if r.GPUNote != "" || len(r.GPUWarnings) != 0 {
		t.Fatalf("note %q, warnings %q", r.GPUNote, r.GPUWarnings)
	}
	shown := strings.Replace(root, "http://", "http://plload:***@", 1) + "/dcgm/metrics"
	if len(samples) < 2 || len(samples[0].GPUs) != 2 || samples[0].GPUs[0].EnergyMJ == nil || samples[0].Source != shown {
		t.Fatalf("%d samples: %+v", len(samples), samples)
	}
	for i := 1; i < len(samples); i++ {
		if samples[i].TNs <= samples[i-1].TNs || *samples[i].GPUs[0].EnergyMJ < *samples[i-1].GPUs[0].EnergyMJ {
			t.Fatalf("sample %d goes back: %+v after %+v", i, samples[i], samples[i-1])
		}
	}
}

func TestGPUTelemetrySourcesThatDoNotAnswer(t *testing.T) {
	base, _ := startMock(t, nil)
	root := strings.TrimSuffix(base, "/v1")
	dead := "http://127.0.0.1:1/metrics"
	// An exporter whose answer never ends: refused past its bound (1 MiB for the test, read well
	// within a scrape's timeout even under -race), not held in memory.
	defer func(old int64) { maxMetricsBytes = old }(maxMetricsBytes)
	maxMetricsBytes = 1 << 20
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := []byte("# a comment line, again and again, as an exporter stuck in a loop might send\n")
		for r.Context().Err() == nil {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	for _, tc := range []struct {
		name     string
		gpu      GPUTelemetry
		note     string // want in GPUNote ("" for none)
		warnings string // want in GPUWarnings ("" for none)
	}{
		// Named: a warning that says what answered how.
		{"a dead exporter", GPUTelemetry{URLs: []string{dead}}, "", dead + " did not answer"},
		{"a model server's metrics", GPUTelemetry{URLs: []string{root + "/metrics"}}, "", "no DCGM fields"},
		{"a 404", GPUTelemetry{URLs: []string{root + "/nope"}}, "", "answered HTTP 404"},
		{"a dead exporter behind a password", GPUTelemetry{URLs: []string{"http://u:s3cret-pass@127.0.0.1:1/metrics"}}, "", "http://u:***@127.0.0.1:1/metrics did not answer"},
		{"an endless answer", GPUTelemetry{URLs: []string{endless.URL}}, "", "the answer is larger than 1 MiB"},
		// Guessed: nothing answering is a note; one guess answering is enough, and says nothing of the other.
		{"auto, nothing answers", GPUTelemetry{URLs: []string{dead}, Auto: true}, "GPU telemetry off: " + dead + " did not answer", ""},
		{"auto, one answers", GPUTelemetry{URLs: []string{dead, root + "/dcgm/metrics"}, Auto: true}, "", ""},
	} {
		r, samples := gpuStage(t, base, tc.gpu)
		warnings := strings.Join(r.GPUWarnings, "\n")
		if !strings.Contains(r.GPUNote, tc.note) || (tc.note == "") != (r.GPUNote == "") ||
			!strings.Contains(warnings, tc.warnings) || (tc.warnings == "") != (warnings == "") {
			t.Errorf("%s: note %q, warnings %q", tc.name, r.GPUNote, warnings)
		}
		if answers := tc.note == "" && tc.warnings == ""; answers != (len(samples) > 0) {
			t.Errorf("%s: %d samples", tc.name, len(samples))
		}
	}
}

// fakeNvidiaSMI points the nvidia-smi source at a shell script for the test.
func fakeNvidiaSMI(t *testing.T, script string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nvidia-smi")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	old := nvidiaSMIPath
	nvidiaSMIPath = path
	t.Cleanup(func() { nvidiaSMIPath = old })
}

func TestGPUTelemetryFromNvidiaSMI(t *testing.T) {
	base, _ := startMock(t, nil)
	// Two GPUs a reading, every 200 ms, with the arguments plload passes checked by the script.
	fakeNvidiaSMI(t, `case "$*" in *--query-gpu=timestamp,index,uuid,*"--format=csv,noheader,nounits -lms 1000"*) ;; *) echo "bad args: $*" >&2; exit 2;; esac
i=0
while [ $i -lt 100 ]; do
  echo "2026/12/07 10:00:0$((i % 10)).000, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 312.5, 87, 61000, 20000, 81559, 61, 1980"
  echo "2026/12/07 10:00:0$((i % 10)).000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, [N/A], 85, 60000, 21000, 81559, 59, 1980"
  i=$((i+1)); sleep 0.2
done
`)
	r, samples := gpuStage(t, base, GPUTelemetry{NvidiaSMI: true})
	if r.GPUNote != "" || len(r.GPUWarnings) != 0 {
		t.Fatalf("note %q, warnings %q", r.GPUNote, r.GPUWarnings)
	}
	if len(samples) < 5 || samples[0].Source != "nvidia-smi" || len(samples[0].GPUs) != 2 {
		t.Fatalf("%d samples: %+v", len(samples), samples)
	}
	g0, g1 := samples[1].GPUs[0], samples[1].GPUs[1]
	if g0.PowerW == nil || *g0.PowerW != 312.5 || g1.PowerW != nil || g1.UUID != "GPU-bbbb" || *g1.UtilPct != 85 {
		t.Fatalf("readings %+v %+v", g0, g1)
	}
}

func TestGPUTelemetryNvidiaSMIThatFails(t *testing.T) {
	base, _ := startMock(t, nil)
	fakeNvidiaSMI(t, `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9`+"\n")
	r, _ := gpuStage(t, base, GPUTelemetry{NvidiaSMI: true})
	if w := strings.Join(r.GPUWarnings, "\n"); !strings.Contains(w, "nvidia-smi gave no reading") || !strings.Contains(w, "couldn't communicate with the NVIDIA driver") {
		t.Fatalf("warnings %q", r.GPUWarnings)
	}
	// Auto runs no nvidia-smi where an exporter answered: the same GPUs would be counted twice.
	root := strings.TrimSuffix(base, "/v1")
	r, samples := gpuStage(t, base, GPUTelemetry{URLs: []string{root + "/dcgm/metrics"}, NvidiaSMI: true, Auto: true})
	for _, s := range samples {
		if s.Source == "nvidia-smi" {
			t.Fatalf("nvidia-smi ran beside an exporter: %+v", s)
		}
	}
	if r.GPUNote != "" || len(r.GPUWarnings) != 0 || len(samples) == 0 {
		t.Fatalf("note %q, warnings %q, %d samples", r.GPUNote, r.GPUWarnings, len(samples))
	}
	nvidiaSMIPath = filepath.Join(t.TempDir(), "absent")
	if r, _ := gpuStage(t, base, GPUTelemetry{NvidiaSMI: true, Auto: true}); !strings.Contains(r.GPUNote, "nvidia-smi did not start") {
		t.Fatalf("note %q", r.GPUNote)
	}
}
