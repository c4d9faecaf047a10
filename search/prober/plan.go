// Package prober runs plload's capacity search on the engine: the plan (which knob, every probe as
// the scenario's first stage at one value, the search's options), the probes (one stage each, run
// into one results directory, stopped early by search.EarlyStop, measured from its records, its
// client checked for strain) and the results (search.json, the report with its capacity curve,
// scenario.resolved.yaml, the answer and the exit code). The search itself — which value to probe
// next and how a probe is judged — is package search's, which runs nothing; the rendering is passed
// in (Renderers), so the prober never links the report (docs/measurement.md).
package prober

import (
	"fmt"
	"math"
	"slices"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/search"
	"github.com/plload/plload/workload"
)

// The knobs a search turns.
const (
	KnobConcurrency = "concurrency" // load.mode concurrency: sessions open at once
	KnobRate        = "rate"        // request_rate: requests/s; arrival_rate: sessions/s
)

// Defaults and bounds of the options: a search is bounded by them and by search.DefaultMaxProbes.
const (
	DefaultMaxConcurrency = 4096 // Options.Max for the concurrency knob
	DefaultMaxRateFactor  = 1024 // Options.Max for the rate knob: × Options.Start
	MaxRepeats            = 10   // the most runs of one load Options.Repeats may ask for
)

// Options are a search's choices as the user gave them, which New checks, and how its results are
// written.
type Options struct {
	Knob string // KnobConcurrency or KnobRate; "" is the scenario's load.mode's
	// Start is the first load probed and Max the largest; nil is the default (the first stage's
	// value; DefaultMaxConcurrency, or DefaultMaxRateFactor × Start for a rate).
	Start, Max *float64
	Resolution string // stop bisecting when a pass and a non-pass are this close: "5%", or a number in the knob's unit
	Repeats    int    // runs of one load before it is undecided
	Base       string // the results base directory
	Preflight  bool   // one streamed request checks the target before the first probe
	// Tool names the writer in stage.json and report.json: "plload v1.2.3".
	Tool   string
	Render Renderers
}

// Renderers write the files people read about a search. They are the rendering floor's (package
// report), passed in by the command so that the search never links its charts and Markdown. A nil
// one writes nothing (Headline: an empty line).
type Renderers struct {
	// Report writes report.md, report.html and the charts beside report.json (report.Render).
	Report resultfiles.Renderer
	// Headline is the answer's first line from the chosen stage (the search says itself why there is
	// none); sessions is the knob for a closed loop, the mean of sessions open for an open one;
	// atLeast, that the search stopped before a higher load was decided (report.SearchHeadline).
	Headline func(chosen *resultfiles.StageReport, sessions float64, atLeast bool) string
	// Curve draws the capacity curve (charts/search_curve.*) and puts lines, the chart and the probes
	// on top of report.md and report.html: chosen is the answer's stage (0: none) and unit the knob's
	// ("sessions", "req/s"); report.NewSearchCurve and report.WriteSearchReport.
	Curve func(dir string, stages []*resultfiles.StageReport, probes []resultfiles.SearchProbe, chosen int, unit string, lines []string) error
}

// Plan is a search whose inputs were all checked: nothing is sent before it exists.
type Plan struct {
	sc     *workload.Scenario
	knob   string
	first  workload.Stage // every probe is this stage with the knob set
	opt    search.Options
	limits metrics.SLOLimits
	slo    search.SLO
	args   string  // the options, for the report's Reproduce line
	given  Options // as New was given them: the results base, the preflight, the tool, the renderers
}

// New checks a search of sc with these options; every refusal is a runner.BadInput error naming the
// file or flag, and says that nothing was sent.
func New(sc *workload.Scenario, o Options) (*Plan, error) {
	p := &Plan{sc: sc, first: sc.Load.Stages[0], limits: resultfiles.SLOLimits(sc.SLO), given: o}
	p.slo = search.FromLimits(p.limits)
	var err error
	if p.knob, err = knobOf(sc, o.Knob); err != nil {
		return nil, err
	}
	switch {
	case !p.slo.Set():
		return nil, badInput("%s: slo: no limit is set, so there is no capacity to search for; accepted: a latency or error-rate limit, such as slo: {ttft: {p95: 500ms}, error_rate: 0.01}; nothing was sent", sc.File)
	case p.first.Duration <= 0:
		return nil, badInput("%s: load.stages[0].duration: every probe runs the first stage's warmup and duration; accepted: a duration > 0; nothing was sent", sc.File)
	}
	if p.opt, err = searchOptions(o, p.knob, p.startOf()); err != nil {
		return nil, err
	}
	p.args = fmt.Sprintf(" --knob %s --start %g --max %g --resolution %s --repeats %d", p.knob, p.opt.Start, p.opt.Max, p.opt.Resolution, p.opt.Repeats)
	return p, nil
}

