package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plload/plload/mock"
	"github.com/plload/plload/resultfiles"
)

// TestGPUEnergyMatchesTheMocksModel runs a stage against the embedded mock, whose two GPUs draw
// 60 W each at rest and 0.4 J a generated token, with energy at $0.20/kWh: stage.json's energy per
// output token is the model's, idle share included, within 1 %, and so is the energy cost; the
// report shows it.
func TestGPUEnergyMatchesTheMocksModel(t *testing.T) {
	const idle, perToken, gpus, price = 60.0, 0.4, 2, 0.20
	dir := t.TempDir()
	scenario := `name: gpu
seed: 3
target:
  base_url: mock
  mock: {ttft: 20ms, tps: 200, gpus: 2, gpu_idle_watts: 60, gpu_joules_per_token: 0.4}
personas: {count: 2, system_prompt_tokens: 100}
session: {turns: 1, user_input_tokens: 20, max_output_tokens: 100, think_time: 0s}
load:
  mode: concurrency
  stages: [{concurrency: 8, warmup: 2s, duration: 8s}]
slo: {ttft_p95: 1s}
cost: {gpu_hourly_usd: 2, gpu_count: 2, energy_usd_per_kwh: 0.20}
`
	path := filepath.Join(dir, "gpu.yaml")
	os.WriteFile(path, []byte(scenario), 0o644)
	code, out, errOut := plload(t, "run", path, "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	st := readStage(t, dir, "gpu")
	g := st.GPU
	if g == nil || !g.JPerOutToken.OK || len(g.GPUs) != gpus || g.EnergyMethod != "counter" || len(g.Warnings) != 0 {
		t.Fatalf("gpu %+v", g)
	}
	// The model: each token's own energy, plus the idle draw over the window shared by the window's
	// tokens (those that arrived in it, as stage.json counts them: energy_j ÷ j_per_out_token).
	secs, tokens := st.Summary.Window.Seconds, g.EnergyJ.V/g.JPerOutToken.V
	want := perToken + gpus*idle*secs/tokens
	t.Logf("J/out token %.4f, model %.4f; %.0f tokens in the window (throughput's count: %d); power %.1f W; energy %.0f J over %.2f s",
		g.JPerOutToken.V, want, tokens, st.Summary.Throughput.OutputTokens, g.PowerMeanW.V, g.EnergyJ.V, secs)
	if math.Abs(g.JPerOutToken.V/want-1) > 0.01 {
		t.Errorf("J/out token %.4f, the mock's model %.4f: off by %.2f %%", g.JPerOutToken.V, want, 100*(g.JPerOutToken.V/want-1))
	}
	// The window's tokens are the server's: 8 streams of 100 tokens at 200/s, each after a 20 ms TTFT.
	if perStream := tokens / 8 / secs; perStream < 180 || perStream > 200 {
		t.Errorf("%.1f tokens/s a stream in the window", perStream)
	}
	wantUSD := want * 1e6 / 3.6e6 * price
	if !g.EnergyUSDPer1MOut.OK || math.Abs(g.EnergyUSDPer1MOut.V/wantUSD-1) > 0.01 {
		t.Errorf("energy $/1M out %+v, model %.5f", g.EnergyUSDPer1MOut, wantUSD)
	}
	// The two GPUs share the draw evenly.
	if a, b := g.GPUs[0].EnergyJ.V, g.GPUs[1].EnergyJ.V; math.Abs(a/b-1) > 1e-6 {
		t.Errorf("GPU energies %.3f and %.3f", a, b)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "gpu-*"))
	report, _ := os.ReadFile(filepath.Join(runs[0], "report.md"))
	if !strings.Contains(string(report), "GPU telemetry") || !strings.Contains(string(report), "Energy at $0.2/kWh") {
		t.Errorf("report.md has no GPU telemetry:\n%s", report)
	}

	// The stage's files in AIPerf's layouts, alone in a directory, read back as an AIPerf run with its
	// GPU telemetry from gpu_telemetry_export.jsonl (over AIPerf's window: every record).
	aiperf := t.TempDir()
	for _, name := range []string{"profile_export.jsonl", "profile_export_aiperf.json", "gpu_telemetry_export.jsonl"} {
		data, err := os.ReadFile(filepath.Join(runs[0], "stage_01", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(aiperf, name), data, 0o644)
	}
	summary, _ := os.ReadFile(filepath.Join(aiperf, "profile_export_aiperf.json"))
	if !strings.Contains(string(summary), `"telemetry_data"`) || !strings.Contains(string(summary), `"energy_consumption"`) {
		t.Errorf("profile_export_aiperf.json has no telemetry_data")
	}
	page := filepath.Join(dir, "aiperf.html")
	code, out, errOut = plload(t, "report", aiperf, "--html", page)
	html, _ := os.ReadFile(page)
	if code != 0 || !strings.Contains(string(html), "GPU telemetry") || !strings.Contains(string(html), "J/out token") || strings.Contains(out+errOut, "gpu_telemetry_export.jsonl not read") {
		t.Errorf("report of the AIPerf layout: exit %d, no GPU telemetry\n%s\n%s", code, out, errOut)
	}
}

// TestGPUExporterThatMisbehaves: the mock's exporter restarts its energy counter 2.5 s into the
// window, then stops answering for 4 s, then reports NaN power for the rest. The stage's warnings say
// each, and no number is wrong: the energy (by the counter, bridged across the reset by power) still
// matches the mock's own exact energy within 1 %; the mean power leaves the gap and the NaN out.
func TestGPUExporterThatMisbehaves(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.TPS, cfg.GPUs, cfg.GPUIdleWatts, cfg.GPUJoulesPerToken = 20*time.Millisecond, 200, 2, 60, 0.4
	m, err := mock.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	dir := t.TempDir()
	scenario := fmt.Sprintf(`name: gpufaults
target: {base_url: %s, model: m, gpu_metrics_url: %s/dcgm/metrics, server_metrics_url: "off"}
personas: {count: 2, system_prompt_tokens: 100}
session: {turns: 1, user_input_tokens: 20, max_output_tokens: 100, think_time: 0s}
load:
  mode: concurrency
  stages: [{concurrency: 4, warmup: 1s, duration: 12s}]
slo: {ttft_p95: 1s}
cost: {gpu_hourly_usd: 2, gpu_count: 2}
`, m.BaseURL(), strings.TrimSuffix(m.BaseURL(), "/v1"))
	path := filepath.Join(dir, "f.yaml")
	os.WriteFile(path, []byte(scenario), 0o644)
	// The mock's exact energy, read every 20 ms on the clock the records use.
	type reading struct {
		ns int64
		j  float64
	}
	var mu sync.Mutex
	var truth []reading
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				mu.Lock()
				truth = append(truth, reading{time.Now().UnixNano(), m.GPUEnergyJoules()})
				mu.Unlock()
			}
		}
	}()
	for _, step := range []struct {
		at    time.Duration
		fault func()
	}{{3500 * time.Millisecond, m.ResetGPUEnergy}, {5500 * time.Millisecond, func() { m.SetGPUFault(mock.GPUFaultDown) }},
		{9500 * time.Millisecond, func() { m.SetGPUFault(mock.GPUFaultNaN) }}} {
		timer := time.AfterFunc(step.at, step.fault)
		defer timer.Stop()
	}
	code, out, errOut := plload(t, "run", path, "--out", dir, "--quiet")
	close(stop)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	st := readStage(t, dir, "gpufaults")
	g := st.GPU
	warnings := strings.Join(st.Summary.Warnings, "\n")
	for _, want := range []string{"the energy counter went back 1 time(s) in the stage", "no readings for", "the gap is not filled"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("stage warnings lack %q:\n%s", want, warnings)
		}
	}
	at := func(ns int64) float64 { // the mock's energy at ns, between the two readings around it
		mu.Lock()
		defer mu.Unlock()
		for i := 1; i < len(truth); i++ {
			if a, b := truth[i-1], truth[i]; b.ns >= ns {
				return a.j + (b.j-a.j)*float64(ns-a.ns)/float64(b.ns-a.ns)
			}
		}
		t.Fatalf("no reading of the mock's energy at %d", ns)
		return 0
	}
	want := at(st.Summary.Window.EEffNs) - at(st.Summary.Window.WNs)
	t.Logf("energy %.1f J (%s), the mock's %.1f J; mean power %.1f W; warnings:\n%s", g.EnergyJ.V, g.EnergyMethod, want, g.PowerMeanW.V, warnings)
	if !g.EnergyJ.OK || g.EnergyMethod != "counter and power integral" || math.Abs(g.EnergyJ.V/want-1) > 0.01 {
		t.Errorf("energy %+v (%s), the mock's %.1f J", g.EnergyJ, g.EnergyMethod, want)
	}
	if !g.PowerMeanW.OK || g.PowerMeanW.V < 2*60 || g.Samples >= 12 {
		t.Errorf("mean power %+v over %d readings: NaN or the gap taken as readings", g.PowerMeanW, g.Samples)
	}
}

