package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// gpuSummary is stage.json's gpu block of a node's two GPUs over the golden stage 01's window
// (10 s, 40 output tokens, 4 requests): GPU 0 at 300 W, 80 % busy, 40 GiB; GPU 1 at 200 W, 60 %,
// 20 GiB; power only, as nvidia-smi gives it, so the energy is the power integral, 500 W × 10 s =
// 5 kJ: 125 J an output token, 1.25 MJ per 1K turns; at price $/kWh, 5 kJ ÷ 3.6 MJ/kWh × price,
// and the same per 1M output tokens and per 1K turns (nil price: not priced).
func gpuSummary(price *float64) *metrics.GPUSummary {
	some := metrics.Some[float64]
	gpu := func(idx string, watts, util, memMiB, temp float64) metrics.GPUStats {
		return metrics.GPUStats{GPU: idx, Host: "node-a", Model: "NVIDIA H100 80GB HBM3", Source: "nvidia-smi", Samples: 11,
			GPUFigures: metrics.GPUFigures{EnergyJ: some(watts * 10), EnergyMethod: "power integral", PowerMeanW: some(watts), PowerMaxW: some(watts),
				UtilMeanPct: some(util)}, MemUsedMean: some(memMiB), MemUsedMax: some(memMiB), TempMaxC: some(temp)}
	}
	g := &metrics.GPUSummary{Sources: []string{"nvidia-smi"}, Samples: 11,
		GPUs: []metrics.GPUStats{gpu("0", 300, 80, 40960, 70), gpu("1", 200, 60, 20480, 65)},
		GPUFigures: metrics.GPUFigures{EnergyJ: some(5000), EnergyMethod: "power integral", PowerMeanW: some(500), PowerMaxW: some(500),
			UtilMeanPct: some(70)}, MemUsedMaxMiB: some(61440), JPerOutToken: some(125), JPerInToken: some(6.25), JPer1KTurns: some(1.25e6)}
	if price != nil {
		const joulesPerKWh = 3.6e6
		g.EnergyUSD = some(5000 / joulesPerKWh * *price)
		g.EnergyUSDPer1MOut, g.EnergyUSDPer1KTurns = some(125e6/joulesPerKWh**price), some(1.25e6/joulesPerKWh**price)
	}
	return g
}

// gpuStages are the golden stages with GPU telemetry: stage 01 read its GPUs (gpuSummary), stage 02
// nothing (its gpu block has only the note). price is cost.energy_usd_per_kwh (nil: not priced).
func gpuStages(t *testing.T, price *float64) (*workload.Scenario, *resultfiles.Report) {
	t.Helper()
	sc, stages := goldenStages(t)
	sc.Cost.EnergyUSDPerKWh = price
	for _, st := range stages {
		st.Cost.EnergyUSDPerKWh = price
	}
	if tp := stages[0].Summary.Throughput; tp.OutputTokens != 40 || tp.Requests != 4 {
		t.Fatalf("fixture: the golden stage 01 has %d output tokens and %d requests in its window, not 40 and 4", tp.OutputTokens, tp.Requests)
	}
	stages[0].GPU = gpuSummary(price)
	stages[1].GPU = &metrics.GPUSummary{Sources: []string{}, GPUs: []metrics.GPUStats{}, Note: "no GPU telemetry was read in this stage"}
	return sc, resultfiles.New(sc, stages, resultfiles.Meta{Tool: "plload test", Command: "plload run golden.yaml"})
}

