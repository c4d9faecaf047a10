package metrics

import (
	"math"
	"strings"
	"testing"
)

// gpuFake makes readings every second from..to (seconds after the window's start at 10 s) of GPUs
// whose power is watts[i] and whose counter integrates it exactly.
type gpuFake struct {
	watts   []float64
	counter bool
	// resetAt, when > 0, is the second from which GPU 0's counter starts again from 0.
	resetAt float64
	// deadFrom..deadTo is a span with no readings.
	deadFrom, deadTo float64
}

const gpuW0 = int64(10e9)

func (f gpuFake) samples(from, to float64) []GPUSample {
	var out []GPUSample
	for t := from; t <= to+1e-9; t++ {
		if f.deadTo > f.deadFrom && t > f.deadFrom && t < f.deadTo {
			continue
		}
		s := GPUSample{TNs: gpuW0 + int64(t*1e9), Source: "http://dcgm:9400/metrics"}
		for i, w := range f.watts {
			p := w
			g := GPUReading{GPU: string(rune('0' + i)), UUID: "GPU-" + string(rune('a'+i)), Host: "node1", PowerW: &p}
			if f.counter {
				e := 5e9 + w*(t+100)*1000 // mJ since the driver loaded (100 s before the window)
				if i == 0 && f.resetAt > 0 && t >= f.resetAt {
					e = w * (t - f.resetAt + 0.25) * 1000
				}
				g.EnergyMJ = &e
			}
			s.GPUs = append(s.GPUs, g)
		}
		out = append(out, s)
	}
	return out
}

func gpuWindow(secs float64) GPUWindow {
	return GPUWindow{WNs: gpuW0, EEffNs: gpuW0 + int64(secs*1e9), Work: WindowWork{OutputTokens: 6000, InputTokens: 30000, Turns: 60}, GPUCount: 2}
}

func nearOpt(t *testing.T, what string, got Opt[float64], want float64) {
	t.Helper()
	if !got.OK || math.Abs(got.V-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %+v, want %.6g", what, got, want)
	}
}

func TestGPUSummaryCounterTwoGPUs(t *testing.T) {
	price := 0.2
	w := gpuWindow(20)
	w.EnergyUSDPerKWh = &price
	// Readings from 2 s before the window to 0.6 s before its end: the end's 0.6 s takes the last rate.
	got := SummarizeGPU(gpuFake{watts: []float64{100, 250}, counter: true}.samples(-2, 19.4), w)
	if len(got.GPUs) != 2 || got.GPUs[0].GPU != "0" || got.GPUs[1].GPU != "1" {
		t.Fatalf("GPUs = %+v", got.GPUs)
	}
	nearOpt(t, "GPU 0 energy", got.GPUs[0].EnergyJ, 100*20)
	nearOpt(t, "GPU 1 energy", got.GPUs[1].EnergyJ, 250*20)
	nearOpt(t, "energy", got.EnergyJ, 350*20)
	nearOpt(t, "mean power", got.PowerMeanW, 350)
	nearOpt(t, "max power", got.PowerMaxW, 350)
	nearOpt(t, "J/out token", got.JPerOutToken, 7000.0/6000)
	nearOpt(t, "J/1K turns", got.JPer1KTurns, 7000.0/60*1000)
	nearOpt(t, "energy $", got.EnergyUSD, 7000/3.6e6*0.2)
	nearOpt(t, "energy $/1M out", got.EnergyUSDPer1MOut, 7000.0/6000*1e6/3.6e6*0.2)
	if got.EnergyMethod != "counter" || len(got.Warnings) != 0 {
		t.Errorf("method %q, warnings %q", got.EnergyMethod, got.Warnings)
	}
}

func TestGPUSummaryPowerIntegral(t *testing.T) {
	got := SummarizeGPU(gpuFake{watts: []float64{300}}.samples(0.5, 19.5), gpuWindow(20))
	nearOpt(t, "energy", got.EnergyJ, 300*20)
	if got.EnergyMethod != "power integral" {
		t.Errorf("method %q", got.EnergyMethod)
	}
	// One GPU reported against the scenario's two: said, not hidden.
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "reports 1 GPUs and cost.gpu_count is 2") {
		t.Errorf("warnings %q", got.Warnings)
	}
}

func TestGPUSummaryCounterReset(t *testing.T) {
	got := SummarizeGPU(gpuFake{watts: []float64{100, 200}, counter: true, resetAt: 7}.samples(-1, 20), gpuWindow(20))
	nearOpt(t, "GPU 0 energy across a reset", got.GPUs[0].EnergyJ, 100*20)
	nearOpt(t, "energy", got.EnergyJ, 300*20)
	if got.EnergyMethod != "counter and power integral" || got.GPUs[1].EnergyMethod != "counter" {
		t.Errorf("methods %q, %q", got.EnergyMethod, got.GPUs[1].EnergyMethod)
	}
	if !strings.Contains(strings.Join(got.Warnings, "\n"), "GPU 0 on node1: the energy counter went back 1 time(s)") {
		t.Errorf("warnings %q", got.Warnings)
	}
}

