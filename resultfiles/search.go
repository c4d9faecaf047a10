package resultfiles

import (
	"encoding/json"
	"path/filepath"

	"github.com/plload/plload/metrics"
)

// Search is search.json, the answer of a capacity search (plload search; docs/measurement.md): the
// knob searched, the SLO the probes were judged by, the largest load that passed below the first that
// did not (null when none passed), the lowest and highest load whose repeats could not decide (null
// when none), and every probe in the order it ran.
type Search struct {
	Knob      string            `json:"knob"`
	SLO       metrics.SLOLimits `json:"slo"`
	Best      *float64          `json:"best"`
	Undecided *[2]float64       `json:"undecided"`
	Probes    []SearchProbe     `json:"probes"`
	// Stop says why the search ended. Complete is whether its own rules ended it (the resolution
	// reached, every load up to --max passed, nothing passed down to the lowest load); false when it
	// stopped first — an interrupt, an invalid probe, the probe budget, an error — and Best, if any,
	// is then only a lower bound.
	Stop     string `json:"stop"`
	Complete bool   `json:"complete"`
}

// SearchProbe is one probe of a capacity search: its load, its verdict (pass, fail, undecided,
// invalid, pooled with the load's earlier repeats; interrupted for the probe an interrupt cut short,
// never judged), why, and the stage that holds it (0: none ran).
type SearchProbe struct {
	Value   float64 `json:"value"`
	Verdict string  `json:"verdict"`
	Reason  string  `json:"reason"`
	Stage   int     `json:"stage"`
	// Decided says how each limit of the SLO was decided (absent when the probe was not judged on
	// its limits: saturated, invalid, unreachable).
	Decided []SearchDecision `json:"decided,omitempty"`
	// GPU is what the GPUs did in the probe's stage (absent without telemetry): so a dashboard can
	// draw power and energy per token against load from search.json alone, the knee's among them.
	GPU *SearchGPU `json:"gpu,omitempty"`
}

// SearchGPU is a probe's GPU figures, as its stage.json's gpu block has them.
type SearchGPU struct {
	GPUs int `json:"gpus"`
	metrics.GPUFigures
	JPerOutToken      metrics.Opt[float64] `json:"j_per_out_token"`
	EnergyUSDPer1MOut metrics.Opt[float64] `json:"energy_usd_per_1m_out"`
}

// NewSearchGPU is a stage's GPU figures for search.json (nil without telemetry).
func NewSearchGPU(g *metrics.GPUSummary) *SearchGPU {
	if g == nil || len(g.GPUs) == 0 {
		return nil
	}
	return &SearchGPU{GPUs: len(g.GPUs), GPUFigures: g.GPUFigures, JPerOutToken: g.JPerOutToken, EnergyUSDPer1MOut: g.EnergyUSDPer1MOut}
}

// SearchDecision is how one limit of the SLO was decided in a probe: the limit ("ttft p95", "error
// rate"), its outcome (met, broken or undecided) and the rule that decided it (search's Rule
// constants, described in docs/measurement.md).
type SearchDecision struct {
	Limit   string `json:"limit"`
	Outcome string `json:"outcome"`
	Rule    string `json:"rule"`
}

// Write writes search.json into dir (atomically); a search without probes lists [] (never null).
func (s Search) Write(dir string) error {
	if s.Probes == nil {
		s.Probes = []SearchProbe{}
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "search.json"), append(data, '\n'))
}
