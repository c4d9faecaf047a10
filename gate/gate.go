// Package gate decides whether a run passes (plload gate, and plload run with gate: rules or
// --baseline): threshold rules on its stages (Rule, Evaluate), noise-aware regressions against a
// baseline run (Regressions), and the verdict they make (GateResult), with its outputs: gate.json,
// JUnit XML, GitHub annotations and the printed table (docs/measurement.md). It reads the results
// model (package results); rendering runs for people is package report's.
package gate

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// Rule is one threshold: `[stage N:|headline:|all:] METRIC OP VALUE`, such as `ttft_p95 < 500ms`,
// `stage 2: error_rate < 1%`, `slo == PASS`, `goodput > 10/s`. Without a scope it applies to the
// headline stage (the best SLO-passing one), or to every stage where there is none; `headline:`
// applies to the headline stage only.
type Rule struct {
	Text   string
	Scope  string // one of the Scope* values
	Stage  int
	Metric string
	Op     string
	Value  float64
	Word   string // for slo
}

// The scopes of a rule.
const (
	// ScopeDefault: no scope written. The headline stage, or every stage where the run has none (no
	// SLO was set, or no stage passed it): a user who wrote `ttft_p95 < 500ms` asked about TTFT, not
	// about whether some stage met the SLO.
	ScopeDefault = ""
	// ScopeHeadline: `headline:` written. The headline stage only; a run without one fails the rule,
	// saying why there is none, since that is what the user asked to be judged.
	ScopeHeadline = "headline"
	ScopeAll      = "all"   // `all:`: every stage
	ScopeStage    = "stage" // `stage N:`: stage N
)

// gateMetric is one metric a rule may name: how to read it from a stage, and how its value is
// written (a latency such as 500ms, a fraction such as 1%, or a plain number such as 10/s).
type gateMetric struct {
	name string
	unit gateUnit
	get  func(*resultfiles.StageReport) (float64, bool)
}

type gateUnit int

const (
	unitMs       gateUnit = iota // a latency in ms: 500ms, 2s
	unitFraction                 // 1% or 0.01
	unitNumber                   // 10, 10/s, $0.40
)

// gateLatencies are the latency blocks a rule may name, each at every statistic of gateStats
// (ttft_p95, tpot_p99, e2e_mean, …).
var gateLatencies = []struct {
	name string
	get  func(*metrics.StageSummary) metrics.Dist
}{
	{"ttft", func(s *metrics.StageSummary) metrics.Dist { return s.TTFT }},
	{"ttfo", func(s *metrics.StageSummary) metrics.Dist { return s.TTFO }},
	{"itl", func(s *metrics.StageSummary) metrics.Dist { return s.ITL }},
	{"e2e", func(s *metrics.StageSummary) metrics.Dist { return s.E2E }},
	{"tpot", func(s *metrics.StageSummary) metrics.Dist { return s.TPOT }},
	{"ttft_from_intended", func(s *metrics.StageSummary) metrics.Dist { return s.TTFTFromIntended }},
	{"e2e_from_intended", func(s *metrics.StageSummary) metrics.Dist { return s.E2EFromIntended }},
	{"ttft_first_turn", func(s *metrics.StageSummary) metrics.Dist { return s.TTFTByTurn.First }},
	{"ttft_later_turns", func(s *metrics.StageSummary) metrics.Dist { return s.TTFTByTurn.Later }},
	{"send_lag", func(s *metrics.StageSummary) metrics.Dist { return s.SendLag }},
}

// gateStats are the statistics of a latency block a rule may name.
var gateStats = []struct {
	name string
	get  func(metrics.Dist) float64
}{
	{"mean", func(d metrics.Dist) float64 { return d.Mean }},
	{"p50", func(d metrics.Dist) float64 { return d.P50 }},
	{"p90", func(d metrics.Dist) float64 { return d.P90 }},
	{"p95", func(d metrics.Dist) float64 { return d.P95 }},
	{"p99", func(d metrics.Dist) float64 { return d.P99 }},
	{"max", func(d metrics.Dist) float64 { return d.Max }},
}

