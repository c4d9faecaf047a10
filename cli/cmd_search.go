package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/report"
	"github.com/plload/plload/search"
	"github.com/plload/plload/workload"
)

// The knobs a search turns.
const (
	knobConcurrency = "concurrency" // load.mode concurrency: sessions open at once
	knobRate        = "rate"        // request_rate: requests/s; arrival_rate: sessions/s
)

// Defaults of --max: a search is bounded by them and by search.DefaultMaxProbes.
const (
	defaultMaxConcurrency = 4096
	defaultMaxRateFactor  = 1024 // × --start
	maxRepeats            = 10
)

func searchCommand() *cli.Command {
	return &cli.Command{
		Name:      "search",
		Usage:     "find the largest concurrency or request rate that meets the scenario's SLO",
		ArgsUsage: "SCENARIO.yaml",
		UsageText: "plload search SCENARIO.yaml [--knob concurrency|rate] [--start N] [--max N] [--resolution 5%] [--repeats 3] [--out DIR]",
		Description: "Runs probes — stages with the warmup and duration of the scenario's first stage — into one results\n" +
			"directory: doubling the load from --start until a probe does not meet the SLO, then bisecting\n" +
			"between the last pass and the first non-pass until they are --resolution apart.\n\n" +
			"A probe passes or fails only when the 95 % interval of every SLO statistic (a bootstrap over its\n" +
			"requests; the Wilson interval for the error rate) lies wholly on one side of the limit. Otherwise\n" +
			"the same load runs again, the samples pooled, up to --repeats times, and is then undecided: the\n" +
			"answer gives the range (\"meets SLO up to 48 sessions (49–52 undecided)\"). A probe whose latency\n" +
			"or send lag rose quarter after quarter past its limit, or whose arrivals were left waiting, fails\n" +
			"as saturated. The client must not be the limit (injector health): a probe whose client's CPU was\n" +
			"full is invalid and stops the search; a client strained otherwise (threads waiting for a CPU, GC)\n" +
			"only makes latencies read longer, so its pass stands and its fail runs again unless it fails by\n" +
			"more than that lateness, and is invalid if still strained at the last run. At most 20 probes.\n\n" +
			"Writes search.json, every probe's stage_NN/, report.md/html with the capacity curve\n" +
			"(charts/search_curve.png) and scenario.resolved.yaml, whose stages are the probes (plload run\n" +
			"reruns them). Exit codes: 0 a capacity was found; 1 no probe met the SLO, or the search stopped\n" +
			"(an invalid probe, a failure); 2 bad input, nothing sent; 130 interrupted.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "knob", Usage: "what to vary: concurrency (load.mode concurrency) or rate (request_rate's rate, arrival_rate's sessions_per_sec); default: the scenario's load.mode"},
			&cli.Float64Flag{Name: "start", Usage: "the first load probed (default: the first stage's)"},
			&cli.Float64Flag{Name: "max", Usage: fmt.Sprintf("the largest load probed (default: %d sessions, or %d × --start for a rate)", defaultMaxConcurrency, defaultMaxRateFactor)},
			&cli.StringFlag{Name: "resolution", Value: "5%", Usage: "stop bisecting when the pass and the non-pass are this close: a percentage of the pass, or a number in the knob's unit"},
			&cli.IntFlag{Name: "repeats", Value: 3, Usage: "times one load may run before it is called undecided"},
			outFlag(),
			noPreflightFlag("first"),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			plan, warnings, err := newSearchPlan(cmd)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(cmd.Root().ErrWriter, w.Error())
			}
			return plan.run(ctx, !cmd.Bool("no-preflight"), cmd.Root().Writer, cmd.Root().ErrWriter)
		},
	}
}

// searchPlan is a search whose inputs were all checked: nothing is sent before it exists.
type searchPlan struct {
	sc     *workload.Scenario
	knob   string
	first  workload.Stage // every probe is this stage with the knob set
	opt    search.Options
	limits metrics.SLOLimits
	slo    search.SLO
	base   string // results base directory
	args   string // the flags, for the report's Reproduce line
}

