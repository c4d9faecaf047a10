package metrics

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The SLO a stage is judged by, its verdict, and the per-request half of it that goodput counts. A
// limit that was not given is not a zero (which would FAIL every stage).

// SLOLimits are the SLO a stage is judged by. A limit that is not set takes no part in the verdict
// and is null in JSON; with none set the verdict is N/A. A zero latency limit is not set (no latency
// meets it, and a scenario must give a positive one); a zero error-rate limit is a real one (no
// errors allowed), so that limit is not set only when ErrorRateUnset says so (`plload report
// --records` without --error-rate-max).
//
// TTFTP95Ms and ITLP95Ms are the turn-1 limits (ttft p95, pooled itl p95); Latency holds any metric
// × statistic (docs/measurement.md). The stage is judged by both, folded (Limits): a bound given both ways keeps
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
	// SLOMetricRAGTurn is a RAG turn's whole latency, the turn's due time (its first step's intended start) to its chat's last
	// token (a chat request of a RAG turn: rag_turn_start_ns to request_end_ns).
	SLOMetricRAGTurn = "rag_turn"
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
	SLOMetrics = []string{SLOMetricTTFT, SLOMetricTTFO, SLOMetricTPOT, SLOMetricITL, SLOMetricE2E, SLOMetricRAGTurn}
	SLOStats   = []string{SLOStatMean, SLOStatP50, SLOStatP90, SLOStatP95, SLOStatP99, SLOStatMax}
)

// CheckName is the name of the limit's check in stage.json: <metric>_<stat>_ms (the turn-1 names
// ttft_p95_ms and itl_p95_ms follow the same rule).
func (l LatencyLimit) CheckName() string { return l.Metric + "_" + l.Stat + "_ms" }

// Set reports whether any limit is set.
func (l SLOLimits) Set() bool { return len(l.Limits()) > 0 || !l.ErrorRateUnset }

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

// judge checks every limit set — each latency limit against the stage's distribution of its metric
// (itl: the pooled per-token gaps; tpot: the per-request TPOT), then the error rate.
func judge(l SLOLimits, s *StageSummary) SLOResult {
	r := SLOResult{Checks: []SLOCheck{}} // [] in JSON, never null
	check := func(name string, limit float64, known bool, value float64) {
		c := SLOCheck{Name: name, Limit: limit}
		if known {
			v, pass := value, value <= limit
			c.Value, c.Pass = &v, &pass
		}
		r.Checks = append(r.Checks, c)
	}
	for _, lim := range l.Limits() {
		v, known := s.LatencyDist(lim.Metric).Stat(lim.Stat)
		check(lim.CheckName(), lim.LimitMs, known, v)
	}
	if !l.ErrorRateUnset {
		check("error_rate", l.ErrorRateMax, s.ErrorRate.OK, s.ErrorRate.V)
	}
	r.Verdict = verdict(r.Checks)
	return r
}

// verdict: no check ⇒ N/A; any known value over its limit ⇒ FAIL; else any unknown ⇒ N/A; else PASS.
func verdict(checks []SLOCheck) string {
	if len(checks) == 0 {
		return SLONA
	}
	v := SLOPass
	for _, c := range checks {
		switch {
		case c.Pass == nil:
			v = SLONA
		case !*c.Pass:
			return SLOFail
		}
	}
	return v
}

// LatencyDist is the stage's distribution an SLO metric is judged on (N = 0 for a name it does not
// know).
func (s *StageSummary) LatencyDist(metric string) Dist {
	switch metric {
	case SLOMetricTTFT:
		return s.TTFT
	case SLOMetricTTFO:
		return s.TTFO
	case SLOMetricTPOT:
		return s.TPOT
	case SLOMetricITL:
		return s.ITL
	case SLOMetricE2E:
		return s.E2E
	case SLOMetricRAGTurn:
		if s.RAG != nil {
			return s.RAG.Turn
		}
	}
	return Dist{}
}

// meetsLimits is goodput's test of one request (DistServe): its own value of each limit's metric is
// within the limit, whatever the statistic (a p95 limit of 500 ms asks this request's TTFT ≤ 500 ms).
// A request with one output token has no TPOT or ITL and meets those limits; one without a TTFT, TTFO
// or E2E (nothing streamed, or only reasoning) fails theirs. With no limit every request meets them.
func meetsLimits(limits []LatencyLimit, r *Record) bool {
	for _, l := range limits {
		v, ok := RequestValue(l.Metric, r)
		switch {
		case !ok && (l.Metric == SLOMetricTPOT || l.Metric == SLOMetricITL || l.Metric == SLOMetricRAGTurn):
			continue // a request without the metric (one token; a tool round, not a RAG turn's chat)
		case !ok || v > l.LimitMs:
			return false
		}
	}
	return true
}

// RequestValue is one request's own value of an SLO metric, in ms: itl is its mean ITL (the record's
// inter_token_latency, else its TPOT).
func RequestValue(metric string, r *Record) (float64, bool) {
	var v Opt[float64]
	switch metric {
	case SLOMetricTTFT:
		v = r.TTFT
	case SLOMetricTTFO:
		v = r.TTFO
	case SLOMetricTPOT:
		v = RequestTPOT(r)
	case SLOMetricITL:
		if v = r.InterTokenLatency; !v.OK {
			v = RequestTPOT(r)
		}
	case SLOMetricE2E:
		v = r.RequestLatency
	case SLOMetricRAGTurn:
		if r.RAGTurnStartNs.OK && r.RequestEndNs.OK {
			v = Some(Ms(r.RequestEndNs.V - r.RAGTurnStartNs.V))
		}
	}
	return v.V, v.OK
}

// RequestTPOT is (E2E − TTFT) ÷ (OSL − 1), OSL = output_sequence_length with reasoning tokens: the
// time per output token after the first, as AIPerf's inter_token_latency; absent below 2 tokens.
func RequestTPOT(r *Record) Opt[float64] {
	if !r.RequestLatency.OK || !r.TTFT.OK || !r.OutputSequenceLength.OK || r.OutputSequenceLength.V < 2 {
		return Opt[float64]{}
	}
	return Some((r.RequestLatency.V - r.TTFT.V) / float64(r.OutputSequenceLength.V-1))
}
