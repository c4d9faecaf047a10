package metrics

// SLO verdicts.
const (
	SLOPass = "PASS"
	SLOFail = "FAIL"
	SLONA   = "N/A"
)

// SLOCheck is one limit of the SLO against its measured value.
type SLOCheck struct {
	Name  string   `json:"name"`
	Limit float64  `json:"limit"`
	Value *float64 `json:"value"` // null when unknown
	Pass  *bool    `json:"pass"`  // null when unknown
}

// SLOResult: any known value over its limit ⇒ FAIL; else any unknown ⇒ N/A; else PASS. Only the
// limits that are set are checked; with none set the verdict is N/A and Checks is empty.
type SLOResult struct {
	Verdict string     `json:"verdict"`
	Checks  []SLOCheck `json:"checks"`
}

func judge(l SLOLimits, s *StageSummary) SLOResult {
	r := SLOResult{Checks: []SLOCheck{}} // [] in JSON, never null
	check := func(name string, limit float64, set, known bool, value float64) {
		if !set {
			return
		}
		c := SLOCheck{Name: name, Limit: limit}
		if known {
			v, pass := value, value <= limit
			c.Value, c.Pass = &v, &pass
		}
		r.Checks = append(r.Checks, c)
	}
	check("ttft_p95_ms", l.TTFTP95Ms, l.TTFTP95Ms > 0, s.TTFT.Known(), s.TTFT.P95)
	check("itl_p95_ms", l.ITLP95Ms, l.ITLP95Ms > 0, s.ITL.Known(), s.ITL.P95)
	check("error_rate", l.ErrorRateMax, !l.ErrorRateUnset, s.ErrorRate.OK, s.ErrorRate.V)
	if len(r.Checks) == 0 {
		r.Verdict = SLONA
		return r
	}
	r.Verdict = SLOPass
	for _, c := range r.Checks {
		if c.Pass != nil && !*c.Pass {
			r.Verdict = SLOFail
			return r
		}
	}
	for _, c := range r.Checks {
		if c.Pass == nil {
			r.Verdict = SLONA
		}
	}
	return r
}

// CostResult is the stage's cost at its measured throughput; absent when the throughput is 0 or no
// price was given.
type CostResult struct {
	USDPer1MOut   *float64 `json:"usd_per_1m_out"`
	USDPer1KTurns *float64 `json:"usd_per_1k_turns"`
	USDPerSession *float64 `json:"usd_per_session"`
}

// cost: $/1M out = price × GPUs ÷ (out tok/s × 3600) × 10⁶; $/1K turns = price × GPUs ÷ (req/s × 3600)
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
		if s == nil || s.Partial || s.SLO.Verdict != SLOPass {
			continue
		}
		if best < 0 || s.Throughput.OutTokPerSec > stages[best].Throughput.OutTokPerSec {
			best = i
		}
	}
	return best
}
