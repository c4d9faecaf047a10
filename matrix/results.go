package matrix

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// Run is one finished run of a part: its results directory and its stages' reports.
type Run struct {
	Dir    string
	Stages []*resultfiles.StageReport
}

// Outcome is a part as it ran: its runs and what failed (empty when nothing did).
type Outcome struct {
	Part     Part
	Runs     []Run
	Failures []string
}

// Level is one load level of a part over its repeats.
type Level struct {
	Name   string
	Unit   string                     // a rate's unit (Part.RateUnit)
	Stages []*resultfiles.StageReport // one per repeat that ran, in repeat order
}

// Levels groups the part's stage reports by load level: stage k of a run is the part's Points[k-1];
// a part that runs once per repeat (C) adds one repeat per run.
func (o Outcome) Levels() []Level {
	var out []Level
	at := map[string]int{}
	for _, name := range o.Part.Levels() {
		at[name] = len(out)
		out = append(out, Level{Name: name, Unit: o.Part.RateUnit})
	}
	for _, r := range o.Runs {
		for _, st := range r.Stages {
			if st.Stage < 1 || st.Stage > len(o.Part.Points) {
				continue
			}
			i := at[o.Part.Points[st.Stage-1].Level]
			out[i].Stages = append(out[i].Stages, st)
		}
	}
	return out
}

// Met counts the repeats whose stage met the SLO, and whether every one of them did (a partial
// stage never counts as met: its window was cut short).
func (l Level) Met() (met int, all bool) {
	for _, st := range l.Stages {
		// A PASS stands only where the stage measured what it set out to (metrics.Measured): not a
		// partial stage, nor a replay that fell behind its trace.
		if st.Summary.SLO.Verdict == metrics.SLOPass && st.Summary.Measured() {
			met++
		}
	}
	return met, len(l.Stages) > 0 && met == len(l.Stages)
}

// Spread is a value over the repeats: "310" for one value (or all equal at the precision shown),
// "310–350" for min–max, "N/A" when no repeat has it.
func Spread(values []float64, digits int) string {
	var known []float64
	for _, v := range values {
		if !math.IsNaN(v) {
			known = append(known, v)
		}
	}
	if len(known) == 0 {
		return "N/A"
	}
	sort.Float64s(known)
	lo, hi := fmt.Sprintf("%.*f", digits, known[0]), fmt.Sprintf("%.*f", digits, known[len(known)-1])
	if lo == hi {
		return lo
	}
	return lo + "–" + hi
}

// values reads one number from each stage (NaN where it is unknown).
func (l Level) values(f func(*metrics.StageSummary) float64) []float64 {
	out := make([]float64, len(l.Stages))
	for i, st := range l.Stages {
		out[i] = f(st.Summary)
	}
	return out
}

func opt(o metrics.Opt[float64]) float64 {
	if !o.OK {
		return math.NaN()
	}
	return o.V
}

func dist(d metrics.Dist, p func(metrics.Dist) float64) float64 {
	if !d.Known() {
		return math.NaN()
	}
	return p(d)
}

func p50(d metrics.Dist) float64 { return d.P50 }
func p95(d metrics.Dist) float64 { return d.P95 }
func p99(d metrics.Dist) float64 { return d.P99 }

// percentiles is "p50 / p95 / p99", each a spread over the repeats.
func (l Level) percentiles(pick func(*metrics.StageSummary) metrics.Dist) string {
	var parts []string
	for _, p := range []func(metrics.Dist) float64{p50, p95, p99} {
		parts = append(parts, Spread(l.values(func(s *metrics.StageSummary) float64 { return dist(pick(s), p) }), 0))
	}
	return strings.Join(parts, " / ")
}

// offered is what the level asked for: a concurrency, a rate or a ramp, from its first stage.
func (l Level) offered() string {
	if len(l.Stages) == 0 {
		return l.Name
	}
	st := l.Stages[0]
	switch {
	case st.Mode == "concurrency":
		return fmt.Sprintf("concurrency %d", st.Concurrency)
	case st.Rate != nil && st.Rate.IsRamp():
		return fmt.Sprintf("%s: %g→%g %s over %s", l.Name, st.Rate.From, st.Rate.To, l.unit(), st.Rate.Over)
	case st.Rate != nil:
		return fmt.Sprintf("%s: %g %s", l.Name, st.Rate.To, l.unit())
	}
	return l.Name
}

func (l Level) unit() string {
	if l.Unit == "" {
		return "req/s"
	}
	return l.Unit
}

