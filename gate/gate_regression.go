package gate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// Regressions: a candidate run against a baseline, stage by stage, each metric decided only when the
// evidence (a bootstrap of the records, or a throughput's counting noise) and the clients allow it.

// Tolerances are the largest accepted relative regressions, by metric.
type Tolerances map[string]float64

// DefaultTolerances are used for every metric a --max-regression list does not name.
func DefaultTolerances() Tolerances {
	return Tolerances{"ttft_p95": 0.10, "itl_p95": 0.10, "e2e_p95": 0.10, "out_tok_s": 0.05}
}

// ParseTolerances reads "ttft_p95=10%,out_tok_s=5%" on top of the defaults.
func ParseTolerances(s string) (Tolerances, error) {
	t := DefaultTolerances()
	if strings.TrimSpace(s) == "" {
		return t, nil
	}
	for _, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		pctV, isPct := strings.CutSuffix(v, "%")
		f, err := strconv.ParseFloat(pctV, 64)
		if !ok || err != nil || f < 0 {
			return nil, fmt.Errorf("--max-regression %q: accepted: METRIC=PERCENT, such as ttft_p95=10%%", item)
		}
		if _, known := regressionMetrics[k]; !known {
			return nil, fmt.Errorf("--max-regression %q: accepted metrics: %s", item, strings.Join(regressionNames, ", "))
		}
		if isPct {
			f /= 100
		}
		t[k] = f
	}
	return t, nil
}

// regressionMetrics: for latencies, the samples grouped by request and the percentile (a cluster
// bootstrap; higher is worse); for throughputs (lower is worse) only stage.json's numbers and request
// counts exist.
// regressionNames are the metrics a baseline comparison may name, in the order errors list them.
var regressionNames = []string{"ttft_p50", "ttft_p95", "ttft_p99", "itl_p95", "itl_p99", "e2e_p95", "out_tok_s", "req_s", "goodput"}

var regressionMetrics = map[string]struct {
	samples func(metrics.StageSeries) [][]float64 // nil: a throughput, lower is worse
	p       float64
}{
	"ttft_p50":  {ttftSamples, 50},
	"ttft_p95":  {ttftSamples, 95},
	"ttft_p99":  {ttftSamples, 99},
	"itl_p95":   {itlSamples, 95},
	"itl_p99":   {itlSamples, 99},
	"e2e_p95":   {func(s metrics.StageSeries) [][]float64 { return metrics.Singletons(s.E2E) }, 95},
	"out_tok_s": {nil, 0},
	"req_s":     {nil, 0},
	"goodput":   {nil, 0},
}

func ttftSamples(s metrics.StageSeries) [][]float64 { return metrics.Singletons(s.TTFT) }

func itlSamples(s metrics.StageSeries) [][]float64 { return s.ITLByRequest }

// minSamples is the fewest requests with a latency sample per side a bootstrap decision rests on.
const minSamples = 30

// Samples returns a stage's latency samples for a run ("baseline" or "candidate"), or an error saying
// why its records cannot be read.
type Samples func(run string, st *resultfiles.StageReport) (*metrics.StageSeries, error)

