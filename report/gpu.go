package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// GPU telemetry in report.md and report.html (stage.json's gpu, metrics.GPUSummary): what the
// stage's GPUs drew and how busy they were over its window, and what a token cost in energy beside
// what it cost by the hour. A stage without the block (telemetry off) is not shown; a stage whose
// block has a note (nothing answered) shows the note once, never an empty row. The GPU warnings are
// stage warnings and show in the Warnings section.

// gpuSection is the "GPU telemetry" section: one row per stage with readings, the energy cost beside
// the hourly cost when energy has a price, one row per GPU, and the notes of stages without readings
// ("" when no stage has a gpu block).
func gpuSection(rows []runStage, withRun bool) string {
	var stages, costs, devices [][]string
	var notes strings.Builder
	var sources []string
	for _, rs := range rows {
		g := rs.st.GPU
		if g == nil {
			continue
		}
		if len(g.GPUs) == 0 {
			note := g.Note
			if note == "" {
				note = "no GPU telemetry was read in this stage"
			}
			fmt.Fprintf(&notes, "- %s: %s.\n", stageLabel(rs, withRun), strings.TrimSuffix(mdCell(note), "."))
			continue
		}
		for _, src := range g.Sources {
			if !slices.Contains(sources, src) {
				sources = append(sources, src)
			}
		}
		stages = append(stages, append(stageCells(rs, withRun), energyCell(g.EnergyJ, g.EnergyMethod),
			wattsCell(g.PowerMeanW, g.PowerMaxW), optText(g.UtilMeanPct, 1), percentOf(g.SMActiveMean), gibText(g.MemUsedMaxMiB),
			sigText(g.JPerOutToken), sigText(g.JPer1KTurns)))
		if g.EnergyUSD.OK {
			s := rs.st.Summary
			costs = append(costs, append(stageCells(rs, withRun), energyMoney(g.EnergyUSD), energyMoney(g.EnergyUSDPer1MOut),
				costText(rs.st, s.Cost.USDPer1MOut, 3), energyMoney(g.EnergyUSDPer1KTurns), costText(rs.st, s.Cost.USDPer1KTurns, 4)))
		}
		for _, d := range g.GPUs {
			devices = append(devices, append(stageCells(rs, withRun), mdCell(d.GPU), orDash(mdCell(d.Host)), orDash(mdCell(d.Model)),
				wattsCell(d.PowerMeanW, d.PowerMaxW), energyCell(d.EnergyJ, ""), optText(d.UtilMeanPct, 1), gibText(d.MemUsedMax),
				optText(d.TempMaxC, 0)))
		}
	}
	if len(stages) == 0 && notes.Len() == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## GPU telemetry\n\n")
	if len(stages) > 0 {
		b.WriteString(markdownTable(stageHeader(withRun, "energy kJ (how)", "power W mean / max", "GPU util %", "SM active %",
			"peak memory GiB", "J/out token", "J/1K turns"), stages))
		b.WriteString("\nOver each stage's measurement window, from the GPUs' own readings: energy by the exporter's energy counter (counter) or by the power readings, trapezoids between them (power integral); power and memory are summed over the GPUs, utilisation and SM active averaged over them; J/out token and J/1K turns divide the energy by the output tokens and turns of the window. A gap in the readings is never filled: a value it leaves unknown is N/A, and the warnings say why.\n")
		if len(sources) > 0 {
			quoted := make([]string, len(sources))
			for i, s := range sources {
				quoted[i] = mdCode(s)
			}
			b.WriteString("Read from " + strings.Join(quoted, ", ") + ".\n")
		}
	}
	if len(costs) > 0 {
		b.WriteString("\nEnergy cost (at cost.energy_usd_per_kwh) beside the hourly cost (cost.gpu_hourly_usd):\n\n")
		b.WriteString(markdownTable(stageHeader(withRun, "energy $", "energy $/1M out", "hourly $/1M out", "energy $/1K turns", "hourly $/1K turns"), costs))
	}
	if len(devices) > 0 {
		b.WriteString("\nBy GPU:\n\n")
		b.WriteString(markdownTable(stageHeader(withRun, "GPU", "host", "model", "power W mean / max", "energy kJ", "util %",
			"memory GiB max", "temp max °C"), devices))
	}
	if notes.Len() > 0 {
		if len(stages) > 0 {
			b.WriteString("\n")
		}
		b.WriteString(notes.String())
	}
	return b.String()
}

// energyCostText is the energy cost column of the cost table: the energy $ per 1M output tokens, with
// why it is unknown.
func energyCostText(st *resultfiles.StageReport) string {
	g := st.GPU
	switch {
	case g == nil:
		return "N/A (no telemetry)"
	case len(g.GPUs) == 0:
		return "N/A (no readings)"
	case st.Cost.EnergyUSDPerKWh == nil:
		return "N/A (no energy price)"
	}
	return energyMoney(g.EnergyUSDPer1MOut)
}

// energyPriced reports whether any stage's energy has a cost per 1M output tokens: then the cost
// table shows the energy's beside the hourly one.
func energyPriced(rows []runStage) bool {
	for _, rs := range rows {
		if g := rs.st.GPU; g != nil && g.EnergyUSDPer1MOut.OK {
			return true
		}
	}
	return false
}