// resultsHeader is the matrix's results table, with the SLO and throughput columns beside it.
const resultsHeader = "| offered | repeats | SLO met | achieved req/s | goodput req/s | out tok/s | TTFT p50 / p95 / p99 ms | TPOT p50 / p95 / p99 ms | error rate % | 429s |\n" +
	"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"

// Table is the part's results: one row per level, every number the spread over its repeats.
func (o Outcome) Table() string {
	var b strings.Builder
	b.WriteString(resultsHeader)
	for _, l := range o.Levels() {
		met, _ := l.Met()
		partial, invalid := "", 0
		for _, st := range l.Stages {
			switch sum := st.Summary; {
			case sum.Partial:
				partial = " (partial)"
			case sum.SLO.Verdict == metrics.SLOPass && !sum.Measured():
				invalid++
			}
		}
		if invalid > 0 { // a replay's PASS that fell behind its trace is not counted as met
			partial += fmt.Sprintf(" (%d passed as a replay that fell behind: not valid)", invalid)
		}
		fmt.Fprintf(&b, "| %s | %d | %d of %d%s | %s | %s | %s | %s | %s | %s | %s |\n",
			cell(l.offered()), len(l.Stages), met, len(l.Stages), partial,
			Spread(l.values(func(s *metrics.StageSummary) float64 { return s.Throughput.ReqPerSec }), 2),
			Spread(l.values(func(s *metrics.StageSummary) float64 { return opt(s.Goodput.ReqPerSec) }), 2),
			Spread(l.values(func(s *metrics.StageSummary) float64 { return s.Throughput.OutTokPerSec }), 0),
			l.percentiles(func(s *metrics.StageSummary) metrics.Dist { return s.TTFT }),
			l.percentiles(func(s *metrics.StageSummary) metrics.Dist { return s.TPOT }),
			Spread(l.values(func(s *metrics.StageSummary) float64 { return 100 * opt(s.ErrorRate) }), 2),
			Spread(l.values(func(s *metrics.StageSummary) float64 { return float64(s.Requests.RateLimited) }), 0))
	}
	return b.String()
}

// Operating is the operating point: the highest level of part B whose every repeat met the SLO, with
// every level below it met too (open loop proves the SLO; closed-loop latency hides queueing). "Up
// to" a rate means every rate under it: a higher level that met the SLO above one that did not is not
// the operating point (Unordered says so). ok false when the lowest level did not meet it.
func Operating(outcomes []Outcome) (Level, bool) {
	var best Level
	found := false
	for _, o := range outcomes {
		if o.Part.ID != PartB {
			continue
		}
		for _, l := range o.Levels() {
			if _, all := l.Met(); !all {
				break
			}
			best, found = l, true
		}
	}
	return best, found
}

// Unordered says where part B's levels met the SLO out of order ("" when they did not): the first
// level that did not meet it in every repeat, and a higher one that did. Latency rises with load, so
// this is noise or a server warming up, not capacity; more repeats decide it.
func Unordered(outcomes []Outcome) string {
	for _, o := range outcomes {
		if o.Part.ID != PartB {
			continue
		}
		var missed *Level
		levels := o.Levels()
		for i, l := range levels {
			_, all := l.Met()
			switch {
			case !all && missed == nil:
				missed = &levels[i]
			case all && missed != nil:
				m, _ := missed.Met()
				return fmt.Sprintf("%s met it in every repeat, above %s, which met it in %d of %d: noise or a server warming up, not capacity; more repeats decide it",
					l.offered(), missed.offered(), m, len(missed.Stages))
			}
		}
	}
	return ""
}

// brokenAt says what the level's repeats broke, in the stage tables' words: "ITL p95 122 ms > 50 ms"
// ("" when no repeat has a broken limit on record).
func (l Level) brokenAt() string {
	return resultfiles.SLOBroken(l.Stages, resultfiles.BrokenPerLoad)
}

// saturation is part A's highest throughput level (by its median out tok/s over the repeats) and
// the largest concurrency whose every repeat met the SLO ("" when none).
func saturation(o Outcome) (top Level, topTok float64, safe string) {
	topTok = -1
	for _, l := range o.Levels() {
		if len(l.Stages) == 0 {
			continue
		}
		if m := median(l.values(func(s *metrics.StageSummary) float64 { return s.Throughput.OutTokPerSec })); m > topTok {
			top, topTok = l, m
		}
		if _, all := l.Met(); all {
			safe = l.offered()
		}
	}
	return top, topTok, safe
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// cell escapes a table cell's text.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