// gateScalars are the metrics a rule may name that are one number of a stage.
var gateScalars = []gateMetric{
	{"error_rate", unitFraction, func(r *resultfiles.StageReport) (float64, bool) { return r.Summary.ErrorRate.V, r.Summary.ErrorRate.OK }},
	{"cache_hit", unitFraction, func(r *resultfiles.StageReport) (float64, bool) { return r.Summary.CacheHit.V, r.Summary.CacheHit.OK }},
	{"out_tok_s", unitNumber, func(r *resultfiles.StageReport) (float64, bool) { return r.Summary.Throughput.OutTokPerSec, true }},
	{"req_s", unitNumber, func(r *resultfiles.StageReport) (float64, bool) { return r.Summary.Throughput.ReqPerSec, true }},
	{"goodput", unitNumber, func(r *resultfiles.StageReport) (float64, bool) {
		g := r.Summary.Throughput.GoodputPerSec
		return g.V, g.OK
	}},
	{"goodput_share", unitFraction, func(r *resultfiles.StageReport) (float64, bool) {
		return r.Summary.Goodput.Share.V, r.Summary.Goodput.Share.OK
	}},
	{"input_tok_s", unitNumber, func(r *resultfiles.StageReport) (float64, bool) { return r.Summary.Throughput.InTokPerSec, true }},
	{"total_tok_s", unitNumber, func(r *resultfiles.StageReport) (float64, bool) { return r.Summary.Throughput.TotalTokPerSec, true }},
	{"out_chars_s", unitNumber, func(r *resultfiles.StageReport) (float64, bool) {
		return r.Summary.Throughput.OutCharsPerSec.V, r.Summary.Throughput.OutCharsPerSec.OK
	}},
	{"in_flight_mean", unitNumber, func(r *resultfiles.StageReport) (float64, bool) { return r.Summary.InFlight.Mean, true }},
	{"in_flight_max", unitNumber, func(r *resultfiles.StageReport) (float64, bool) { return float64(r.Summary.InFlight.Max), true }},
	{"usd_per_1m_out", unitNumber, func(r *resultfiles.StageReport) (float64, bool) { return deref64(r.Summary.Cost.USDPer1MOut) }},
	{"usd_per_1k_turns", unitNumber, func(r *resultfiles.StageReport) (float64, bool) { return deref64(r.Summary.Cost.USDPer1KTurns) }},
	{"usd_per_session", unitNumber, func(r *resultfiles.StageReport) (float64, bool) { return deref64(r.Summary.Cost.USDPerSession) }},
	// GPU telemetry's (unknown where the stage read no GPU, or a gap left the energy unknown).
	{"j_per_out_token", unitNumber, gpuFigure(func(g *metrics.GPUSummary) metrics.Opt[float64] { return g.JPerOutToken })},
	{"j_per_1k_turns", unitNumber, gpuFigure(func(g *metrics.GPUSummary) metrics.Opt[float64] { return g.JPer1KTurns })},
	{"gpu_power_w", unitNumber, gpuFigure(func(g *metrics.GPUSummary) metrics.Opt[float64] { return g.PowerMeanW })},
	{"gpu_util", unitNumber, gpuFigure(func(g *metrics.GPUSummary) metrics.Opt[float64] { return g.UtilMeanPct })},
	{"energy_usd_per_1m_out", unitNumber, gpuFigure(func(g *metrics.GPUSummary) metrics.Opt[float64] { return g.EnergyUSDPer1MOut })},
}

// gpuFigure reads one of a stage's GPU figures; unknown without GPU telemetry.
func gpuFigure(get func(*metrics.GPUSummary) metrics.Opt[float64]) func(*resultfiles.StageReport) (float64, bool) {
	return func(r *resultfiles.StageReport) (float64, bool) {
		if r.GPU == nil {
			return 0, false
		}
		v := get(r.GPU)
		return v.V, v.OK
	}
}

// gateMetrics are the metrics a rule may name, by name: every latency block at every statistic,
// then the scalars.
var gateMetrics = func() map[string]gateMetric {
	out := map[string]gateMetric{}
	for _, l := range gateLatencies {
		for _, st := range gateStats {
			name := l.name + "_" + st.name
			out[name] = gateMetric{name, unitMs, dist(l.get, st.get)}
		}
	}
	for _, m := range gateScalars {
		out[m.name] = m
	}
	return out
}()

func deref64(v *float64) (float64, bool) {
	if v == nil {
		return 0, false
	}
	return *v, true
}

