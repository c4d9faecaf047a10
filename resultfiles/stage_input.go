package resultfiles

import (
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// StageInput is the metrics input for stage i (0-based) of a scenario.
func StageInput(sc *workload.Scenario, i int) metrics.StageInput {
	st := sc.Load.Stages[i]
	var price float64
	if sc.Cost.GPUHourlyUSD != nil {
		price = *sc.Cost.GPUHourlyUSD
	}
	mode := sc.Load.LoadMode()
	return metrics.StageInput{
		Warmup: st.Warmup.D(), Duration: st.Duration.D(), NeverStarted: -1,
		SLO: SLOLimits(sc.SLO),
		Cost: metrics.CostInputs{GPUHourlyUSD: price, GPUCount: sc.Cost.GPUCount,
			ExpectedTurns: sc.ExpectedTurns(), Unpriced: sc.Cost.GPUHourlyUSD == nil, EnergyUSDPerKWh: sc.Cost.EnergyUSDPerKWh},
		Replay:       mode.TraceClock,
		AbsorbWindow: absorbWindow(sc, i),
		Batch:        mode.Job,
		// A rerank's prompt is each document with the query in the server's template.
		TemplatedPrompts: sc.Target.Endpoint == "rerank",
	}
}

// SLOLimits is the scenario's SLO as the stage is judged by it: every latency bound (the turn-1 keys
// already folded in by the workload) in Latency, and the ttft and itl p95 bounds also in the turn-1
// fields, which the charts draw as SLO lines.
func SLOLimits(slo workload.SLO) metrics.SLOLimits {
	errMax, errSet := slo.ErrorRateLimit()
	l := metrics.SLOLimits{ErrorRateMax: errMax, ErrorRateUnset: !errSet}
	for _, x := range slo.LatencyLimits() {
		lim := metrics.LatencyLimit{Metric: x.Metric, Stat: x.Stat, LimitMs: float64(x.Limit.Nanoseconds()) / 1e6}
		l.Latency = append(l.Latency, lim)
		switch {
		case x.Metric == metrics.SLOMetricTTFT && x.Stat == metrics.SLOStatP95:
			l.TTFTP95Ms = lim.LimitMs
		case x.Metric == metrics.SLOMetricITL && x.Stat == metrics.SLOStatP95:
			l.ITLP95Ms = lim.LimitMs
		}
	}
	return l
}
