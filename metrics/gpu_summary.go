package metrics

import (
	"fmt"
	"sort"
	"time"
)

// GPUSummary is a stage's GPU telemetry over its measurement window (docs/measurement.md, GPU
// telemetry): energy, power, utilisation and memory per GPU and in all, and the energy per output
// token and per 1K turns. A value the readings cannot give is absent, never 0 or a guess: a source
// that stopped answering leaves a gap that is not filled.
type GPUSummary struct {
	Sources []string `json:"sources"`
	// Samples is the readings in the window, over every source.
	Samples int `json:"samples"`
	// GPUs is each device's numbers, in the order of their host and index.
	GPUs []GPUStats `json:"gpus"`
	// GPUFigures is the window's energy, power and activity over every GPU: EnergyJ is absent when
	// one GPU's is unknown; PowerMeanW is the sum of the GPUs' mean power, PowerMaxW the largest sum
	// of one reading of every GPU of a source (with several sources, the sum of each source's
	// largest); UtilMeanPct and SMActiveMean are the GPUs' means, averaged over the GPUs.
	GPUFigures
	// MemUsedMaxMiB is the largest memory in use, summed over the GPUs' own peaks.
	MemUsedMaxMiB Opt[float64] `json:"mem_used_max_mib"`
	// JPerOutToken is EnergyJ ÷ the output tokens that arrived in the window, JPerInToken ÷ the
	// prompt tokens prefilled in it (what an embeddings stage costs), JPer1KTurns ÷ the requests'
	// shares of it × 1000: each placed where it happened (WindowWork), not counted at its end.
	JPerOutToken Opt[float64] `json:"j_per_out_token"`
	JPerInToken  Opt[float64] `json:"j_per_in_token"`
	JPer1KTurns  Opt[float64] `json:"j_per_1k_turns"`
	// EnergyUSD is the window's energy at cost.energy_usd_per_kwh, and the same per 1M output tokens
	// and per 1K turns: the energy part of the bill, beside the hourly cost (absent without a price).
	EnergyUSD           Opt[float64] `json:"energy_usd"`
	EnergyUSDPer1MOut   Opt[float64] `json:"energy_usd_per_1m_out"`
	EnergyUSDPer1KTurns Opt[float64] `json:"energy_usd_per_1k_turns"`
	// Warnings are what makes a number absent or doubtful: a dead source, a counter reset, a GPU
	// count that is not the scenario's. They are stage warnings too.
	Warnings []string `json:"warnings,omitempty"`
	Note     string   `json:"note,omitempty"`
}

// GPUFigures are a window's energy, power and activity, of one GPU or all of them. EnergyMethod says
// how EnergyJ was found: "counter" (the exporter's energy counter), "power integral" (the power
// readings, trapezoids between them), or "counter and power integral" (a counter that went back,
// counted from power across the reset). UtilMeanPct is 0–100, SMActiveMean 0–1.
type GPUFigures struct {
	EnergyJ      Opt[float64] `json:"energy_j"`
	EnergyMethod string       `json:"energy_method,omitempty"`
	PowerMeanW   Opt[float64] `json:"power_mean_w"`
	PowerMaxW    Opt[float64] `json:"power_max_w"`
	UtilMeanPct  Opt[float64] `json:"util_mean_pct"`
	SMActiveMean Opt[float64] `json:"sm_active_mean"`
}

// GPUStats is one GPU over the window.
type GPUStats struct {
	GPU     string `json:"gpu"`
	UUID    string `json:"uuid,omitempty"`
	Model   string `json:"model,omitempty"`
	Host    string `json:"host,omitempty"`
	Source  string `json:"source"`
	Samples int    `json:"samples"`
	GPUFigures
	MemUsedMean Opt[float64] `json:"mem_used_mean_mib"`
	MemUsedMax  Opt[float64] `json:"mem_used_max_mib"`
	TempMaxC    Opt[float64] `json:"temp_max_c"`
}

// GPUWindow is what SummarizeGPU needs of the stage besides the readings.
type GPUWindow struct {
	WNs, EEffNs int64
	// Work is what the server did in the window (ReadWindowWork).
	Work WindowWork
	// GPUCount is the scenario's cost.gpu_count; EnergyUSDPerKWh its price of energy (nil: none).
	GPUCount        int
	EnergyUSDPerKWh *float64
}

// gpuMaxGap is the longest time between two readings that is still one series: past it, a source
// stopped answering, and a power integral across the gap would be a guess. Readings come every
// second; a slow scrape may take two.
const gpuMaxGap = 3 * time.Second

// gpuMinWindow is the shortest window whose energy readings a second apart can give: a shorter one
// (a test's 700 ms stage) has power and activity, but its energy is no measurement, and that is a
// note, not a warning.
const gpuMinWindow = 2 * time.Second