func TestGPUSummaryDeadSource(t *testing.T) {
	// Power alone: the gap is not filled, so there is no energy, and the warnings say why.
	got := SummarizeGPU(gpuFake{watts: []float64{100, 200}, deadFrom: 5, deadTo: 12}.samples(-1, 20), gpuWindow(20))
	if got.EnergyJ.OK || got.JPerOutToken.OK || got.EnergyUSD.OK {
		t.Errorf("energy %+v from a gap", got.EnergyJ)
	}
	all := strings.Join(got.Warnings, "\n")
	if !strings.Contains(all, "no readings for 7.0 s of the window (from 5.0 s to 12.0 s after its start); the gap is not filled") ||
		!strings.Contains(all, "energy from power is not filled across a gap") {
		t.Errorf("warnings %q", got.Warnings)
	}
	nearOpt(t, "mean power over the readings", got.PowerMeanW, 300)
	// With a counter, the energy across the gap is known: the counter kept counting. The gap is said.
	got = SummarizeGPU(gpuFake{watts: []float64{100, 200}, counter: true, deadFrom: 5, deadTo: 12}.samples(-1, 20), gpuWindow(20))
	nearOpt(t, "energy across a gap, by the counter", got.EnergyJ, 300*20)
	if !strings.Contains(strings.Join(got.Warnings, "\n"), "the gap is not filled") {
		t.Errorf("warnings %q", got.Warnings)
	}
	// A source that stopped for good before the window's end.
	got = SummarizeGPU(gpuFake{watts: []float64{100, 200}, counter: true}.samples(-1, 8), gpuWindow(20))
	if got.EnergyJ.OK {
		t.Errorf("energy %+v from readings that end 12 s before the window", got.EnergyJ)
	}
}

func TestGPUSummaryAbsentValues(t *testing.T) {
	samples := gpuFake{watts: []float64{100, 200}}.samples(-1, 20)
	for i := range samples {
		samples[i].GPUs[1].PowerW = nil // a GPU that cannot report power
	}
	got := SummarizeGPU(samples, gpuWindow(20))
	if got.EnergyJ.OK || got.GPUs[1].PowerMeanW.OK {
		t.Errorf("energy %+v, GPU 1 power %+v from no readings", got.EnergyJ, got.GPUs[1].PowerMeanW)
	}
	nearOpt(t, "GPU 0 energy", got.GPUs[0].EnergyJ, 2000)
	if none := SummarizeGPU(nil, gpuWindow(20)); none.Note == "" || none.EnergyJ.OK {
		t.Errorf("no readings: %+v", none)
	}
}

// The window's work is placed where it happened: token events at their times, the prompt over its
// prefill, the turn by the part of its span inside.
func TestWindowWork(t *testing.T) {
	const ms = int64(1e6)
	// Starts at 0, first token at 100 ms, then events every 100 ms: events at 100, 200, …, 500 ms,
	// carrying 1, 2, 1, 1, 5 tokens; the request ends at 500 ms.
	r := &Record{RequestStartNs: 0, RequestEndNs: Some(500 * ms), TTFT: Some(100.0), InputSequenceLength: Some(40),
		OutputSequenceLength: Some(10), InterChunkLatency: []float64{100, 100, 100, 100}, ChunkTokens: []int{1, 2, 1, 1, 5}}
	var w WindowWork
	w.add(r, 150*ms, 450*ms) // events at 200, 300, 400 ms: 2 + 1 + 1 tokens
	if w.OutputTokens != 4 || w.Turns != 0.6 || w.InputTokens != 0 {
		t.Errorf("%+v, want 4 tokens, 0.6 turns, no prefill (it ended at 100 ms)", w)
	}
	w = WindowWork{}
	w.add(r, 50*ms, 1000*ms) // half the prefill, every event
	if w.OutputTokens != 10 || w.InputTokens != 20 || w.Turns != 0.9 {
		t.Errorf("%+v, want 10 tokens, 20 prompt tokens, 0.9 turns", w)
	}
	// Without chunk_tokens the tokens spread over the events; without gaps, over first token to end.
	r.ChunkTokens = nil
	w = WindowWork{}
	w.add(r, 150*ms, 450*ms)
	if w.OutputTokens != 6 {
		t.Errorf("%+v, want 3 of 5 events of 2 tokens", w)
	}
	r.InterChunkLatency = nil
	w = WindowWork{}
	w.add(r, 300*ms, 1000*ms)
	if w.OutputTokens != 5 {
		t.Errorf("%+v, want half of the 10 tokens between 100 and 500 ms", w)
	}
	w = WindowWork{}
	w.add(&Record{RequestStartNs: 0}, 0, 1000*ms) // never answered
	if w != (WindowWork{}) {
		t.Errorf("%+v from a record without an end", w)
	}
}

// A window shorter than two readings gives power, not energy, and says so in a note, not a warning.
func TestGPUSummaryShortWindow(t *testing.T) {
	got := SummarizeGPU(gpuFake{watts: []float64{100, 200}, counter: true}.samples(-1, 2), gpuWindow(0.7))
	if got.EnergyJ.OK || len(got.Warnings) != 0 || !strings.Contains(got.Note, "the window (0.7 s) is shorter than 2.0 s") {
		t.Errorf("energy %+v, warnings %q, note %q", got.EnergyJ, got.Warnings, got.Note)
	}
	nearOpt(t, "mean power", got.PowerMeanW, 300)
}
