// Package matrix builds the standard benchmark matrix (docs/measurement.md)
// from one scenario, runs it and writes its report's text: A a closed-loop saturation ladder, B open
// loop at the traffic's mean, peak and peak +30 % rate, C a replay of the trace when the scenario
// names one, D the scale event (a rate ramp from mean to peak +30 %, then held). Each part is a
// scenario of its own — the original with its load replaced — that Matrix.Run hands to runner.Run as
// `plload run` does any other, so every part's results are a normal results directory. The plan and
// the text send nothing; the files people read (report.html, the chart) are written by a
// ReportWriter passed in, so the matrix never links the renderer.
package matrix

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/plload/plload/workload"
)

// PeakFactor is how far over the peak part B's last rate and part D's ramp go: 30 %, a margin over the busiest minute for growth.
const PeakFactor = 1.3

// DefaultMaxConcurrency tops part A's ladder when neither matrix.max_concurrency nor a stage of the
// scenario gives a concurrency.
const DefaultMaxConcurrency = 64

// Part IDs, in the order they run.
const (
	PartA = "A"
	PartB = "B"
	PartC = "C"
	PartD = "D"
)

// Rates are the traffic's mean and peak rate, in a request_rate stage's unit, and where they came
// from.
type Rates struct {
	Mean, Peak float64
	// From says where they were read: the matrix: keys or plload fit's comments.
	From string
}

// ErrNoRates is the message of a scenario without rates: it names the key and how to get it.
const ErrNoRates = "matrix.mean_rate and matrix.peak_rate: not set, and the file has no `# Arrivals in the log:` comment from plload fit; " +
	"accepted: matrix: {mean_rate: R, peak_rate: R} in requests/s (sessions/s when sessions have several turns), " +
	"or a scenario written by `plload fit LOG... --out FILE`, whose comments carry the log's rates"

// fitArrivals and fitTurns are the comments fit.Scenario writes: the log's rates in requests/s and,
// with sessions, the mean turns that divide them into sessions/s.
var (
	fitArrivals = regexp.MustCompile(`(?m)^# Arrivals in the log: ([0-9.eE+-]+) req/s mean, ([0-9.eE+-]+) req/s in the peak minute`)
	fitTurns    = regexp.MustCompile(`(?m)^\s*# mean turns per session \(([0-9.eE+-]+)\)`)
)

// RatesOf reads the rates: the scenario's matrix: keys, else the comments plload fit wrote into the
// file (data is the file's bytes). An error (ErrNoRates) when neither has them.
func RatesOf(sc *workload.Scenario, data []byte) (Rates, error) {
	if m := sc.Matrix; m != nil && m.MeanRate > 0 && m.PeakRate > 0 {
		return Rates{Mean: m.MeanRate, Peak: m.PeakRate, From: "matrix.mean_rate and matrix.peak_rate"}, nil
	}
	found := fitArrivals.FindSubmatch(data)
	if found == nil {
		return Rates{}, fmt.Errorf("%s", ErrNoRates)
	}
	mean, err1 := strconv.ParseFloat(string(found[1]), 64)
	peak, err2 := strconv.ParseFloat(string(found[2]), 64)
	if err1 != nil || err2 != nil || !(mean > 0) || !(peak >= mean) || math.IsInf(peak, 0) {
		return Rates{}, fmt.Errorf("the `# Arrivals in the log:` comment gives mean %s and peak %s req/s; accepted: a mean > 0 and a peak ≥ it, or set %s", found[1], found[2], "matrix: {mean_rate, peak_rate}")
	}
	r := Rates{Mean: mean, Peak: peak, From: fmt.Sprintf("plload fit's comment: %s req/s mean, %s req/s in the peak minute", found[1], found[2])}
	if t := fitTurns.FindSubmatch(data); t != nil {
		if turns, err := strconv.ParseFloat(string(t[1]), 64); err == nil && turns > 1 {
			r.Mean, r.Peak = mean/turns, peak/turns
			r.From += fmt.Sprintf(", ÷ %s mean turns per session = sessions/s", t[1])
		}
	}
	return r, nil
}

// Point is one stage of a part: the load level it measures and which repeat of it.
type Point struct {
	Level  string // "c=4", "mean", "peak", "peak+30%", "replay", "ramp"
	Repeat int    // 1-based
}