// readStage reads stage_01/stage.json of the one run named name under dir.
func readStage(t *testing.T, dir, name string) *resultfiles.StageReport {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(dir, name+"-*"))
	if len(runs) != 1 {
		t.Fatalf("runs %v", runs)
	}
	data, err := os.ReadFile(filepath.Join(runs[0], "stage_01", "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st resultfiles.StageReport
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// The GPU telemetry flags set their keys (a comma list is a list of exporters), and a bad source is
// refused naming the flag, before anything is sent.
func TestGPUTelemetryFlags(t *testing.T) {
	code, out, errOut := plload(t, "validate", "--base-url", "mock", "--concurrency", "1", "--gpu-metrics-url", "n1:9400,http://n2:9401/metrics",
		"--energy-usd-per-kwh", "0.1")
	if code != 0 || !strings.Contains(out, "gpu_metrics_url:\n    - n1:9400\n    - http://n2:9401/metrics\n") || !strings.Contains(out, "energy_usd_per_kwh: 0.1") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = plload(t, "run", "--base-url", "mock", "--concurrency", "1", "--gpu-metrics-url", "ftp://x", "--out", t.TempDir())
	if code != 2 || !strings.Contains(errOut, `--gpu-metrics-url "ftp://x": target.gpu_metrics_url: found "ftp://x"`) || !strings.Contains(errOut, "nothing was sent") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}