// SummarizeGPU reduces a stage's GPU readings to its window.
func SummarizeGPU(samples []GPUSample, w GPUWindow) GPUSummary {
	out := GPUSummary{Sources: []string{}, GPUs: []GPUStats{}}
	series := map[string]*gpuSeries{}
	var keys []string
	sourceMax := map[string]float64{}
	sourceHasPower := map[string]bool{}
	for _, s := range samples {
		if !containsString(out.Sources, s.Source) {
			out.Sources = append(out.Sources, s.Source)
		}
		inWindow := s.TNs >= w.WNs && s.TNs <= w.EEffNs
		if inWindow {
			out.Samples++
		}
		total, any := 0.0, false
		for _, g := range s.GPUs {
			key := s.Source + "\x00" + g.Key()
			sr := series[key]
			if sr == nil {
				sr = &gpuSeries{stats: GPUStats{GPU: g.GPU, UUID: g.UUID, Model: g.Model, Host: g.Host, Source: s.Source}}
				series[key] = sr
				keys = append(keys, key)
			}
			sr.points = append(sr.points, gpuPoint{t: s.TNs, r: g})
			if inWindow && g.PowerW != nil {
				total += *g.PowerW
				any = true
			}
		}
		if any {
			sourceMax[s.Source] = max(sourceMax[s.Source], total)
			sourceHasPower[s.Source] = true
		}
	}
	if len(keys) == 0 {
		out.Note = "no GPU telemetry was read in this stage"
		return out
	}
	sort.SliceStable(keys, func(i, j int) bool { return series[keys[i]].less(series[keys[j]]) })
	out.Warnings = sourceGaps(samples, w)
	energy, methods, energyKnown := 0.0, map[string]bool{}, true
	var util, sm []float64
	for _, k := range keys {
		sr := series[k]
		sort.Slice(sr.points, func(i, j int) bool { return sr.points[i].t < sr.points[j].t })
		sr.summarize(w)
		for _, line := range sr.warnings {
			if !containsString(out.Warnings, line) {
				out.Warnings = append(out.Warnings, line)
			}
		}
		st := sr.stats
		out.GPUs = append(out.GPUs, st)
		if st.EnergyJ.OK {
			energy += st.EnergyJ.V
			methods[st.EnergyMethod] = true
		} else {
			energyKnown = false
		}
		addOpt(&out.PowerMeanW, st.PowerMeanW)
		addOpt(&out.MemUsedMaxMiB, st.MemUsedMax)
		if st.UtilMeanPct.OK {
			util = append(util, st.UtilMeanPct.V)
		}
		if st.SMActiveMean.OK {
			sm = append(sm, st.SMActiveMean.V)
		}
	}
	for src, top := range sourceMax {
		if sourceHasPower[src] {
			out.PowerMaxW = Some(out.PowerMaxW.V + top)
		}
	}
	out.UtilMeanPct, out.SMActiveMean = meanOpt(util), meanOpt(sm)
	if short := w.EEffNs - w.WNs; short < int64(gpuMinWindow) {
		out.Note = fmt.Sprintf("the window (%s) is shorter than %s: GPU readings a second apart give no energy over it", secs(short), secs(int64(gpuMinWindow)))
		energyKnown = false
	}
	if energyKnown {
		out.EnergyJ = Some(energy)
		out.EnergyMethod = energyMethod(methods)
		out.perUnit(w)
	}
	if n := len(out.GPUs); w.GPUCount > 0 && n != w.GPUCount {
		out.Warnings = append(out.Warnings, fmt.Sprintf("GPU telemetry reports %d GPUs and cost.gpu_count is %d: energy counts the %d reported, the hourly cost %d (list only the serving GPUs' exporters, or set cost.gpu_count: %d)",
			n, w.GPUCount, n, w.GPUCount, n))
	}
	return out
}

// perUnit divides the window's energy by its tokens and turns, and prices it.
func (out *GPUSummary) perUnit(w GPUWindow) {
	e, work := out.EnergyJ.V, w.Work
	if work.OutputTokens > 0 {
		out.JPerOutToken = Some(e / work.OutputTokens)
	}
	if work.InputTokens > 0 {
		out.JPerInToken = Some(e / work.InputTokens)
	}
	if work.Turns > 0 {
		out.JPer1KTurns = Some(e / work.Turns * 1000)
	}
	if p := w.EnergyUSDPerKWh; p != nil {
		const joulesPerKWh = 3.6e6
		out.EnergyUSD = Some(e / joulesPerKWh * *p)
		if out.JPerOutToken.OK {
			out.EnergyUSDPer1MOut = Some(out.JPerOutToken.V * 1e6 / joulesPerKWh * *p)
		}
		if out.JPer1KTurns.OK {
			out.EnergyUSDPer1KTurns = Some(out.JPer1KTurns.V / joulesPerKWh * *p)
		}
	}
}

// energyMethod names how the GPUs' energies were found: one way for all, or both.
func energyMethod(methods map[string]bool) string {
	if len(methods) == 1 {
		for m := range methods {
			return m
		}
	}
	return energyByBoth
}

// sourceGaps warns of each source that stopped answering in the window: its readings are more than
// gpuMaxGap apart there (or stop before the window's end, or start after its beginning).
func sourceGaps(samples []GPUSample, w GPUWindow) []string {
	last := map[string]int64{}
	var order []string
	var out []string
	gap := func(src string, from, to int64) {
		if to-from > int64(gpuMaxGap) && overlap(from, to, w.WNs, w.EEffNs) > 0 {
			out = append(out, fmt.Sprintf("GPU telemetry from %s: no readings for %s of the window (from %s to %s after its start); the gap is not filled",
				src, secs(overlap(from, to, w.WNs, w.EEffNs)), secs(max(from, w.WNs)-w.WNs), secs(min(to, w.EEffNs)-w.WNs)))
		}
	}
	for _, s := range samples {
		prev, seen := last[s.Source]
		if !seen {
			order = append(order, s.Source)
			prev = w.WNs
		}
		gap(s.Source, prev, s.TNs)
		last[s.Source] = max(prev, s.TNs)
	}
	for _, src := range order {
		gap(src, last[src], w.EEffNs)
	}
	return out
}

func addOpt(sum *Opt[float64], v Opt[float64]) {
	if v.OK {
		*sum = Some(sum.V + v.V)
	}
}

func meanOpt(v []float64) Opt[float64] {
	if len(v) == 0 {
		return Opt[float64]{}
	}
	t := 0.0
	for _, x := range v {
		t += x
	}
	return Some(t / float64(len(v)))
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
