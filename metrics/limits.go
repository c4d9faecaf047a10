package metrics

import "encoding/json"

// The inputs a stage is judged and priced by, and their "not set" states: a limit or a price that
// was not given is not a zero (which would FAIL every stage, or make the GPUs free).

// SLOLimits are the SLO a stage is judged by. A limit that is not set takes no part in the verdict
// and is null in JSON; with none set the verdict is N/A. A zero TTFT or ITL limit is not set (no
// latency meets it, and a scenario must give a positive one); a zero error-rate limit is a real one
// (no errors allowed), so that limit is not set only when ErrorRateUnset says so (`plload report
// --records` without --error-rate-max).
type SLOLimits struct {
	TTFTP95Ms      float64
	ITLP95Ms       float64
	ErrorRateMax   float64
	ErrorRateUnset bool
}

// Set reports whether any limit is set.
func (l SLOLimits) Set() bool { return l.TTFTP95Ms > 0 || l.ITLP95Ms > 0 || !l.ErrorRateUnset }

// CostInputs are the cost inputs and E[turns]. A price of 0 is a real one (a machine you own); the
// price is not set only when Unpriced says so (`plload report --records` without --gpu-hourly-usd):
// then every cost is absent, not $0, and gpu_hourly_usd is null in JSON.
type CostInputs struct {
	GPUHourlyUSD  float64
	GPUCount      int
	ExpectedTurns float64
	Unpriced      bool
}

// sloJSON is SLOLimits in stage.json: a limit not set is null.
type sloJSON struct {
	TTFTP95Ms    *float64 `json:"ttft_p95_ms"`
	ITLP95Ms     *float64 `json:"itl_p95_ms"`
	ErrorRateMax *float64 `json:"error_rate_max"`
}

// MarshalJSON writes each limit, or null when it is not set.
func (l SLOLimits) MarshalJSON() ([]byte, error) {
	var j sloJSON
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
	*l = SLOLimits{ErrorRateUnset: j.ErrorRateMax == nil}
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
