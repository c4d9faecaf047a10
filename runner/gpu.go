package runner

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// GPUTelemetry is where the stages read the GPUs' telemetry: target.gpu_metrics_url's exporters or
// nvidia-smi; or, by default (auto), a DCGM exporter on the target's host at its default port 9400
// and the bundled mock's /dcgm/metrics beside the target's API, and a local nvidia-smi where the
// target is on this machine and the program is installed. Guessed sources that do not answer turn
// the telemetry off with a note (docs/measurement.md, GPU telemetry).
func GPUTelemetry(sc *workload.Scenario, baseURL string) engine.GPUTelemetry {
	if baseURL == "" {
		baseURL = workload.Expand(sc.Target.BaseURL, os.Getenv)
	}
	sources := sc.Target.GPUSources()
	switch sources[0] {
	case workload.GPUMetricsOff:
		return engine.GPUTelemetry{}
	case workload.GPUMetricsNvidiaSMI:
		return engine.GPUTelemetry{NvidiaSMI: true}
	case workload.GPUMetricsAuto:
		return autoGPUTelemetry(sc, baseURL)
	}
	var g engine.GPUTelemetry
	for _, u := range sources {
		g.URLs = append(g.URLs, workload.Expand(u, os.Getenv))
	}
	return g
}

// autoGPUTelemetry is the sources auto tries for a target at baseURL. The bundled mock started for
// the run has its own exporter, and only that is read: a real exporter on this machine would add
// real GPUs to the mock's.
func autoGPUTelemetry(sc *workload.Scenario, baseURL string) engine.GPUTelemetry {
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" {
		return engine.GPUTelemetry{}
	}
	mockExporter := workload.ServerRoot(baseURL) + "/dcgm/metrics"
	if sc.UsesMock() {
		return engine.GPUTelemetry{URLs: []string{mockExporter}, Auto: true}
	}
	exporter := url.URL{Scheme: "http", Host: joinHostPort(u.Hostname(), "9400"), Path: "/metrics"}
	g := engine.GPUTelemetry{URLs: []string{exporter.String(), mockExporter}, Auto: true}
	if mock.IsLoopback(u.Host) {
		if _, err := exec.LookPath("nvidia-smi"); err == nil {
			g.NvidiaSMI = true
		}
	}
	return g
}

func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// gpuSummary reduces a stage's gpu_metrics.jsonl to its window; nil when telemetry was off by the
// scenario. Its warnings become the stage's.
func gpuSummary(sc *workload.Scenario, r engine.StageResult, sum *metrics.StageSummary) *metrics.GPUSummary {
	samples, err := metrics.ReadJSONLines[metrics.GPUSample](filepath.Join(r.Dir, "gpu_metrics.jsonl"))
	if err != nil && r.GPUNote == "" && len(r.GPUWarnings) == 0 {
		return nil
	}
	work, workErr := metrics.ReadWindowWork(filepath.Join(r.Dir, "profile_export.jsonl"), sum.Window.WNs, sum.Window.EEffNs)
	out := metrics.SummarizeGPU(samples, metrics.GPUWindow{WNs: sum.Window.WNs, EEffNs: sum.Window.EEffNs, Work: work,
		GPUCount: sc.Cost.GPUCount, EnergyUSDPerKWh: sc.Cost.EnergyUSDPerKWh})
	if workErr != nil && len(samples) > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("GPU telemetry: the records could not be read for the window's tokens (%v), so no energy per token", workErr))
	}
	if r.GPUNote != "" {
		out.Note = r.GPUNote
	}
	out.Warnings = append(r.GPUWarnings, out.Warnings...)
	if r.GPUNote != "" && len(samples) == 0 {
		out.Warnings = nil // off where nothing answered: a note, and no GPU count to compare
	}
	sum.Warnings = append(sum.Warnings, out.Warnings...)
	return &out
}