// badInput is a runner.BadInput error with a formatted message.
func badInput(format string, args ...any) error {
	return &runner.Error{Code: runner.BadInput, Err: fmt.Errorf(format, args...)}
}

// knobOf is the knob asked for, which must be the scenario's own load: a closed loop's sessions or
// an open loop's rate.
func knobOf(sc *workload.Scenario, flag string) (string, error) {
	natural := "" // the mode's own knob
	if k := sc.Load.LoadMode().Knob; k != nil {
		natural = k.Name
	}
	switch {
	case natural == "":
		return "", badInput("%s: load.mode %s: a replay's rate is its trace's, so there is no knob to turn; accepted: load.mode concurrency, request_rate or arrival_rate (a replay runs faster with load.time_scale < 1 in plload run); nothing was sent", sc.File, sc.Load.Mode)
	case flag == "":
		return natural, nil
	case flag != KnobConcurrency && flag != KnobRate:
		return "", badInput("--knob %q: accepted: concurrency or rate; nothing was sent", flag)
	case flag != natural:
		return "", badInput("--knob %s: %s has load.mode %s, whose load is its %s; accepted: --knob %s, or a scenario with load.mode %s; nothing was sent",
			flag, sc.File, sc.Load.Mode, natural, natural, map[string]string{KnobConcurrency: "concurrency", KnobRate: "request_rate"}[flag])
	}
	return flag, nil
}

// startOf is the first stage's value of the knob (0 when it has none).
func (p *Plan) startOf() float64 { return p.sc.Load.LoadMode().Knob.Of(p.first) }

// searchOptions checks Start, Max, Resolution and Repeats (--start, --max, --resolution, --repeats).
func searchOptions(in Options, knob string, start float64) (search.Options, error) {
	o := search.Options{Start: start, Repeats: in.Repeats, Whole: knob == KnobConcurrency}
	if in.Start != nil {
		o.Start = *in.Start
	}
	o.Max = DefaultMaxConcurrency
	if !o.Whole {
		o.Max = DefaultMaxRateFactor * o.Start
	}
	if in.Max != nil {
		o.Max = *in.Max
	}
	whole := func(v float64) bool { return !o.Whole || v == math.Trunc(v) }
	var err error
	switch {
	case !(o.Start > 0) || !whole(o.Start) || math.IsInf(o.Start, 0):
		return o, badInput("--start %g: accepted: %s (the default is the first stage's); nothing was sent", o.Start, unitOf(knob))
	case !(o.Max >= o.Start) || !whole(o.Max) || math.IsInf(o.Max, 0):
		return o, badInput("--max %g: accepted: %s, at least --start (%g); nothing was sent", o.Max, unitOf(knob), o.Start)
	case o.Repeats < 1 || o.Repeats > MaxRepeats:
		return o, badInput("--repeats %d: accepted: 1 to %d runs of one load; nothing was sent", o.Repeats, MaxRepeats)
	}
	if o.Resolution, err = search.ParseResolution(in.Resolution); err != nil {
		return o, badInput("%v; nothing was sent", err)
	}
	return o, nil
}

func unitOf(knob string) string {
	if knob == KnobConcurrency {
		return "a whole number of sessions ≥ 1"
	}
	return "a rate > 0 (requests/s, or sessions/s for arrival_rate)"
}

// stageAt is the first stage with the knob at v: the probe's spec.
func (p *Plan) stageAt(v float64) workload.Stage {
	st := p.sc.Load.LoadMode().Knob.With(p.first, v)
	st.Name = ""
	return st
}

// withStages is the scenario with these stages: the probes so far, so a probe's stage number, its
// dataset and scenario.resolved.yaml are those of a plain run of the probes.
func (p *Plan) withStages(specs []workload.Stage) *workload.Scenario {
	sc := *p.sc
	sc.Load.Stages = slices.Clone(specs)
	return &sc
}

// valueText is a knob value with its unit: "12 sessions", "20 req/s".
func (p *Plan) valueText(v float64) string {
	switch {
	case p.knob == KnobConcurrency && v == 1:
		return "1 session" // the search halves down to 1 when nothing passes
	}
	return fmt.Sprintf("%g %s", v, p.sc.Load.LoadMode().Knob.Unit)
}