// Part is one row of the matrix: the load mode and stages it runs, or why it does not run.
type Part struct {
	ID, Title, Purpose string
	Mode               string
	// Stages are the part's stages in run order; Points[i] says what Stages[i] measures.
	Stages []workload.Stage
	Points []Point
	// Runs is how many times the part's scenario runs: its repeats, for a replay (each stage of a
	// replay takes the next slice of the trace, so a repeat is a run of its own); 1 otherwise, the
	// repeats being stages.
	Runs int
	// Skip says why the part does not run ("" when it does).
	Skip string
	// Notes are the choices made for the part that the report's Method states.
	Notes []string
	// RateUnit is what a rate of the part counts: req/s, or sessions/s when sessions have several
	// turns (their turns follow their own timing).
	RateUnit string
}

// Levels are the part's load levels in order, each once.
func (p Part) Levels() []string {
	var out []string
	seen := map[string]bool{}
	for _, pt := range p.Points {
		if !seen[pt.Level] {
			seen[pt.Level] = true
			out = append(out, pt.Level)
		}
	}
	return out
}

// Plan is the whole matrix.
type Plan struct {
	Rates    Rates
	Repeats  int
	Ladder   []int
	Parts    []Part
	RateUnit string // see Part.RateUnit
}

// NewPlan builds the four parts from the scenario: every point of A and B takes the warmup and
// duration of the scenario's first stage; A's and B's repeats are rounds (the whole ladder, then
// again), so a drift over the run shows as spread rather than as a difference between levels.
func NewPlan(sc *workload.Scenario, rates Rates, repeats int) Plan {
	first := sc.Load.Stages[0]
	p := Plan{Rates: rates, Repeats: repeats, RateUnit: "req/s"}
	if sc.ExpectedTurns() > 1 {
		p.RateUnit = "sessions/s"
	}
	top, topFrom := maxConcurrency(sc)
	p.Ladder = Ladder(top)
	a := Part{ID: PartA, Title: "closed-loop saturation ladder", Purpose: "saturation throughput per replica", Mode: workload.ModeConcurrency, Runs: 1,
		Notes: []string{fmt.Sprintf("concurrency %s (doubling up to %d, %s)", intsText(p.Ladder), top, topFrom)}}
	b := Part{ID: PartB, Title: "open loop at mean, peak and peak +30 %", Purpose: "SLO attainment and goodput", Mode: workload.ModeRequestRate, Runs: 1,
		RateUnit: p.RateUnit, Notes: []string{fmt.Sprintf("rates %g, %g and %g %s (%s; peak +30 %% = %g × peak)", rates.Mean, rates.Peak, round4(PeakFactor*rates.Peak), p.RateUnit, rates.From, PeakFactor)}}
	levels := []struct {
		name string
		rate float64
	}{{"mean", rates.Mean}, {"peak", rates.Peak}, {"peak+30%", round4(PeakFactor * rates.Peak)}}
	if workload.FlatPeak(rates.Mean, rates.Peak) {
		// A peak within 10 % of the mean loads the server as the mean does: its stage would repeat
		// the mean's and cost its minutes.
		levels = slices.Delete(levels, 1, 2)
		b.Notes = append(b.Notes, fmt.Sprintf("no peak stage: the peak (%g %s) is within %.0f %% of the mean, so it would repeat the mean's stage",
			rates.Peak, p.RateUnit, 100*(workload.FlatPeakRatio-1)))
	}
	for r := 1; r <= repeats; r++ {
		for _, c := range p.Ladder {
			st := workload.Stage{Name: fmt.Sprintf("A c=%d #%d", c, r), Concurrency: c, Warmup: first.Warmup, Duration: first.Duration}
			a.Stages, a.Points = append(a.Stages, st), append(a.Points, Point{Level: fmt.Sprintf("c=%d", c), Repeat: r})
		}
		for _, l := range levels {
			rate := workload.ConstantRate(l.rate)
			st := workload.Stage{Name: fmt.Sprintf("B %s #%d", l.name, r), Rate: &rate, Warmup: first.Warmup, Duration: first.Duration}
			b.Stages, b.Points = append(b.Stages, st), append(b.Points, Point{Level: l.name, Repeat: r})
		}
	}
	p.Parts = []Part{a, b, replayPart(sc, repeats), rampPart(sc, rates, p.RateUnit)}
	return p
}