// dist reads one statistic of a latency block; unknown when the block has no value.
func dist(get func(*metrics.StageSummary) metrics.Dist, stat func(metrics.Dist) float64) func(*resultfiles.StageReport) (float64, bool) {
	return func(r *resultfiles.StageReport) (float64, bool) {
		d := get(r.Summary)
		if !d.Known() {
			return 0, false
		}
		return stat(d), true
	}
}

// GateMetricNames lists what a rule may name.
func GateMetricNames() []string {
	names := []string{"slo"}
	for n := range gateMetrics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var ruleRe = regexp.MustCompile(`^\s*(?:(headline|all|stage\s+(\d+))\s*:\s*)?([a-z0-9_]+)\s*(<=|>=|==|!=|<|>)\s*(\S+)\s*$`)

// ParseRule reads one rule, saying exactly what is wrong with a bad one.
func ParseRule(text string) (Rule, error) {
	m := ruleRe.FindStringSubmatch(text)
	if m == nil {
		return Rule{}, fmt.Errorf("rule %q: accepted: [stage N:|headline:|all:] METRIC OP VALUE, such as \"ttft_p95 < 500ms\" or \"stage 2: error_rate < 1%%\"", text)
	}
	r := Rule{Text: strings.TrimSpace(text), Scope: ScopeDefault, Metric: m[3], Op: m[4]}
	switch {
	case m[1] == "all":
		r.Scope = ScopeAll
	case m[1] == "headline":
		r.Scope = ScopeHeadline
	case m[2] != "":
		r.Scope, r.Stage = ScopeStage, atoi(m[2])
	}
	if r.Metric == "slo" {
		w := strings.ToUpper(m[5])
		if (w != metrics.SLOPass && w != metrics.SLOFail && w != metrics.SLONA) || (r.Op != "==" && r.Op != "!=") {
			return Rule{}, fmt.Errorf("rule %q: slo takes == or != and PASS, FAIL or N/A", text)
		}
		r.Word = w
		return r, nil
	}
	if _, ok := gateMetrics[r.Metric]; !ok {
		return Rule{}, fmt.Errorf("rule %q: unknown metric %q; accepted: %s", text, r.Metric, strings.Join(GateMetricNames(), ", "))
	}
	v, err := parseGateValue(gateMetrics[r.Metric].unit, m[5])
	if err != nil {
		return Rule{}, fmt.Errorf("rule %q: %v", text, err)
	}
	r.Value = v
	return r, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// parseGateValue reads 500ms, 2s (latencies, in ms), 1% or 0.01 (rates), 10/s, $0.40 or plain numbers.
func parseGateValue(unit gateUnit, s string) (float64, error) {
	switch unit {
	case unitMs:
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("value %q: accepted: a duration such as 500ms or 2s", s)
		}
		return float64(d) / 1e6, nil
	case unitFraction:
		if p, ok := strings.CutSuffix(s, "%"); ok {
			v, err := strconv.ParseFloat(p, 64)
			return v / 100, err
		}
		return strconv.ParseFloat(s, 64)
	}
	s = strings.TrimPrefix(strings.TrimSuffix(s, "/s"), "$")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q: accepted: a number (10, 10/s, $0.40)", s)
	}
	return v, nil
}

