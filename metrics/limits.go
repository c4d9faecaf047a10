package metrics

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The inputs a stage is judged and priced by, and their "not set" states: a limit or a price that
// was not given is not a zero (which would FAIL every stage, or make the GPUs free).

// SLOLimits are the SLO a stage is judged by. A limit that is not set takes no part in the verdict
// and is null in JSON; with none set the verdict is N/A. A zero latency limit is not set (no latency
// meets it, and a scenario must give a positive one); a zero error-rate limit is a real one (no
// errors allowed), so that limit is not set only when ErrorRateUnset says so (`plload report
// --records` without --error-rate-max).
//
// TTFTP95Ms and ITLP95Ms are the turn-1 limits (ttft p95, pooled itl p95); Latency holds any metric
// × statistic (SPEC §13). The stage is judged by both, folded (Limits): a bound given both ways keeps
// the stricter.
type SLOLimits struct {
	TTFTP95Ms      float64
	ITLP95Ms       float64
	ErrorRateMax   float64
	ErrorRateUnset bool
	Latency        []LatencyLimit
}

// LatencyLimit is one latency bound: Metric (SLOMetricTTFT, …) at Stat (SLOStatMean, …) ≤ LimitMs.
type LatencyLimit struct {
	Metric  string  `json:"metric"`
	Stat    string  `json:"stat"`
	LimitMs float64 `json:"limit_ms"`
}

// SLO metrics: which distribution of the stage a latency limit reads (and which value of a request
// goodput reads).
const (
	SLOMetricTTFT = "ttft" // TTFT
	SLOMetricTTFO = "ttfo" // time to first output token
	SLOMetricTPOT = "tpot" // per-request TPOT
	SLOMetricITL  = "itl"  // pooled ITL (goodput: the request's own mean ITL)
	SLOMetricE2E  = "e2e"  // request latency
)

// SLO statistics.
const (
	SLOStatMean = "mean"
	SLOStatP50  = "p50"
	SLOStatP90  = "p90"
	SLOStatP95  = "p95"
	SLOStatP99  = "p99"
	SLOStatMax  = "max"
)

// SLO metrics and statistics in the order limits are checked and listed.
var (
	SLOMetrics = []string{SLOMetricTTFT, SLOMetricTTFO, SLOMetricTPOT, SLOMetricITL, SLOMetricE2E}
	SLOStats   = []string{SLOStatMean, SLOStatP50, SLOStatP90, SLOStatP95, SLOStatP99, SLOStatMax}
)

// CheckName is the name of the limit's check in stage.json: <metric>_<stat>_ms (the turn-1 names
// ttft_p95_ms and itl_p95_ms follow the same rule).
func (l LatencyLimit) CheckName() string { return l.Metric + "_" + l.Stat + "_ms" }

// Set reports whether any limit is set.
func (l SLOLimits) Set() bool { return len(l.Limits()) > 0 || !l.ErrorRateUnset }

// CostInputs are the cost inputs and E[turns]. A price of 0 is a real one (a machine you own); the
// price is not set only when Unpriced says so (`plload report --records` without --gpu-hourly-usd):
// then every cost is absent, not $0, and gpu_hourly_usd is null in JSON.
type CostInputs struct {
	GPUHourlyUSD  float64
	GPUCount      int
	ExpectedTurns float64
	Unpriced      bool
}

// Limits lists every latency limit set, the turn-1 fields folded in as ttft p95 and itl p95 (a
// bound given twice keeps the stricter), in SLOMetrics × SLOStats order. A limit of a metric or
// statistic it does not know is left out (UnmarshalJSON refuses them; code never builds them).
func (l SLOLimits) Limits() []LatencyLimit {
	type key struct{ metric, stat string }
	strictest := map[key]float64{}
	add := func(metric, stat string, ms float64) {
		k := key{metric, stat}
		if v, ok := strictest[k]; ms > 0 && (!ok || ms < v) {
			strictest[k] = ms
		}
	}
	add(SLOMetricTTFT, SLOStatP95, l.TTFTP95Ms)
	add(SLOMetricITL, SLOStatP95, l.ITLP95Ms)
	for _, x := range l.Latency {
		add(x.Metric, x.Stat, x.LimitMs)
	}
	var out []LatencyLimit
	for _, m := range SLOMetrics {
		for _, st := range SLOStats {
			if v, ok := strictest[key{m, st}]; ok {
				out = append(out, LatencyLimit{Metric: m, Stat: st, LimitMs: v})
			}
		}
	}
	return out
}

// sloJSON is SLOLimits in stage.json: a limit not set is null; latency lists the per-metric limits
// as they were given ([] when none), next to the turn-1 keys.
type sloJSON struct {
	TTFTP95Ms    *float64       `json:"ttft_p95_ms"`
	ITLP95Ms     *float64       `json:"itl_p95_ms"`
	ErrorRateMax *float64       `json:"error_rate_max"`
	Latency      []LatencyLimit `json:"latency"`
}

// MarshalJSON writes each limit, or null when it is not set.
func (l SLOLimits) MarshalJSON() ([]byte, error) {
	j := sloJSON{Latency: l.Latency}
	if j.Latency == nil {
		j.Latency = []LatencyLimit{} // a list is [] in JSON, never null
	}
	if l.TTFTP95Ms > 0 {
		j.TTFTP95Ms = &l.TTFTP95Ms
	}
	if l.ITLP95Ms > 0 {
		j.ITLP95Ms = &l.ITLP95Ms
	}
	if !l.ErrorRateUnset {
		j.ErrorRateMax = &l.ErrorRateMax
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the limits; null leaves a limit not set.
func (l *SLOLimits) UnmarshalJSON(b []byte) error {
	var j sloJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	for _, x := range j.Latency {
		if !slices.Contains(SLOMetrics, x.Metric) || !slices.Contains(SLOStats, x.Stat) || !(x.LimitMs > 0) {
			return fmt.Errorf("slo.latency: %q %q ≤ %v ms: accepted: metric one of %v, stat one of %v, limit_ms > 0", x.Metric, x.Stat, x.LimitMs, SLOMetrics, SLOStats)
		}
	}
	*l = SLOLimits{ErrorRateUnset: j.ErrorRateMax == nil}
	if len(j.Latency) > 0 {
		l.Latency = j.Latency
	}
	if j.TTFTP95Ms != nil {
		l.TTFTP95Ms = *j.TTFTP95Ms
	}
	if j.ITLP95Ms != nil {
		l.ITLP95Ms = *j.ITLP95Ms
	}
	if j.ErrorRateMax != nil {
		l.ErrorRateMax = *j.ErrorRateMax
	}
	return nil
}

// costJSON is CostInputs in stage.json: an unset price is null.
type costJSON struct {
	GPUHourlyUSD  *float64 `json:"gpu_hourly_usd"`
	GPUCount      int      `json:"gpu_count"`
	ExpectedTurns float64  `json:"expected_turns"`
}

// MarshalJSON writes the inputs, the price null when it is not set.
func (c CostInputs) MarshalJSON() ([]byte, error) {
	j := costJSON{GPUCount: c.GPUCount, ExpectedTurns: c.ExpectedTurns}
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
	*c = CostInputs{GPUCount: j.GPUCount, ExpectedTurns: j.ExpectedTurns, Unpriced: j.GPUHourlyUSD == nil}
	if j.GPUHourlyUSD != nil {
		c.GPUHourlyUSD = *j.GPUHourlyUSD
	}
	return nil
}