// Regressions compares a candidate run with a baseline, stage by stage number. Every candidate stage
// yields a check per tolerance, decided or saying why not: nothing is left out silently.
func Regressions(base, cand []*resultfiles.StageReport, tol Tolerances, samples Samples) []Check {
	var out []Check
	byStage := map[int]*resultfiles.StageReport{}
	for _, s := range base {
		byStage[s.Stage] = s
	}
	names := make([]string, 0, len(tol))
	for n := range tol {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, c := range cand {
		b, ok := byStage[c.Stage]
		if !ok {
			why := fmt.Sprintf("the baseline has no stage %02d to compare with", c.Stage)
			out = append(out, Check{Name: fmt.Sprintf("stage %02d regressions", c.Stage), Kind: "regression", Stage: c.Stage,
				Limit: "a baseline stage", Status: StatusInconclusive, Message: why, Cause: CauseNoBaselineStage, Run: "baseline", Reason: why})
			continue
		}
		// Records are read once per stage and run, not once per metric.
		series := map[string]*metrics.StageSeries{}
		seriesErr := map[string]error{}
		read := func(run string, st *resultfiles.StageReport) {
			if _, done := series[run]; !done && seriesErr[run] == nil {
				s, err := samples(run, st)
				if err == nil && s == nil {
					err = fmt.Errorf("no records")
				}
				series[run], seriesErr[run] = s, err
			}
		}
		for _, name := range names {
			out = append(out, regression(name, tol[name], b, c, read, series, seriesErr))
		}
	}
	return out
}

// regression decides one metric of one stage pair.
func regression(name string, limit float64, b, c *resultfiles.StageReport, read func(string, *resultfiles.StageReport),
	series map[string]*metrics.StageSeries, seriesErr map[string]error) Check {
	ch := Check{Name: fmt.Sprintf("stage %02d %s regression", c.Stage, name), Kind: "regression", Stage: c.Stage,
		Limit: fmt.Sprintf("≤ %.0f%% worse", 100*limit)}
	for _, run := range []struct {
		name string
		st   *resultfiles.StageReport
	}{{"baseline", b}, {"candidate", c}} {
		if why := notMeasured(run.st); why != "" {
			ch.Message = fmt.Sprintf("%s in the %s run", why, run.name)
			return undecided(ch, CauseNotMeasured, run.name, why)
		}
	}
	bv, bok := gateMetrics[name].get(b)
	cv, cok := gateMetrics[name].get(c)
	if !bok || !cok {
		run := map[[2]bool]string{{false, true}: "baseline", {true, false}: "candidate", {false, false}: "baseline and candidate"}[[2]bool{bok, cok}]
		why := fmt.Sprintf("%s is unknown in the %s run (no successful request with it)", name, run)
		ch.Message = why
		return undecided(ch, CauseUnknown, run, why)
	}
	ch.Baseline, ch.Candidate = ptr(bv), ptr(cv)
	p := pair{name: name, limit: limit, bv: bv, cv: cv, b: b, c: c}
	var ch2 Check
	var m change
	if samples := regressionMetrics[name].samples; samples != nil {
		read("baseline", b)
		read("candidate", c)
		var decided bool
		if ch2, m, decided = p.latency(ch, samples, series, seriesErr); !decided {
			return ch2
		}
	} else {
		ch2, m = p.throughput(ch)
	}
	return p.settle(ch2, m)
}

// pair is one metric of a baseline stage and its candidate, known in both.
type pair struct {
	name   string
	limit  float64
	bv, cv float64
	b, c   *resultfiles.StageReport
}

// change is a decided comparison: the 95 % interval of how much worse the candidate is, and what a
// client delay of D ms is relative to (so D ÷ scaleMs moves the interval).
type change struct {
	worse   [2]float64
	scaleMs func(*resultfiles.StageReport) float64
}

// undecided marks ch not decided, saying why.
func undecided(ch Check, cause, run, why string) Check {
	ch.Status, ch.Cause, ch.Run, ch.Reason = StatusInconclusive, cause, run, why
	return ch
}

// latency compares a latency percentile on the records: a cluster bootstrap of the relative change.
// decided is false when the records are missing or too few (ch then says why).
func (p pair) latency(ch Check, samples func(metrics.StageSeries) [][]float64,
	series map[string]*metrics.StageSeries, seriesErr map[string]error) (_ Check, _ change, decided bool) {
	var missing, whys []string
	for _, run := range []string{"baseline", "candidate"} {
		if err := seriesErr[run]; err != nil {
			missing = append(missing, run)
			whys = append(whys, fmt.Sprintf("the %s run's records cannot be read (%v)", run, err))
		}
	}
	if len(missing) > 0 {
		why := strings.Join(whys, "; ") + ": latency percentiles are compared on records"
		ch.Message = fmt.Sprintf("%s %s → %s ms: not decided: %s", p.name, fmtG(p.bv), fmtG(p.cv), why)
		return undecided(ch, CauseNoRecords, strings.Join(missing, " and "), why), change{}, false
	}
	bs, cs := samples(*series["baseline"]), samples(*series["candidate"])
	if len(bs) < minSamples || len(cs) < minSamples {
		why := fmt.Sprintf("fewer than %d requests with %s in a run (%d in the baseline, %d in the candidate): too thin to decide; run the stage longer", minSamples, p.name, len(bs), len(cs))
		ch.Message = fmt.Sprintf("%s %s → %s ms: %s", p.name, fmtG(p.bv), fmtG(p.cv), why)
		return undecided(ch, CauseFewSamples, "", why), change{}, false
	}
	iv := metrics.BootstrapRelDiff(bs, cs, regressionMetrics[p.name].p, 1000, uint64(p.c.Stage))
	ch.Interval = &[2]float64{iv.Lo, iv.Hi}
	ch.Status = decide(iv.Lo, iv.Hi, p.limit)
	ch.Message = fmt.Sprintf("%s %s → %s ms (%+.1f%%, 95%% interval %+.1f%% … %+.1f%%, tolerance %.0f%%; %s vs %s)",
		p.name, fmtG(p.bv), fmtG(p.cv), 100*iv.Point, 100*iv.Lo, 100*iv.Hi, 100*p.limit, sampleCount(bs), sampleCount(cs))
	// A delay of D ms on the strained run's measurements moves the relative change by D ÷ the
	// baseline's value (the candidate's c−D against b, or c against b−D).
	bv := p.bv
	return ch, change{worse: [2]float64{iv.Lo, iv.Hi}, scaleMs: func(*resultfiles.StageReport) float64 { return bv }}, true
}

// throughput compares a throughput: one number per run, counted over N requests. Its relative noise
// is about 1/√N (a Poisson count), so the 95 % interval of the change is ±1.96·√(1/Nb + 1/Nc). Lower
// is worse, so the "worse" interval is the change's, negated.
func (p pair) throughput(ch Check) (Check, change) {
	nb, nc := float64(p.b.Summary.Throughput.Requests), float64(p.c.Summary.Throughput.Requests)
	rel := 0.0
	if p.bv > 0 {
		rel = p.cv/p.bv - 1
	}
	half := math.Inf(1)
	if nb > 0 && nc > 0 {
		half = 1.96 * math.Sqrt(1/nb+1/nc)
	}
	ch.Interval = &[2]float64{rel - half, rel + half}
	ch.Status = decide(-rel-half, -rel+half, p.limit)
	ch.Message = fmt.Sprintf("%s %s → %s (%+.1f%%, 95%% interval ±%.1f%% from %.0f and %.0f requests, tolerance %.0f%%)",
		p.name, fmtG(p.bv), fmtG(p.cv), 100*rel, 100*half, nb, nc, 100*p.limit)
	// A delay of D ms per request lowers a closed loop's throughput by about D ÷ its cycle; the mean
	// end-to-end latency is shorter than the cycle (think time is left out), so D ÷ it overstates the
	// effect, which is the safe side.
	scale := func(st *resultfiles.StageReport) float64 {
		if st.Summary.E2E.Known() {
			return st.Summary.E2E.Mean
		}
		return 0
	}
	return ch, change{worse: [2]float64{-rel - half, -rel + half}, scaleMs: scale}
}

// settle keeps a decision only when the evidence and the clients allow it: an interval that
// straddles the tolerance is thin evidence, and a strained client that could have swayed it leaves
// it undecided.
func (p pair) settle(ch Check, m change) Check {
	if ch.Status == StatusInconclusive {
		why := "the interval straddles the tolerance: the evidence is too thin to decide; more requests per stage would decide it"
		ch.Message += ": " + why
		ch.Cause, ch.Reason = CauseThin, why
		return ch
	}
	sways := func(st *resultfiles.StageReport, lateMs float64) bool {
		scale := m.scaleMs(st)
		if scale <= 0 {
			return true
		}
		d := lateMs / scale
		if ch.Status == StatusFail { // the candidate's numbers, less the delay, must still fail
			return m.worse[0]-d <= p.limit
		}
		// the candidate against a baseline better by the delay must still pass
		return d >= 1 || (1+m.worse[1])/(1-d)-1 > p.limit
	}
	run, why, note := strainedInjector(p.b, p.c, ch.Status, sways)
	if why != "" {
		ch.Message += "; not decided: " + why
		return undecided(ch, CauseStrained, run, why)
	}
	if note != "" {
		ch.Message += "; " + note
	}
	return ch
}

// boundedLateness is how late, in ms, a strained client's measurements can be when the only warning
// is its timestamp lag (the poller's read lag, or the Go scheduler's latency), a measured delay; bounded is false when any other warning
// (CPU, threads waiting for a CPU, GC, or one added later) stands, since those carry no such bound.
func boundedLateness(h metrics.InjectorHealth) (ms float64, bounded bool) {
	w := h.Warnings()
	if lag := h.TimestampLagMs(); len(w) == 1 && lag > metrics.InjectorSchedWarnMs {
		return metrics.InjectorLateEvents * lag, true
	}
	return 0, len(w) == 0
}

// decide turns the interval of how much worse the candidate is into a status: a regression only when
// the whole interval is past the tolerance, a pass only when none of it is.
func decide(worseLo, worseHi, limit float64) string {
	switch {
	case worseLo > limit:
		return StatusFail
	case worseHi <= limit:
		return StatusPass
	}
	return StatusInconclusive
}

// sampleCount names what a bootstrap rested on: "124 requests", or "868 gaps from 124 requests".
func sampleCount(groups [][]float64) string {
	values := 0
	for _, g := range groups {
		values += len(g)
	}
	if values == len(groups) {
		return fmt.Sprintf("%d requests", values)
	}
	return fmt.Sprintf("%d gaps from %d requests", values, len(groups))
}

// strainedInjector says which run's strained client could have swayed a decision, and why; why is ""
// when none could, and note then says when a client was strained but too little to matter.
//
// A client short of CPU only ever makes its own run look worse: its timestamps are late, so
// latencies read longer, and it sends less, so throughput reads lower; it never makes a run look
// better. So a strained candidate can raise a false alarm but cannot fake a pass (a candidate that
// passes while handicapped is at least that good), and a strained baseline can mask a regression but
// cannot fake one (a candidate found worse than an inflated baseline is worse still than the true
// one). So a fail stands unless the candidate was strained, and a pass unless the baseline was. And
// when the strain is a measured delay (scheduler latency) too small to move the interval across the
// tolerance (sways(run, ms) false), the decision stands too: a busy CI machine still decides the
// comparisons its strain cannot have swayed.
func strainedInjector(base, cand *resultfiles.StageReport, status string, sways func(*resultfiles.StageReport, float64) bool) (run, why, note string) {
	side, st := "baseline", base
	if status == StatusFail {
		side, st = "candidate", cand
	}
	// The cause named is the largest (metrics.InjectorHealth.Cause): a read lag beside threads that
	// waited for a CPU is the wait's effect, not the reason to give.
	cause := st.Injector.Cause()
	if cause == "" {
		return "", "", ""
	}
	if late, bounded := boundedLateness(st.Injector); bounded && !sways(st, late) {
		return "", "", fmt.Sprintf("the %s run's client was strained (%s), too little to sway this: %d × that delay, %.2g ms, cannot move the interval across the tolerance",
			side, cause, metrics.InjectorLateEvents, late)
	}
	what := map[string]string{"baseline": "an inflated baseline can hide a regression",
		"candidate": "an inflated candidate can fake one"}[side]
	return side, fmt.Sprintf("the client was strained in the %s run (%s), and %s", side, cause, what), ""
}