// EnergyHeadline is the line under the headline of a run whose headline stage has GPU telemetry,
// without its label ("Energy"): the energy its output took, and what it cost beside the hourly cost
// ("" when that stage has no energy, or the headline is a batch job's or a retrieval run's, whose
// cost is not per output token).
func EnergyHeadline(stages []*resultfiles.StageReport) string {
	best := resultfiles.HeadlineIndex(stages)
	if best < 0 {
		return ""
	}
	st := stages[best]
	g := st.GPU
	if g == nil || !g.EnergyJ.OK || st.Batch != nil {
		return ""
	}
	line := fmt.Sprintf("stage %02d, from GPU telemetry: %s kJ by %s, %s J/out token, %s J/1K turns", st.Stage,
		resultfiles.Num(g.EnergyJ.V/1000, 1), g.EnergyMethod, sigText(g.JPerOutToken), sigText(g.JPer1KTurns))
	if p := st.Cost.EnergyUSDPerKWh; p != nil && g.EnergyUSDPer1MOut.OK {
		line += fmt.Sprintf("; at $%g/kWh %s/1M out in energy", *p, energyMoney(g.EnergyUSDPer1MOut))
		if !st.Cost.Unpriced {
			line += fmt.Sprintf(", beside %s/1M out by the hour", resultfiles.Money(st.Summary.Cost.USDPer1MOut, 3))
		}
	}
	return line
}

// KneeGPUText is what the GPUs did at a capacity search's knee, the stage of the largest load that
// met the SLO: "at the knee (12 req/s, stage 05): GPU util 87.0 %, power 1,412 W mean (2 GPUs),
// 0.41 J/out token" ("" when that stage has no GPU readings).
func KneeGPUText(g *metrics.GPUSummary, load string, stage int) string {
	if g == nil || len(g.GPUs) == 0 {
		return ""
	}
	var parts []string
	if g.UtilMeanPct.OK {
		parts = append(parts, fmt.Sprintf("GPU util %.1f %%", g.UtilMeanPct.V))
	}
	if g.SMActiveMean.OK {
		parts = append(parts, fmt.Sprintf("SM active %.1f %%", 100*g.SMActiveMean.V))
	}
	if g.PowerMeanW.OK {
		gpus := "1 GPU"
		if n := len(g.GPUs); n != 1 {
			gpus = fmt.Sprintf("%d GPUs", n)
		}
		parts = append(parts, fmt.Sprintf("power %s W mean (%s)", thousands(g.PowerMeanW.V), gpus))
	}
	if g.JPerOutToken.OK {
		parts = append(parts, sigText(g.JPerOutToken)+" J/out token")
	}
	if g.EnergyUSDPer1MOut.OK {
		parts = append(parts, energyMoney(g.EnergyUSDPer1MOut)+"/1M out in energy")
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("at the knee (%s, stage %02d): %s", load, stage, strings.Join(parts, ", "))
}

// energyCell is an energy in kJ with how it was found: "12.3 (counter)".
func energyCell(e metrics.Opt[float64], method string) string {
	if !e.OK {
		return "N/A"
	}
	text := resultfiles.Num(e.V/1000, 2)
	if method != "" {
		text += " (" + method + ")"
	}
	return text
}

// wattsCell is a mean and a maximum power in whole watts: "1412 / 1630".
func wattsCell(mean, top metrics.Opt[float64]) string {
	return optText(mean, 0) + " / " + optText(top, 0)
}

// optText is a value to digits decimals, or N/A.
func optText(o metrics.Opt[float64], digits int) string {
	if !o.OK {
		return "N/A"
	}
	return resultfiles.Num(o.V, digits)
}

// percentOf is a 0–1 share as a percentage to one decimal, or N/A.
func percentOf(o metrics.Opt[float64]) string {
	if !o.OK {
		return "N/A"
	}
	return resultfiles.Num(100*o.V, 1)
}

// gibText is MiB as GiB to one decimal, or N/A.
func gibText(o metrics.Opt[float64]) string {
	if !o.OK {
		return "N/A"
	}
	return resultfiles.Num(o.V/1024, 1)
}

// energyMoney is an energy cost in dollars, or N/A: four decimals, or three significant digits
// below a cent — a short stage's energy costs fractions of one.
func energyMoney(o metrics.Opt[float64]) string {
	if !o.OK {
		return "N/A"
	}
	if o.V >= 0.01 || o.V <= 0 {
		return resultfiles.Money(&o.V, 4)
	}
	return "$" + sigText(o)
}

// sigText writes a value to three significant digits (0.412, 4.12, 41.2) and whole numbers from
// 100 up, grouped from 1,000: joules per token span orders of magnitude between a small model and a
// large one.
func sigText(o metrics.Opt[float64]) string {
	if !o.OK {
		return "N/A"
	}
	v := o.V
	switch {
	case math.Abs(v) >= 1000:
		return thousands(v)
	case v == 0 || math.Abs(v) >= 100:
		return resultfiles.Num(v, 0)
	}
	digits := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	return resultfiles.Num(v, digits)
}

// thousands writes a whole number with its thousands grouped: 1,412.
func thousands(v float64) string {
	s := strconv.FormatFloat(math.Round(math.Abs(v)), 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if v < 0 && s != "0" {
		s = "-" + s
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
