package report

import (
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// StageInput is the metrics input for stage i (0-based) of a scenario.
func StageInput(sc *workload.Scenario, i int) metrics.StageInput {
	st := sc.Load.Stages[i]
	errMax, errSet := sc.SLO.ErrorRateLimit()
	var price float64
	if sc.Cost.GPUHourlyUSD != nil {
		price = *sc.Cost.GPUHourlyUSD
	}
	return metrics.StageInput{
		Warmup: st.Warmup.D(), Duration: st.Duration.D(), NeverStarted: -1,
		SLO: metrics.SLOLimits{TTFTP95Ms: ms(sc.SLO.TTFTP95), ITLP95Ms: ms(sc.SLO.ITLP95), ErrorRateMax: errMax, ErrorRateUnset: !errSet},
		Cost: metrics.CostInputs{GPUHourlyUSD: price, GPUCount: sc.Cost.GPUCount,
			ExpectedTurns: sc.ExpectedTurns(), Unpriced: sc.Cost.GPUHourlyUSD == nil},
	}
}

func ms(d workload.Duration) float64 { return float64(d.D().Nanoseconds()) / 1e6 }

