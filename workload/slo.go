package workload

import "time"

// SLO is the latency and error objective each stage is judged by. The turn-1 keys (ttft_p95,
// itl_p95, error_rate_max) keep working; the per-metric blocks set any statistic of TTFT, TTFO,
// TPOT, ITL or E2E (docs/measurement.md). Nothing set: no verdict (N/A), never a PASS.
type SLO struct {
	TTFTP95      Duration `yaml:"ttft_p95,omitempty"`
	ITLP95       Duration `yaml:"itl_p95,omitempty"`
	ErrorRateMax *float64 `yaml:"error_rate_max,omitempty"`

	TTFT *Limits `yaml:"ttft,omitempty,flow"`
	TTFO *Limits `yaml:"ttfo,omitempty,flow"`
	TPOT *Limits `yaml:"tpot,omitempty,flow"`
	ITL  *Limits `yaml:"itl,omitempty,flow"`
	E2E  *Limits `yaml:"e2e,omitempty,flow"`
	// RAGTurn bounds a RAG turn's whole latency, question to last token (session.rag).
	RAGTurn *Limits `yaml:"rag_turn,omitempty,flow"`
	// ErrorRate is error_rate_max's shorter name; a file may set one of them.
	ErrorRate *float64 `yaml:"error_rate,omitempty"`
	// Window is the length of the windows in which a stage whose load rises has its latency limits
	// judged, for the time to absorb the rise (docs/measurement.md); 0: DefaultAbsorbWindow.
	Window Duration `yaml:"window,omitempty"`
}

// DefaultAbsorbWindow is slo.window when the file does not set it.
const DefaultAbsorbWindow = 10 * time.Second

// AbsorbWindow is slo.window, or DefaultAbsorbWindow when it is not set.
func (s SLO) AbsorbWindow() time.Duration {
	if s.Window > 0 {
		return s.Window.D()
	}
	return DefaultAbsorbWindow
}

// Limits are the bounds set on one latency metric, by statistic (0: not set).
type Limits struct {
	Mean Duration `yaml:"mean,omitempty"`
	P50  Duration `yaml:"p50,omitempty"`
	P90  Duration `yaml:"p90,omitempty"`
	P95  Duration `yaml:"p95,omitempty"`
	P99  Duration `yaml:"p99,omitempty"`
	Max  Duration `yaml:"max,omitempty"`
}

// SLOLimit is one latency bound: Metric (ttft, ttfo, tpot, itl, e2e) at Stat (mean, p50, p90, p95,
// p99, max) ≤ Limit.
type SLOLimit struct {
	Metric, Stat string
	Limit        time.Duration
}

// SLO metrics and statistics, in the order limits are listed.
var (
	SLOMetrics = []string{"ttft", "ttfo", "tpot", "itl", "e2e", "rag_turn"}
	SLOStats   = []string{"mean", "p50", "p90", "p95", "p99", "max"}
)

// LatencyLimits lists every latency bound set, the turn-1 keys as ttft p95 and itl p95 (a bound
// set both ways keeps the stricter), in SLOMetrics × SLOStats order.
func (s SLO) LatencyLimits() []SLOLimit {
	var out []SLOLimit
	for _, metric := range SLOMetrics {
		l := s.block(metric)
		for i, d := range []Duration{l.Mean, l.P50, l.P90, l.P95, l.P99, l.Max} {
			if d > 0 {
				out = append(out, SLOLimit{Metric: metric, Stat: SLOStats[i], Limit: d.D()})
			}
		}
	}
	return out
}

// block is one metric's limits with the turn-1 keys folded in.
func (s SLO) block(metric string) Limits {
	var l Limits
	if p := s.limitsOf(metric); p != nil {
		l = *p
	}
	legacy := map[string]Duration{"ttft": s.TTFTP95, "itl": s.ITLP95}[metric]
	if legacy > 0 && (l.P95 == 0 || legacy < l.P95) {
		l.P95 = legacy
	}
	return l
}

// limitsOf is the block the file wrote for metric (nil: none).
func (s SLO) limitsOf(metric string) *Limits {
	return map[string]*Limits{"ttft": s.TTFT, "ttfo": s.TTFO, "tpot": s.TPOT, "itl": s.ITL, "e2e": s.E2E, "rag_turn": s.RAGTurn}[metric]
}

// ErrorRateLimit is the most errors ÷ requests allowed, and whether one is set (0 is a limit: no
// errors allowed).
func (s SLO) ErrorRateLimit() (float64, bool) {
	switch {
	case s.ErrorRate != nil:
		return *s.ErrorRate, true
	case s.ErrorRateMax != nil:
		return *s.ErrorRateMax, true
	}
	return 0, false
}

// IsSet reports whether the scenario sets any limit at all.
func (s SLO) IsSet() bool {
	_, errSet := s.ErrorRateLimit()
	return errSet || len(s.LatencyLimits()) > 0
}

// slo checks the limits: each one set is > 0 (a fraction for the error rate), and a scenario without
// any is said once, because its every verdict will be N/A.
func (c *checker) slo() {
	s := c.s
	if !s.has("slo") && !c.bad["slo"] {
		c.warnf("slo", "no SLO limit is set: every stage's SLO verdict will be N/A and goodput unknown; accepted: %s", sloExample(s))
		return
	}
	// A window too short to hold the requests it judges measures nothing (1 ms windows wrote 19,846
	// unjudged ones): a second at least.
	if s.has("slo.window") && s.SLO.Window < Duration(time.Second) {
		c.errorf("slo.window", "found %s; accepted: a duration of at least 1s (each window needs requests enough to judge a percentile)", s.SLO.Window)
	}
	c.positive("slo.ttft_p95", s.SLO.TTFTP95)
	c.positive("slo.itl_p95", s.SLO.ITLP95)
	for _, metric := range SLOMetrics {
		for _, stat := range SLOStats {
			c.positive("slo."+metric+"."+stat, s.SLO.statLimit(metric, stat))
		}
	}
	if s.SLO.ErrorRate != nil && s.SLO.ErrorRateMax != nil {
		c.errorf("slo.error_rate", "both error_rate and error_rate_max are set; accepted: one of them (they are the same limit)")
	}
	for path, v := range map[string]*float64{"slo.error_rate": s.SLO.ErrorRate, "slo.error_rate_max": s.SLO.ErrorRateMax} {
		if v != nil {
			c.fraction(path, *v)
		}
	}
	if !s.SLO.IsSet() && len(c.issues.Errors()) == 0 { // `slo: {}`, as a resolved file without limits writes it
		c.warnf("slo", "no SLO limit is set: every stage's SLO verdict will be N/A and goodput unknown; accepted: %s", sloExample(s))
	}
}

// statLimit is the limit the file wrote at slo.<metric>.<stat> (0: none), before folding.
func (s SLO) statLimit(metric, stat string) Duration {
	l := s.limitsOf(metric)
	if l == nil {
		return 0
	}
	return map[string]Duration{"mean": l.Mean, "p50": l.P50, "p90": l.P90, "p95": l.P95, "p99": l.P99, "max": l.Max}[stat]
}

// sloExample is an SLO the scenario's requests can meet: a retrieval stage's answers have only a
// latency (e2e), a chat's have a first token and token gaps.
func sloExample(s *Scenario) string {
	if s.Retrieval() {
		return "slo: {e2e: {p95: 200ms}, error_rate: 0.01}"
	}
	return "slo: {ttft: {p95: 500ms}, tpot: {p99: 50ms}, error_rate: 0.01}"
}