// Check is one evaluated check: a threshold or a baseline comparison.
type Check struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"` // threshold or regression
	Stage     int      `json:"stage,omitempty"`
	Candidate *float64 `json:"candidate,omitempty"`
	Baseline  *float64 `json:"baseline,omitempty"`
	Limit     string   `json:"limit"`
	// Interval is the 95 % interval of the relative change (regression checks).
	Interval *[2]float64 `json:"interval,omitempty"`
	Status   string      `json:"status"` // pass, fail, inconclusive (= not decided)
	Message  string      `json:"message"`
	// Cause says, for an inconclusive check, why it was not decided (one of the Cause* values); Run
	// names the run it is about (baseline, candidate, or both) when the cause lies in one run, and
	// Reason says it in words.
	Cause  string `json:"cause,omitempty"`
	Run    string `json:"run,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Why a check was not decided.
const (
	// CauseThin: the interval straddles the tolerance; more requests would decide it.
	CauseThin = "thin_evidence"
	// CauseFewSamples: fewer than minSamples requests with the metric in a run's stage.
	CauseFewSamples = "few_samples"
	// CauseStrained: the client was short of CPU in the run whose bias could have made the decision.
	CauseStrained = "client_strained"
	// CauseNoRecords: a run's records (profile_export.jsonl) are missing or unreadable.
	CauseNoRecords = "no_records"
	// CauseUnknown: the metric has no value in a run (no successful request in the stage).
	CauseUnknown = "unknown_value"
	// CauseNoBaselineStage: the baseline has no stage of that number to compare with.
	CauseNoBaselineStage = "no_baseline_stage"
	// CauseNotMeasured: a run's stage did not measure what it set out to (metrics.Measured): it was
	// cut short (partial), or it is a replay that fell behind its trace. Its numbers, whatever they
	// are, decide nothing.
	CauseNotMeasured = "stage_not_measured"
)

// noneMeasured says why no stage of a run can decide anything ("" when one can): every stage cut
// short or a replay that fell behind its trace, each named.
func noneMeasured(stages []*resultfiles.StageReport) string {
	var whys []string
	for _, st := range stages {
		why := notMeasured(st)
		if why == "" {
			return ""
		}
		whys = append(whys, why)
	}
	return strings.Join(whys, "; ")
}

// sloSet reports whether the run's stages were judged by an SLO.
func sloSet(stages []*resultfiles.StageReport) bool {
	return slices.ContainsFunc(stages, func(st *resultfiles.StageReport) bool { return st.SLO.Set() })
}

// notMeasured says, in the stage tables' words, why a stage's numbers cannot decide a check: ""
// when they can. A stage without a success is not among these: its unknown values say so.
func notMeasured(st *resultfiles.StageReport) string {
	switch sum := st.Summary; {
	case sum.Partial:
		return fmt.Sprintf("stage %02d is partial (cut short): its numbers are not the whole stage's", st.Stage)
	case sum.ReplayValid.OK && !sum.ReplayValid.V:
		return fmt.Sprintf("stage %02d is not a valid replay: %s", st.Stage, resultfiles.ReplayWarning(sum))
	}
	return ""
}

// Statuses of a check and verdicts of a gate.
const (
	StatusPass         = "pass"
	StatusFail         = "fail"
	StatusInconclusive = "inconclusive"

	VerdictPass      = "pass"
	VerdictFail      = "fail"
	VerdictUndecided = "undecided" // no check was decided
)

func ptr(v float64) *float64 { return &v }

func compare(v float64, op string, limit float64) bool {
	switch op {
	case "<":
		return v < limit
	case "<=":
		return v <= limit
	case ">":
		return v > limit
	case ">=":
		return v >= limit
	case "==":
		return v == limit
	}
	return v != limit
}

// Evaluate applies threshold rules to a run's stages. A rule without a scope is judged on the
// headline stage; where there is none — no SLO was set, or no stage passed it — on every stage, each
// check saying why, so `ttft_p95 < 500ms` reports each stage's ttft_p95 against 500 ms rather than
// failing for a limit the rule does not name (docs/measurement.md). A rule written `headline:` is
// judged on the headline stage only, and fails, saying why there is none, where there is none. A rule that fails on a stage whose
// client was strained is not decided where the strain could have made it fail (strainedThreshold).
func Evaluate(rules []Rule, stages []*resultfiles.StageReport) []Check {
	var out []Check
	sums := make([]*metrics.StageSummary, len(stages))
	for i, s := range stages {
		sums[i] = s.Summary
	}
	head := metrics.Headline(sums)
	for _, r := range rules {
		var targets []*resultfiles.StageReport
		lead := "" // why the rule is judged on every stage, when it is for want of a headline stage
		switch r.Scope {
		case ScopeAll:
			targets = stages
		case ScopeStage:
			for _, s := range stages {
				if s.Stage == r.Stage {
					targets = append(targets, s)
				}
			}
		default:
			switch why := noneMeasured(stages); {
			case head >= 0:
				targets = append(targets, stages[head])
			case why != "" && sloSet(stages):
				// No stage could have been the headline: not a failure of the server, an incomplete run.
				c := Check{Name: r.Text, Kind: "threshold", Limit: r.Text, Message: why + ", so there is no headline stage and the rule is not decided"}
				out = append(out, undecided(c, CauseNotMeasured, "candidate", why))
				continue
			case r.Scope == ScopeHeadline:
				// targets stays empty: noTarget says there is no headline stage, and why.
			default:
				targets, lead = stages, noHeadlineWhy(stages)+": with no headline stage, the rule is judged on every stage; "
			}
		}
		if len(targets) == 0 {
			out = append(out, Check{Name: r.Text, Kind: "threshold", Limit: r.Text, Status: "fail", Message: noTarget(r, stages)})
			continue
		}
		for _, s := range targets {
			c := threshold(r, s)
			c.Message = lead + c.Message
			out = append(out, c)
		}
	}
	return out
}

// threshold judges one rule on one stage.
func threshold(r Rule, s *resultfiles.StageReport) Check {
	c := Check{Name: r.Text, Kind: "threshold", Stage: s.Stage, Limit: r.Text}
	if why := notMeasured(s); why != "" {
		c.Message = why + ", so the rule is not decided"
		return undecided(c, CauseNotMeasured, "candidate", why)
	}
	if r.Metric == "slo" {
		ok := (s.Summary.SLO.Verdict == r.Word) == (r.Op == "==")
		c.Status, c.Message = status(ok), fmt.Sprintf("stage %02d SLO is %s", s.Stage, s.Summary.SLO.Verdict)
		if broken := s.Summary.SLO.Broken(); broken != "" {
			c.Message += " (" + broken + ")"
		}
		return strainedThreshold(c, r, s)
	}
	m := gateMetrics[r.Metric]
	v, known := m.get(s)
	if !known {
		c.Status, c.Message = "fail", fmt.Sprintf("stage %02d: %s is unknown (no data)", s.Stage, r.Metric)
		return c
	}
	unit := ""
	if m.unit == unitMs {
		unit = " ms"
	}
	c.Candidate = ptr(v)
	c.Status = status(compare(v, r.Op, r.Value))
	c.Message = fmt.Sprintf("stage %02d: %s = %s%s (limit %s %s%s)", s.Stage, r.Metric, fmtG(v), unit, r.Op, fmtG(r.Value), unit)
	return strainedThreshold(c, r, s)
}

// strainReads is how a strained client moves a metric: +1 it reads higher (latencies, and the cost
// per unit of work, as less work is done), −1 lower (throughputs), 0 not at all (errors, cache hits,
// requests in flight: counts the server's answers decide).
func strainReads(metric string) int {
	switch {
	case gateMetrics[metric].unit == unitMs, strings.HasPrefix(metric, "usd_"):
		return 1
	case metric == "error_rate", metric == "cache_hit", strings.HasPrefix(metric, "in_flight"):
		return 0
	}
	return -1
}

// strainedThreshold leaves a failed threshold undecided where the stage's client was strained and
// the strain could have made it fail, as a regression's is (strainedInjector): a strained client
// reads latencies longer and throughput lower, never the other way, so a pass stands, a failure in
// the direction the strain cannot push stands, and so does one that still fails with every latency
// shorter by the strain's bounded lateness (when the only warning is the timestamp lag). The reason
// names the largest cause of the strain.
func strainedThreshold(c Check, r Rule, s *resultfiles.StageReport) Check {
	h := s.Injector
	if c.Status != StatusFail || len(h.Warnings()) == 0 {
		return c
	}
	late, bounded := boundedLateness(h)
	stands := false
	if r.Metric == "slo" {
		stands = sloFailStands(r, s, late, bounded)
	} else {
		dir := strainReads(r.Metric)
		lowerIsPass := r.Op == "<" || r.Op == "<="
		switch {
		case dir == 0, dir > 0 && (r.Op == ">" || r.Op == ">="), dir < 0 && lowerIsPass:
			stands = true // the strain pushes the value the other way from this failure
		case bounded && dir > 0 && gateMetrics[r.Metric].unit == unitMs && c.Candidate != nil:
			stands = !compare(*c.Candidate-late, r.Op, r.Value)
		}
	}
	if stands {
		c.Message += fmt.Sprintf("; the client was strained (%s), which cannot have made this fail", h.Cause())
		return c
	}
	why := fmt.Sprintf("the client was strained (%s): it reads latencies longer and throughput lower than the server's, so this failure may be the client's", h.Cause())
	c.Message += "; not decided: " + why
	return undecided(c, CauseStrained, "candidate", why)
}

// sloFailStands reports whether a failed slo rule stands on a strained stage: the verdict the rule
// refused is not the one the strain can fake (a FAIL), or a limit the strain cannot move was broken
// (the error rate), or a latency limit is broken even with the strain's bounded lateness taken off.
func sloFailStands(r Rule, s *resultfiles.StageReport, late float64, bounded bool) bool {
	if s.Summary.SLO.Verdict != metrics.SLOFail {
		return true
	}
	for _, ch := range s.Summary.SLO.Checks {
		if ch.Pass == nil || *ch.Pass || ch.Value == nil {
			continue
		}
		if ch.Name == "error_rate" || bounded && *ch.Value-late > ch.Limit {
			return true
		}
	}
	return false
}

// noTarget says why a rule has no stage to check: the run has no stage of its number, or, for a
// `headline:` rule, no headline stage (and why, and how to judge the stages anyway).
func noTarget(r Rule, stages []*resultfiles.StageReport) string {
	if r.Scope != ScopeHeadline {
		return fmt.Sprintf("the run has no stage %d", r.Stage)
	}
	return "there is no headline stage for a headline: rule: " + noHeadlineWhy(stages) +
		"; drop headline: to judge every stage, or write all: or stage N:"
}

// noHeadlineWhy says why the run has no headline stage: no SLO was set, or no stage passed it
// (naming what each stage broke, in the stage tables' words).
func noHeadlineWhy(stages []*resultfiles.StageReport) string {
	if !sloSet(stages) {
		return "no SLO was set (the headline stage is the one that passes it)"
	}
	sums := make([]*metrics.StageSummary, len(stages))
	for i, st := range stages {
		sums[i] = st.Summary
	}
	why := resultfiles.NoPass(sums)
	if broken := resultfiles.SLOBroken(stages, resultfiles.BrokenPerStage); broken != "" {
		why += " (" + broken + ")"
	}
	return why
}

func status(ok bool) string {
	if ok {
		return "pass"
	}
	return "fail"
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// GatePassed is true when no check failed (inconclusive checks do not fail a gate).
func GatePassed(checks []Check) bool {
	for _, c := range checks {
		if c.Status == StatusFail {
			return false
		}
	}
	return true
}

// GateVerdict is the gate's verdict:
//   - fail when any check failed;
//   - undecided when no check was decided (the gate checked nothing), or when a check that may hold a
//     regression was not decided because of a run (BlocksVerdict): the candidate's strained client
//     kept a regression's evidence from counting, or records, a value or a stage were missing so the
//     comparison was never made. A real 30 % TTFT regression measured by a strained client is such a
//     check; passing the run beside it would ship the regression on a green job;
//   - pass otherwise. A pass may carry undecided checks — thin evidence, or a pass a strained
//     baseline kept from counting (the candidate measured no worse; only the yardstick was soft) —
//     printed, counted and annotated, because a gate that went red on every such check on a shared
//     runner would be switched off.
func GateVerdict(checks []Check) string {
	decided, blocked := 0, false
	for _, c := range checks {
		switch {
		case c.Status == StatusFail:
			return VerdictFail
		case c.Status == StatusPass:
			decided++
		case BlocksVerdict(c):
			blocked = true
		}
	}
	if decided == 0 || blocked {
		return VerdictUndecided
	}
	return VerdictPass
}

// RunKept reports whether a check was not decided because of something about one of the runs — its
// client strained, its records gone, the metric or the stage missing — as opposed to evidence that
// is merely thin. Those are what a user can fix, so each gets a warning line.
func RunKept(c Check) bool {
	if c.Status != StatusInconclusive {
		return false
	}
	switch c.Cause {
	case CauseStrained, CauseNoRecords, CauseUnknown, CauseNoBaselineStage, CauseNotMeasured:
		return true
	}
	return false
}

// BlocksVerdict reports whether an undecided check keeps the gate from passing: one a run kept from a
// decision, except a pass that only a strained baseline kept from counting (its evidence says "no
// worse"; see strainedInjector).
func BlocksVerdict(c Check) bool {
	return RunKept(c) && !(c.Cause == CauseStrained && c.Run == "baseline")
}
