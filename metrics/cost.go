package metrics

import "encoding/json"

// The cost inputs and the cost of a stage at its measured throughput. A price that was not given is
// not a zero (which would make the GPUs free).

// CostInputs are the cost inputs and E[turns]. A price of 0 is a real one (a machine you own); the
// price is not set only when Unpriced says so (`plload report --records` without --gpu-hourly-usd):
// then every cost is absent, not $0, and gpu_hourly_usd is null in JSON.
type CostInputs struct {
	GPUHourlyUSD  float64
	GPUCount      int
	ExpectedTurns float64
	Unpriced      bool
	// EnergyUSDPerKWh prices GPU telemetry's energy (GPUSummary); nil: not priced.
	EnergyUSDPerKWh *float64
}

// costJSON is CostInputs in stage.json: an unset price is null.
type costJSON struct {
	GPUHourlyUSD  *float64 `json:"gpu_hourly_usd"`
	GPUCount      int      `json:"gpu_count"`
	ExpectedTurns float64  `json:"expected_turns"`
	// EnergyUSDPerKWh is absent when no energy price was given.
	EnergyUSDPerKWh *float64 `json:"energy_usd_per_kwh,omitempty"`
}

// MarshalJSON writes the inputs, the price null when it is not set.
func (c CostInputs) MarshalJSON() ([]byte, error) {
	j := costJSON{GPUCount: c.GPUCount, ExpectedTurns: c.ExpectedTurns, EnergyUSDPerKWh: c.EnergyUSDPerKWh}
	if !c.Unpriced {
		j.GPUHourlyUSD = &c.GPUHourlyUSD
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the inputs; a null price leaves them unpriced.
func (c *CostInputs) UnmarshalJSON(b []byte) error {
	var j costJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = CostInputs{GPUCount: j.GPUCount, ExpectedTurns: j.ExpectedTurns, Unpriced: j.GPUHourlyUSD == nil, EnergyUSDPerKWh: j.EnergyUSDPerKWh}
	if j.GPUHourlyUSD != nil {
		c.GPUHourlyUSD = *j.GPUHourlyUSD
	}
	return nil
}

// CostResult is the stage's cost at its measured throughput; absent when the throughput is 0 or no
// price was given.
type CostResult struct {
	USDPer1MOut *float64 `json:"usd_per_1m_out"`
	// USDPer1MIn is the price of a million input tokens at the stage's input rate: the cost of an
	// embeddings or rerank stage, whose requests generate nothing.
	USDPer1MIn    *float64 `json:"usd_per_1m_in"`
	USDPer1KTurns *float64 `json:"usd_per_1k_turns"`
	USDPerSession *float64 `json:"usd_per_session"`
}

// cost: $/1M out = price × GPUs ÷ (out tok/s × 3600) × 10⁶ (and $/1M in of input tok/s); $/1K turns = price × GPUs ÷ (req/s × 3600)
// × 10³; $/session = $/1K turns ÷ 10³ × E[turns].
func cost(in CostInputs, s *StageSummary) CostResult {
	var c CostResult
	if in.Unpriced {
		return c
	}
	hourly := in.GPUHourlyUSD * float64(max(in.GPUCount, 1))
	if tps := s.Throughput.OutTokPerSec; tps > 0 {
		v := hourly / (tps * 3600) * 1e6
		c.USDPer1MOut = &v
	}
	if tps := s.Throughput.InTokPerSec; tps > 0 {
		v := hourly / (tps * 3600) * 1e6
		c.USDPer1MIn = &v
	}
	if rps := s.Throughput.ReqPerSec; rps > 0 {
		v := hourly / (rps * 3600) * 1e3
		c.USDPer1KTurns = &v
		if in.ExpectedTurns > 0 {
			ps := v / 1e3 * in.ExpectedTurns
			c.USDPerSession = &ps
		}
	}
	return c
}

// Headline picks the complete, SLO-passing stage with the highest out tok/s (ties: the lower stage
// number, i.e. the earlier index). It returns −1 when no stage qualifies.
func Headline(stages []*StageSummary) int {
	best := -1
	for i, s := range stages {
		if !s.Measured() || s.SLO.Verdict != SLOPass {
			continue
		}
		if best < 0 || s.Throughput.OutTokPerSec > stages[best].Throughput.OutTokPerSec {
			best = i
		}
	}
	return best
}

// Measured reports whether the stage's numbers can stand as a headline: it ran its course (not
// partial), a request succeeded in its window, and, for a replay, the client kept the trace's pace
// (else its latencies are not the trace's).
func (s *StageSummary) Measured() bool {
	return s != nil && !s.Partial && s.Throughput.Requests > 0 && (!s.ReplayValid.OK || s.ReplayValid.V)
}