// TestGPUTelemetrySection: a run whose stages have GPU telemetry gets a "GPU telemetry" section in
// report.md and report.html — a row per stage (energy and how it was found, power, utilisation,
// memory, J per output token and per 1K turns), the energy cost beside the hourly cost, a row per
// GPU — and a stage whose telemetry read nothing shows its note once, with no row; the headline
// gets the energy line and the cost table the energy $/1M out; stage.json with gpu matches its
// schema.
func TestGPUTelemetrySection(t *testing.T) {
	sc, r := gpuStages(t, new(0.15))
	md := Markdown(r, sc)
	gpu := md[strings.Index(md, "## GPU telemetry"):]
	gpu = gpu[:strings.Index(gpu, "\n## ")+1]
	// 5 kJ over 40 output tokens and 4 requests: 125 J a token, 1.25 MJ per 1K turns; at $0.15/kWh
	// $0.000208, $5.2083 per 1M out (125 J × 10⁶ ÷ 3.6 MJ × 0.15), $0.0521 per
	// 1K turns, beside $138.889/1M out and $1.3889/1K turns by the hour ($2/h over 40 tokens and 4
	// requests in 10 s).
	for _, want := range []string{
		"| stage | energy kJ (how) | power W mean / max | GPU util % | SM active % | peak memory GiB | J/out token | J/1K turns |",
		"| 01 | 5.00 (power integral) | 500 / 500 | 70.0 | N/A | 60.0 | 125 | 1,250,000 |",
		"| stage | energy $ | energy $/1M out | hourly $/1M out | energy $/1K turns | hourly $/1K turns |",
		"| 01 | $0.000208 | $5.2083 | $138.889 | $0.0521 | $1.3889 |",
		"| stage | GPU | host | model | power W mean / max | energy kJ | util % | memory GiB max | temp max °C |",
		"| 01 | 0 | node-a | NVIDIA H100 80GB HBM3 | 300 / 300 | 3.00 | 80.0 | 40.0 | 70 |",
		"| 01 | 1 | node-a | NVIDIA H100 80GB HBM3 | 200 / 200 | 2.00 | 60.0 | 20.0 | 65 |",
		"- stage 02: no GPU telemetry was read in this stage.\n",
		"Read from `nvidia-smi`.",
	} {
		if !strings.Contains(gpu, want) {
			t.Errorf("the GPU telemetry section lacks %q:\n%s", want, gpu)
		}
	}
	if n := strings.Count(gpu, "| 02 |"); n != 0 || strings.Count(gpu, "stage 02") != 1 {
		t.Errorf("stage 02 read nothing: its note once and no row, got %d rows:\n%s", n, gpu)
	}
	for _, want := range []string{
		"**Energy**: stage 01, from GPU telemetry: 5.0 kJ by power integral, 125 J/out token, 1,250,000 J/1K turns; at $0.15/kWh $5.2083/1M out in energy, beside $138.889/1M out by the hour\n",
		"| SLO | out tok/s | $/1M out | energy $/1M out | $/1K turns | $/session |",
		"| 01 | c=2 | PASS | 4.0 | $138.889 | $5.2083 |", "| 02 | c=4 | FAIL | 4.0 | $138.889 | N/A (no readings) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	page, err := HTML([]Run{{Name: "golden", Stages: r.Stages}}, "plload test", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>GPU telemetry</h2>", "<td>5.00 (power integral)</td>", "Energy: stage 01, from GPU telemetry", "<th>energy $/1M out</th>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	_, stageSchema := schemas(t)
	for _, st := range r.Stages {
		data, _ := json.Marshal(st)
		if err := validate(t, stageSchema, "stage.json with gpu", data); err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
	}
}

// TestGPUTelemetryUnpriced: without an energy price the section shows the energy and J per token,
// but no cost table, and the cost table no energy column; the headline's energy line has no cost.
func TestGPUTelemetryUnpriced(t *testing.T) {
	sc, r := gpuStages(t, nil)
	md := Markdown(r, sc)
	if !strings.Contains(md, "| 01 | 5.00 (power integral) | 500 / 500 |") {
		t.Errorf("no stage row:\n%s", md)
	}
	for _, banned := range []string{"energy $/1M out", "hourly $/1M out", "/kWh"} {
		if strings.Contains(md, banned) {
			t.Errorf("report.md without an energy price shows %q:\n%s", banned, md)
		}
	}
	if !strings.Contains(md, "**Energy**: stage 01, from GPU telemetry: 5.0 kJ by power integral, 125 J/out token, 1,250,000 J/1K turns\n") {
		t.Errorf("the headline's energy line:\n%s", md)
	}
}

// TestGPUTelemetryOnlyNotes: where no stage read anything, the section is the notes alone — no
// table with empty rows — and the cost table and headline stay as they are without telemetry.
func TestGPUTelemetryOnlyNotes(t *testing.T) {
	sc, r := gpuStages(t, new(0.15))
	for _, st := range r.Stages {
		st.GPU = &metrics.GPUSummary{Sources: []string{}, GPUs: []metrics.GPUStats{}, Note: "no DCGM exporter answered at http://node-a:9400/metrics; telemetry is off"}
	}
	md := Markdown(r, sc)
	gpu := md[strings.Index(md, "## GPU telemetry"):]
	gpu = gpu[:strings.Index(gpu, "\n## ")+1]
	want := "## GPU telemetry\n\n- stage 01: no DCGM exporter answered at http://node-a:9400/metrics; telemetry is off.\n- stage 02: no DCGM exporter answered at http://node-a:9400/metrics; telemetry is off.\n\n"
	if gpu != want {
		t.Errorf("the section:\n%q\nwant\n%q", gpu, want)
	}
	if strings.Contains(md, "energy $/1M out") || strings.Contains(md, "**Energy**") {
		t.Errorf("no stage has energy, yet:\n%s", md)
	}
}

// TestNoGPUTelemetryNoSection: a run without telemetry has neither the section, nor the energy
// column, nor the energy line (the golden report.md test holds the rest unchanged).
func TestNoGPUTelemetryNoSection(t *testing.T) {
	sc, r := goldenReport(t)
	md := Markdown(r, sc)
	for _, banned := range []string{"GPU telemetry", "energy $", "**Energy**"} {
		if strings.Contains(md, banned) {
			t.Errorf("report.md without telemetry shows %q", banned)
		}
	}
}

// TestKneeGPUText: the search's knee in one sentence — utilisation, power over how many GPUs, J per
// output token, the energy's cost — its parts left out where unknown, and nothing without readings.
func TestKneeGPUText(t *testing.T) {
	_, r := gpuStages(t, new(0.15))
	g := r.Stages[0].GPU
	if got, want := KneeGPUText(g, "12 req/s", 5), "at the knee (12 req/s, stage 05): GPU util 70.0 %, power 500 W mean (2 GPUs), 125 J/out token, $5.2083/1M out in energy"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	big := *g
	big.PowerMeanW, big.UtilMeanPct, big.JPerOutToken, big.EnergyUSDPer1MOut = metrics.Some(1412.4), metrics.Opt[float64]{}, metrics.Some(0.4123), metrics.Opt[float64]{}
	if got, want := KneeGPUText(&big, "8 sessions", 3), "at the knee (8 sessions, stage 03): power 1,412 W mean (2 GPUs), 0.412 J/out token"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := KneeGPUText(r.Stages[1].GPU, "16 req/s", 6); got != "" {
		t.Errorf("a stage without readings: %q", got)
	}
	if got := KneeGPUText(nil, "16 req/s", 6); got != "" {
		t.Errorf("a stage without telemetry: %q", got)
	}
}

// TestNumberFormats: joules to three significant digits, whole and grouped from 100 and 1,000;
// watts with thousands grouped; an energy cost below a cent to three significant digits.
func TestNumberFormats(t *testing.T) {
	for in, want := range map[float64]string{0.41234: "0.412", 4.1234: "4.12", 41.234: "41.2", 412.34: "412", 0: "0", 0.0012345: "0.00123", 83574.4: "83,574"} {
		if got := sigText(metrics.Some(in)); got != want {
			t.Errorf("sigText(%g) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{0.0000417: "$0.0000417", 0.0123456: "$0.0123", 5.20833: "$5.2083"} {
		if got := energyMoney(metrics.Some(in)); got != want {
			t.Errorf("energyMoney(%g) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{0: "0", 999.6: "1,000", 1412: "1,412", 1234567: "1,234,567", -2500: "-2,500"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%g) = %q, want %q", in, got, want)
		}
	}
}

// TestSearchReportKnee: the capacity search's report says what the GPUs did at the knee, the stage
// of the capacity, in report.md and report.html; quietly nothing where that stage has no readings.
func TestSearchReportKnee(t *testing.T) {
	_, r := gpuStages(t, new(0.15))
	probes := []resultfiles.SearchProbe{{Value: 2, Verdict: "pass", Stage: 1}, {Value: 4, Verdict: "fail", Stage: 2}}
	const knee = "At the knee (2 sessions, stage 01): GPU util 70.0 %, power 500 W mean (2 GPUs), 125 J/out token, $5.2083/1M out in energy."
	for _, tc := range []struct {
		chosen int
		want   bool
	}{{1, true}, {2, false}, {0, false}} {
		dir := t.TempDir()
		for name, text := range map[string]string{"report.md": "# plload report: golden\n\nheadline\n\n", "report.html": "<h1>plload report: golden</h1>\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		curve := NewSearchCurve(r.Stages, probes, tc.chosen, "sessions")
		if err := WriteSearchReport(dir, curve, []string{"capacity at SLO: 2 sessions", "meets SLO up to 2 sessions"}, probes, "sessions"); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"report.md", "report.html"} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(data), knee); got != tc.want {
				t.Errorf("chosen stage %d: %s has the knee's GPU line: %v, want %v:\n%s", tc.chosen, name, got, tc.want, data)
			}
			if !tc.want && strings.Contains(string(data), "At the knee") {
				t.Errorf("chosen stage %d: %s has a knee line:\n%s", tc.chosen, name, data)
			}
		}
	}
}