// newSearchPlan reads the scenario and the flags; every refusal is exit 2 naming the file or flag.
func newSearchPlan(cmd *cli.Command) (*searchPlan, workload.Issues, error) {
	sc, warnings, err := loadScenario(cmd, workload.LoadOptions{ForRun: true})
	if err != nil {
		return nil, nil, err
	}
	p := &searchPlan{sc: sc, first: sc.Load.Stages[0], limits: report.SLOLimits(sc.SLO), base: sc.Output.Dir}
	p.slo = search.FromLimits(p.limits)
	if cmd.IsSet("out") {
		p.base = cmd.String("out")
	}
	if p.knob, err = searchKnob(sc, cmd.String("knob")); err != nil {
		return nil, nil, err
	}
	switch {
	case !p.slo.Set():
		return nil, nil, badInput("%s: slo: no limit is set, so there is no capacity to search for; accepted: a latency or error-rate limit, such as slo: {ttft: {p95: 500ms}, error_rate: 0.01}; nothing was sent", sc.File)
	case p.first.Duration <= 0:
		return nil, nil, badInput("%s: load.stages[0].duration: every probe runs the first stage's warmup and duration; accepted: a duration > 0; nothing was sent", sc.File)
	}
	if p.opt, err = searchOptions(cmd, p.knob, p.startOf()); err != nil {
		return nil, nil, err
	}
	p.args = fmt.Sprintf(" --knob %s --start %g --max %g --resolution %s --repeats %d", p.knob, p.opt.Start, p.opt.Max, p.opt.Resolution, p.opt.Repeats)
	return p, warnings, nil
}

// searchKnob is --knob, which must be the scenario's own load: a closed loop's sessions or an open
// loop's rate.
func searchKnob(sc *workload.Scenario, flag string) (string, error) {
	natural := "" // the mode's own knob
	if k := sc.Load.LoadMode().Knob; k != nil {
		natural = k.Name
	}
	switch {
	case natural == "":
		return "", badInput("%s: load.mode %s: a replay's rate is its trace's, so there is no knob to turn; accepted: load.mode concurrency, request_rate or arrival_rate (a replay runs faster with load.time_scale < 1 in plload run); nothing was sent", sc.File, sc.Load.Mode)
	case flag == "":
		return natural, nil
	case flag != knobConcurrency && flag != knobRate:
		return "", badInput("--knob %q: accepted: concurrency or rate; nothing was sent", flag)
	case flag != natural:
		return "", badInput("--knob %s: %s has load.mode %s, whose load is its %s; accepted: --knob %s, or a scenario with load.mode %s; nothing was sent",
			flag, sc.File, sc.Load.Mode, natural, natural, map[string]string{knobConcurrency: "concurrency", knobRate: "request_rate"}[flag])
	}
	return flag, nil
}

// startOf is the first stage's value of the knob (0 when it has none).
func (p *searchPlan) startOf() float64 { return p.sc.Load.LoadMode().Knob.Of(p.first) }

// searchOptions reads --start, --max, --resolution and --repeats.
func searchOptions(cmd *cli.Command, knob string, start float64) (search.Options, error) {
	o := search.Options{Start: start, Repeats: int(cmd.Int("repeats")), Whole: knob == knobConcurrency}
	if cmd.IsSet("start") {
		o.Start = cmd.Float64("start")
	}
	o.Max = defaultMaxConcurrency
	if !o.Whole {
		o.Max = defaultMaxRateFactor * o.Start
	}
	if cmd.IsSet("max") {
		o.Max = cmd.Float64("max")
	}
	whole := func(v float64) bool { return !o.Whole || v == math.Trunc(v) }
	var err error
	switch {
	case !(o.Start > 0) || !whole(o.Start) || math.IsInf(o.Start, 0):
		return o, badInput("--start %g: accepted: %s (the default is the first stage's); nothing was sent", o.Start, unitOf(knob))
	case !(o.Max >= o.Start) || !whole(o.Max) || math.IsInf(o.Max, 0):
		return o, badInput("--max %g: accepted: %s, at least --start (%g); nothing was sent", o.Max, unitOf(knob), o.Start)
	case o.Repeats < 1 || o.Repeats > maxRepeats:
		return o, badInput("--repeats %d: accepted: 1 to %d runs of one load; nothing was sent", o.Repeats, maxRepeats)
	}
	if o.Resolution, err = search.ParseResolution(cmd.String("resolution")); err != nil {
		return o, badInput("%v; nothing was sent", err)
	}
	return o, nil
}

func unitOf(knob string) string {
	if knob == knobConcurrency {
		return "a whole number of sessions ≥ 1"
	}
	return "a rate > 0 (requests/s, or sessions/s for arrival_rate)"
}

// stageAt is the first stage with the knob at v: the probe's spec.
func (p *searchPlan) stageAt(v float64) workload.Stage {
	st := p.sc.Load.LoadMode().Knob.With(p.first, v)
	st.Name = ""
	return st
}