// replayPart is C: the trace (or a timed dataset) on its own clock, once per repeat — the scenario's
// own replay stages when it is a replay, else one stage as long as the trace.
func replayPart(sc *workload.Scenario, repeats int) Part {
	c := Part{ID: PartC, Title: "replay of the trace", Purpose: "realistic burstiness and length mix", Mode: workload.ModeReplay, Runs: repeats}
	// A replay scenario's source has times (workload refuses one without): a dataset with
	// timestamps replays as a trace does.
	if sc.Workload == nil || sc.Workload.Trace == nil && sc.Load.Mode != workload.ModeReplay {
		c.Skip = "the scenario names no workload.trace, so there is no traffic to replay; add one (docs/data.md) to run part C"
		return c
	}
	stages := sc.Load.Stages
	if sc.Load.Mode != workload.ModeReplay {
		span := traceSpan(sc.Source())
		stages = []workload.Stage{{Name: "C replay", Duration: workload.Duration(span)}}
		c.Notes = append(c.Notes, fmt.Sprintf("the whole trace (%s of arrivals), no warmup", span))
	} else {
		c.Notes = append(c.Notes, "the scenario's own replay stages")
	}
	for i, st := range stages {
		if st.Name == "" {
			st.Name = fmt.Sprintf("C replay %d", i+1)
		}
		c.Stages = append(c.Stages, st)
		c.Points = append(c.Points, Point{Level: st.Name, Repeat: 1}) // each run is one repeat
	}
	return c
}

// traceSpan is how long the trace's arrivals last, rounded up to the second, plus a second for the
// last arrival's request to start inside the stage.
func traceSpan(src *workload.Source) time.Duration {
	last := 0.0
	if src != nil {
		for _, s := range src.Sessions {
			if len(s.Turns) > 0 {
				last = max(last, s.Turns[0].AtMs)
			}
		}
	}
	return time.Duration(math.Ceil(last/1000)+1) * time.Second
}

// rampPart is D: the rate rises linearly from mean to peak +30 % over matrix.ramp and holds there
// for matrix.hold, with no warmup (the rise begins at t0, where the time to absorb counts from).
func rampPart(sc *workload.Scenario, rates Rates, unit string) Part {
	ramp, hold := sc.Matrix.RampOrDefault(), sc.Matrix.HoldOrDefault()
	to := round4(PeakFactor * rates.Peak)
	rate := workload.Rate{From: rates.Mean, To: to, Over: workload.Duration(ramp)}
	st := workload.Stage{Name: "D ramp", Rate: &rate, Duration: workload.Duration(ramp + hold)}
	return Part{ID: PartD, Title: "scale event: a ramp from mean to peak +30 %", Purpose: "time to absorb the morning ramp", Mode: workload.ModeRequestRate, Runs: 1,
		Stages: []workload.Stage{st}, Points: []Point{{Level: "ramp", Repeat: 1}}, RateUnit: unit,
		Notes: []string{fmt.Sprintf("%g → %g %s over %s (matrix.ramp), then held %s (matrix.hold); the SLO judged per %s window (slo.window)",
			rates.Mean, to, unit, workload.Duration(ramp), workload.Duration(hold), workload.Duration(sc.SLO.AbsorbWindow()))}}
}

// maxConcurrency is the top of part A's ladder and where it came from.
func maxConcurrency(sc *workload.Scenario) (int, string) {
	if m := sc.Matrix; m != nil && m.MaxConcurrency > 0 {
		return m.MaxConcurrency, "matrix.max_concurrency"
	}
	top := 0
	for _, st := range sc.Load.Stages {
		top = max(top, st.Concurrency, st.MaxConcurrency)
	}
	if top > 0 {
		return top, "the scenario's largest concurrency"
	}
	return DefaultMaxConcurrency, fmt.Sprintf("assumed: neither matrix.max_concurrency nor a concurrency stage, so %d", DefaultMaxConcurrency)
}

// Ladder is 1, 2, 4, … doubling while below top, then top itself.
func Ladder(top int) []int {
	var out []int
	for c := 1; c < top; c *= 2 {
		out = append(out, c)
	}
	return append(out, max(1, top))
}

func intsText(v []int) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(x)
	}
	return s
}

// round4 keeps 4 significant digits, so 1.3 × 3 is 3.9 and not 3.9000000000000004 in a stage name or file.
func round4(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return f
}