// withStages is the scenario with these stages: the probes so far, so a probe's stage number, its
// dataset and scenario.resolved.yaml are those of a plain run of the probes.
func (p *searchPlan) withStages(specs []workload.Stage) *workload.Scenario {
	sc := *p.sc
	sc.Load.Stages = slices.Clone(specs)
	return &sc
}

// run checks the target, runs the search and writes its results.
func (p *searchPlan) run(ctx context.Context, preflight bool, stdout, stderr io.Writer) error {
	ctx, stop := interruptible(ctx, stderr)
	defer stop()
	firstSc := p.withStages([]workload.Stage{p.stageAt(p.opt.Start)})
	if err := checkTarget(ctx, firstSc); err != nil {
		return err
	}
	if err := checkOpenFiles(firstSc, stderr); err != nil {
		return err
	}
	w, err := firstSc.Build()
	if err != nil {
		return badInput("building the workload: %v", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	baseURL, closeMock, err := startTarget(ctx, firstSc, w, preflight, log, stderr)
	if err != nil {
		return err
	}
	defer closeMock()
	dir, err := makeRunDir(p.base, p.sc.Name, "")
	if err != nil {
		return badInput("results directory: %v; choose another with --out or output.dir", err)
	}
	pr := &prober{plan: p, baseURL: baseURL, dir: dir, log: log}
	fmt.Fprintf(stdout, "plload search %s: %s from %g (at most %g, resolution %s, %d runs per load), SLO %s; results in %s\n",
		p.sc.Name, p.knob, p.opt.Start, p.opt.Max, p.opt.Resolution, p.opt.Repeats, report.SLOText(p.sc.SLO), dir)
	opt := p.opt
	opt.OnProbe = func(pb search.Probe) {
		fmt.Fprintf(stdout, "probe %02d (stage %02d): %s — %s: %s\n", pr.count, pb.Stage, p.valueText(pb.Value), pb.Verdict, pb.Reason)
	}
	started := time.Now()
	res, err := search.Run(ctx, opt, pr.probe, p.slo.Judge)
	return p.finish(pr, res, err, started, stdout)
}

// valueText is a knob value with its unit: "12 sessions", "20 req/s".
func (p *searchPlan) valueText(v float64) string {
	switch {
	case p.knob == knobConcurrency && v == 1:
		return "1 session" // the search halves down to 1 when nothing passes
	}
	return fmt.Sprintf("%g %s", v, p.sc.Load.LoadMode().Knob.Unit)
}

// prober runs probes as the stages of one results directory.
type prober struct {
	plan    *searchPlan
	baseURL string
	dir     string
	log     *slog.Logger
	specs   []workload.Stage      // the probes run, in order: stage k is specs[k-1]
	stages  []*report.StageReport // their reports
	count   int                   // probes judged, for the progress lines
}

// probe runs one stage at v and measures it. The stage stops early once its failure is certain
// (search.EarlyStop); the other signs of saturation are judged from the finished stage's records.
func (p *prober) probe(ctx context.Context, v float64) (int, search.Measurement, error) {
	p.count++
	spec := p.plan.stageAt(v)
	sc := p.plan.withStages(append(slices.Clone(p.specs), spec))
	if err := checkOpenFiles(sc, io.Discard); err != nil {
		return 0, search.Measurement{Invalid: "the client's open-files limit: " + err.Error()}, nil
	}
	w, err := sc.Build()
	if err != nil {
		return 0, search.Measurement{}, fmt.Errorf("building probe %s: %w", p.plan.valueText(v), err)
	}
	k := len(sc.Load.Stages)
	var r engine.StageResult
	early := search.NewEarlyStop(p.plan.slo, spec.Duration.D())
	_, runErr := engine.Run(ctx, engine.Config{Scenario: sc, BaseURL: p.baseURL, Dir: p.dir, Log: p.log,
		StopWhen:         func(_ int, rec *metrics.Record) string { return early.Check(rec) },
		Workload:         w.WithStages(w.Stages[k-1:]),
		ServerMetricsURL: serverMetricsURL(sc, p.baseURL),
		OnStage:          func(res engine.StageResult) { r = res }})
	if r.Stage == 0 {
		return 0, search.Measurement{}, runErr // nothing ran (the stage directory could not be made)
	}
	p.specs = append(p.specs, spec)
	st, err := summarizeStage(sc, w, r, nil)
	if err != nil {
		return k, search.Measurement{}, err
	}
	p.stages = append(p.stages, st)
	switch {
	case r.Partial:
		return k, search.Measurement{}, engine.ErrInterrupted
	case r.Aborted != "":
		return k, search.Measurement{}, fmt.Errorf("probe at %s: %s", p.plan.valueText(v), r.Aborted)
	case runErr != nil && !errors.Is(runErr, engine.ErrStageFailed):
		return k, search.Measurement{}, runErr
	}
	m, err := p.measure(r, st)
	return k, m, err
}

// measure reads a probe's records into its measurement and checks its client; the records go
// afterwards when the scenario does not keep them.
func (p *prober) measure(r engine.StageResult, st *report.StageReport) (search.Measurement, error) {
	path := filepath.Join(r.Dir, "profile_export.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return search.Measurement{}, err
	}
	s := search.NewSampler(p.plan.slo, st.Summary, p.plan.sc.Load.IsOpenLoop())
	err = metrics.ReadRecords(f, func(rec *metrics.Record) error { s.Add(rec); return nil })
	f.Close()
	if err != nil {
		return search.Measurement{}, fmt.Errorf("%s: %w", path, err)
	}
	if !p.plan.sc.Output.RecordRequests {
		os.Remove(path)
	}
	m := s.Measurement()
	if r.Stopped != "" && m.Saturated == "" {
		m.Saturated = "stopped early, the load could no longer pass: " + r.Stopped
	}
	m.Invalid, m.Strained, m.LateMs = clientStrain(r, p.plan.slo)
	return m, nil
}

// schedPeriodMs is how long a runnable thread may wait for a CPU at a time, taken as the Linux
// scheduler's period on a 2-core machine (CFS: 6 ms × (1 + log2 2)): the lateness per event a
// client whose threads waited for a CPU is allowed, since that wait is not measured per event.
const schedPeriodMs = 12

// clientStrain says how the client was strained during a probe, as plload run warns of it, unless
// the errors explain it (a dead target keeps the client busy failing fast). full is the client at
// its CPU's capacity: it could not hold the load, so the probe is invalid. late is anything else
// that makes its timestamps late (threads waiting for a CPU, GC pauses, scheduling delays), which
// only makes latencies read longer, by up to lateMs: 3 × the scheduling delay's p99 when that is
// the only warning (a measured delay; under a tenth of the tightest latency limit it cannot move
// a verdict and is not counted), else 3 × the larger of it and schedPeriodMs.
func clientStrain(r engine.StageResult, slo search.SLO) (full, late string, lateMs float64) {
	h := r.Injector
	if len(h.Warnings()) == 0 || failuresExplainStrain(r) {
		return "", "", 0
	}
	if w := (metrics.InjectorHealth{CPUPercent: h.CPUPercent, Cores: h.Cores}).Warnings(); len(w) > 0 {
		full = "the client was the limit, not the server: " + w[0]
	}
	rest := h
	rest.CPUPercent = 0
	w := rest.Warnings()
	if len(w) == 0 {
		return full, "", 0
	}
	tightest := math.Inf(1)
	for _, l := range slo.Latency {
		tightest = min(tightest, l.LimitMs)
	}
	lag := h.TimestampLagMs()
	lateMs = metrics.InjectorLateEvents * max(lag, schedPeriodMs)
	if len(w) == 1 && lag > metrics.InjectorSchedWarnMs {
		if lateMs = metrics.InjectorLateEvents * lag; lateMs <= tightest/10 {
			return full, "", 0
		}
	}
	return full, strings.Join(w, "; "), lateMs
}

// searchFile is search.json (docs/measurement.md).
type searchFile struct {
	Knob      string            `json:"knob"`
	SLO       metrics.SLOLimits `json:"slo"`
	Best      *float64          `json:"best"`
	Undecided *[2]float64       `json:"undecided"`
	Probes    []search.Probe    `json:"probes"`
}

// finish writes the results of a search however it ended — search.json, the report with the
// capacity curve, scenario.resolved.yaml with the probes as stages — prints the answer, and decides
// the exit code.
func (p *searchPlan) finish(pr *prober, res search.Result, runErr error, started time.Time, stdout io.Writer) error {
	dir := pr.dir
	sc := p.withStages(pr.specs)
	interrupted := errors.Is(runErr, engine.ErrInterrupted) || errors.Is(runErr, context.Canceled)
	switch {
	case interrupted:
		res.Stop = "interrupted before the search ended (the last probe is partial)"
	case runErr != nil:
		res.Stop = "stopped: " + runErr.Error()
	}
	chosen, chosenStage := p.chosen(res, pr.stages)
	lines := []string{report.SearchHeadline(chosen, p.sessionsAt(res, chosen)), p.answerText(res)}
	err := p.writeResults(pr, sc, res, chosenStage, lines, started, interrupted)
	fmt.Fprintf(stdout, "\n%s\n%s\nresults in %s\n", lines[0], lines[1], dir)
	switch {
	case interrupted:
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: the last probe is partial; results in %s", dir)}
	case err != nil:
		return &exitError{code: exitFailed, err: fmt.Errorf("writing the results: %w (results in %s)", err, dir)}
	case runErr != nil:
		return &exitError{code: exitFailed, err: fmt.Errorf("the search stopped: %w; results in %s", runErr, dir)}
	case res.Invalid:
		return &exitError{code: exitFailed, err: fmt.Errorf("the search stopped: %s; results in %s", res.Stop, dir)}
	case res.Best == nil:
		return &exitError{code: exitFailed, err: fmt.Errorf("no probe met the SLO (%s): %s; results in %s", report.SLOText(p.sc.SLO), res.Stop, dir)}
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, "report.html"))
	return nil
}

// writeResults writes scenario.resolved.yaml, the report and search.json.
func (p *searchPlan) writeResults(pr *prober, sc *workload.Scenario, res search.Result, chosenStage int, lines []string, started time.Time, interrupted bool) error {
	dir := pr.dir
	resolved, err := sc.ResolvedYAML()
	if err == nil {
		err = metrics.WriteFileAtomic(filepath.Join(dir, "scenario.resolved.yaml"), resolved)
	}
	probes := res.Probes
	if probes == nil {
		probes = []search.Probe{} // [] in JSON, never null
	}
	data, jerr := json.MarshalIndent(searchFile{Knob: p.knob, SLO: p.limits, Best: res.Best, Undecided: res.Undecided, Probes: probes}, "", "  ")
	if jerr == nil {
		jerr = metrics.WriteFileAtomic(filepath.Join(dir, "search.json"), append(data, '\n'))
	}
	err = errors.Join(err, jerr)
	if len(pr.stages) == 0 {
		return err
	}
	rep := report.New(sc, pr.stages, report.Meta{Tool: toolName(), ScenarioFile: absPath(p.sc.File),
		Command: "plload search " + absPath(p.sc.File) + p.args + " --out " + absPath(p.base), Started: started, Finished: time.Now(), Interrupted: interrupted})
	if werr := rep.Write(dir, sc); werr != nil {
		return errors.Join(err, werr)
	}
	shown := make([]report.SearchProbe, len(res.Probes))
	for i, pb := range res.Probes {
		shown[i] = report.SearchProbe{Value: pb.Value, Verdict: string(pb.Verdict), Reason: pb.Reason, Stage: pb.Stage}
	}
	unit := strings.TrimPrefix(p.valueText(1), "1 ")
	curve := report.NewSearchCurve(pr.stages, shown, chosenStage, unit)
	return errors.Join(err, report.WriteSearchReport(dir, curve, lines, shown, unit))
}

// chosen is the stage report of the answer: the last run of the best load.
func (p *searchPlan) chosen(res search.Result, stages []*report.StageReport) (*report.StageReport, int) {
	if res.Best == nil {
		return nil, 0
	}
	stage := 0
	for _, pb := range res.Probes {
		if pb.Value == *res.Best && pb.Verdict == search.Pass {
			stage = pb.Stage
		}
	}
	for _, st := range stages {
		if st.Stage == stage {
			return st, stage
		}
	}
	return nil, 0
}

// sessionsAt is the sessions of the answer: the knob itself for a closed loop, the time-weighted
// mean of open sessions for an open loop.
func (p *searchPlan) sessionsAt(res search.Result, chosen *report.StageReport) float64 {
	switch {
	case chosen == nil:
		return 0
	case p.knob == knobConcurrency:
		return *res.Best
	}
	return chosen.Summary.Active.Mean
}

// answerText is the answer with its range: "meets SLO up to 12 sessions (13–14 undecided)", and why
// the search stopped.
func (p *searchPlan) answerText(res search.Result) string {
	text := "meets SLO at no load probed"
	if res.Best != nil {
		text = "meets SLO up to " + p.valueText(*res.Best)
	}
	if u := res.Undecided; u != nil {
		if u[0] == u[1] {
			text += fmt.Sprintf(" (%g undecided)", u[0])
		} else {
			text += fmt.Sprintf(" (%g–%g undecided)", u[0], u[1])
		}
	}
	probes := "probes"
	if len(res.Probes) == 1 {
		probes = "probe"
	}
	return fmt.Sprintf("%s; %d %s; %s", text, len(res.Probes), probes, res.Stop)
}
