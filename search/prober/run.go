package prober

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/search"
	"github.com/plload/plload/workload"
)

// Run checks the target (with one streamed request when Options.Preflight), runs the search, prints a
// line per probe and the answer on stdout, and writes its results, however it ended. Its error
// carries the exit code (runner.Error): nil when a capacity was found; runner.Failed when the
// lowest load probed failed or the search stopped; runner.Undecided when no load could be decided;
// runner.Interrupted on a signal; runner.BadInput when the target or the results directory was
// refused before anything was sent.
func (p *Plan) Run(ctx context.Context, stdout, stderr io.Writer) error {
	ctx, stop := runner.Interruptible(ctx, stderr)
	defer stop()
	firstSc := p.withStages([]workload.Stage{p.stageAt(p.opt.Start)})
	if err := runner.CheckTarget(ctx, firstSc); err != nil {
		return err
	}
	if err := runner.CheckOpenFiles(firstSc, stderr); err != nil {
		return err
	}
	w, err := firstSc.Build()
	if err != nil {
		return badInput("building the workload: %v", err)
	}
	// Before any traffic (the preflight included); the first probe's records are the estimate.
	if err := runner.CheckResultsDir(p.given.Base, firstSc, w); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	baseURL, closeMock, err := runner.StartTarget(ctx, firstSc, w, p.given.Preflight, log, stderr)
	if err != nil {
		return err
	}
	defer closeMock()
	dir, err := runner.MakeRunDir(p.given.Base, p.sc.Name, "")
	if err != nil {
		return badInput("results directory: %v; choose another with --out or output.dir", err)
	}
	pr := &prober{plan: p, baseURL: baseURL, dir: dir, log: log}
	runs := "runs"
	if p.opt.Repeats == 1 {
		runs = "run"
	}
	fmt.Fprintf(stdout, "plload search %s: %s from %g (at most %g, resolution %s, %d %s per load), SLO %s; results in %s\n",
		p.sc.Name, p.knob, p.opt.Start, p.opt.Max, p.opt.Resolution, p.opt.Repeats, runs, resultfiles.SLOText(p.sc.SLO), dir)
	opt := p.opt
	opt.OnProbe = func(pb search.Probe) {
		fmt.Fprintf(stdout, "probe %02d (stage %02d): %s — %s: %s\n", pr.count, pb.Stage, p.valueText(pb.Value), pb.Verdict, pb.Reason)
	}
	started := time.Now()
	res, err := search.Run(ctx, opt, pr.probe, p.slo.Judge)
	return p.finish(pr, res, err, started, stdout)
}

// finish writes the results of a search however it ended — search.json, the report with the
// capacity curve, scenario.resolved.yaml with the probes as stages — prints the answer, and decides
// the exit code.
func (p *Plan) finish(pr *prober, res search.Result, runErr error, started time.Time, stdout io.Writer) error {
	dir := pr.dir
	sc := p.withStages(pr.specs)
	interrupted := errors.Is(runErr, engine.ErrInterrupted) || errors.Is(runErr, context.Canceled)
	switch {
	case interrupted:
		res.Stop = "interrupted before the search ended"
		if pr.partial != nil {
			res.Stop += ", during the probe at " + p.valueText(pr.partial.Value) + " (partial, not judged)"
			res.Probes = append(res.Probes, *pr.partial)
		}
	case runErr != nil:
		res.Stop = "stopped: " + runErr.Error()
	}
	res.Stopped = res.Stopped || runErr != nil
	chosen, chosenStage := p.chosen(res, pr.stages)
	headline := p.noCapacityText(res, chosen)
	if headline == "" && p.given.Render.Headline != nil {
		headline = p.given.Render.Headline(chosen, p.sessionsAt(res, chosen), p.lowerBound(res)) + p.undecidedNote(res)
	}
	lines := []string{headline, p.answerText(res)}
	err := p.writeResults(pr, sc, res, chosenStage, lines, started, interrupted)
	fmt.Fprintf(stdout, "\n%s\n%s\nresults in %s\n", lines[0], lines[1], dir)
	switch {
	case interrupted:
		return &runner.Error{Code: runner.Interrupted, Err: fmt.Errorf("interrupted: the last probe is partial; results in %s", dir)}
	case err != nil:
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("writing the results: %w (results in %s)", err, dir)}
	case runErr != nil:
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("the search stopped: %w; results in %s", runErr, dir)}
	case res.Invalid:
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("the search stopped: %s; results in %s", res.Stop, dir)}
	case res.Best == nil && !res.LowestFailed && res.Undecided != nil:
		// The lowest load is undecided: the evidence says neither yes nor no there, which is not "none".
		what := "no load probed could be decided against the SLO"
		if failed := failedLoads(res); len(failed) > 0 {
			what = fmt.Sprintf("no load probed met the SLO, and the lowest could not be decided (%s failed; %s undecided)", p.listText(failed), p.rangeText(*res.Undecided))
		}
		return &runner.Error{Code: runner.Undecided, Err: fmt.Errorf("%s (%s): %s; longer probes (the first stage's duration) or more --repeats decide it; results in %s", what, resultfiles.SLOText(p.sc.SLO), res.Stop, dir)}
	case res.Best == nil:
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("no probe met the SLO (%s): %s; results in %s", resultfiles.SLOText(p.sc.SLO), res.Stop, dir)}
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, "report.html"))
	return nil
}

// writeResults writes scenario.resolved.yaml, the report and search.json.
func (p *Plan) writeResults(pr *prober, sc *workload.Scenario, res search.Result, chosenStage int, lines []string, started time.Time, interrupted bool) error {
	dir := pr.dir
	resolved, err := sc.ResolvedYAML()
	if err == nil {
		err = metrics.WriteFileAtomic(filepath.Join(dir, "scenario.resolved.yaml"), resolved)
	}
	gpu := map[int]*metrics.GPUSummary{}
	for _, st := range pr.stages {
		gpu[st.Stage] = st.GPU
	}
	shown := make([]resultfiles.SearchProbe, len(res.Probes))
	for i, pb := range res.Probes {
		shown[i] = resultfiles.SearchProbe{Value: pb.Value, Verdict: string(pb.Verdict), Reason: pb.Reason, Stage: pb.Stage, Decided: pb.Decided,
			GPU: resultfiles.NewSearchGPU(gpu[pb.Stage])}
	}
	err = errors.Join(err, resultfiles.Search{Knob: p.knob, SLO: p.limits, Best: res.Best, Undecided: res.Undecided, Probes: shown,
		Stop: res.Stop, Complete: !res.Stopped}.Write(dir))
	if len(pr.stages) == 0 {
		return err
	}
	rep := resultfiles.New(sc, pr.stages, resultfiles.Meta{Tool: p.given.Tool, ScenarioFile: runner.AbsPath(p.sc.File),
		Command: "plload search " + runner.AbsPath(p.sc.File) + p.args + " --out " + runner.AbsPath(p.given.Base), Started: started, Finished: time.Now(), Interrupted: interrupted})
	werr := rep.Write(dir)
	if werr == nil && p.given.Render.Report != nil {
		werr = p.given.Render.Report(dir, sc, rep)
	}
	if werr != nil {
		return errors.Join(err, werr)
	}
	if p.given.Render.Curve == nil {
		return err
	}
	unit := p.sc.Load.LoadMode().Knob.Unit // plural: "sessions", "req/s"
	return errors.Join(err, p.given.Render.Curve(dir, pr.stages, shown, chosenStage, unit, lines))
}

// chosen is the stage report of the answer: the last run of the best load.
func (p *Plan) chosen(res search.Result, stages []*resultfiles.StageReport) (*resultfiles.StageReport, int) {
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
func (p *Plan) sessionsAt(res search.Result, chosen *resultfiles.StageReport) float64 {
	switch {
	case chosen == nil:
		return 0
	case p.knob == KnobConcurrency:
		return *res.Best
	}
	return chosen.Summary.Active.Mean
}

// answerText is the answer with its range: "meets SLO up to 12 sessions (13–14 undecided)", and why
// the search stopped.
func (p *Plan) answerText(res search.Result) string {
	text := "no load probed was decided"
	switch {
	case res.LowestFailed:
		text = "meets SLO at no load probed"
	case p.lowerBound(res) && res.Above != nil:
		text = fmt.Sprintf("meets SLO at %s at least (%g did not): the search stopped before narrowing the range", p.valueText(*res.Best), *res.Above)
	case p.lowerBound(res):
		text = "meets SLO at " + p.valueText(*res.Best) + " at least: the search stopped before a higher load was decided"
	case res.Best != nil:
		text = "meets SLO up to " + p.valueText(*res.Best)
	case !res.LowestFailed && res.Undecided != nil && len(failedLoads(res)) > 0:
		text = "meets SLO at no load shown: " + p.listText(failedLoads(res)) + " failed, and the lowest load probed was undecided"
	case !res.LowestFailed && res.Undecided != nil:
		text = "undecided at every load probed: none failed, none was shown to meet the SLO"
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

// lowerBound reports whether the answer is only a lower bound: a load passed, but the search stopped
// (an invalid probe, the probe budget, an interrupt, an error) before it narrowed the range to the
// resolution, or before any load above it was decided short of --max.
func (p *Plan) lowerBound(res search.Result) bool {
	return res.Best != nil && (res.Above == nil && *res.Best < p.opt.Max || res.Stopped)
}

// noCapacityText is the answer's first line when no stage is the capacity, in the words of the
// probe table: "none" only where the lowest load probed failed; "undecided" where nothing failed
// and nothing was shown to pass; "unknown" where the search stopped first. "" when there is a
// capacity stage (the report's headline renders it).
func (p *Plan) noCapacityText(res search.Result, chosen *resultfiles.StageReport) string {
	switch {
	case chosen != nil:
		return ""
	case res.Best != nil:
		return "capacity at SLO: " + p.valueText(*res.Best) + " met the SLO, but its probe's results are missing"
	case res.LowestFailed:
		return "capacity at SLO: none — the lowest load probed failed the SLO"
	case res.Invalid || len(res.Probes) == 0 || res.Undecided == nil:
		return "capacity at SLO: unknown — the search stopped before any load was decided: " + res.Stop
	}
	if failed := failedLoads(res); len(failed) > 0 {
		// Loads failed above an undecided lowest one: the capacity is below the lowest failure, if
		// there is one at all.
		return fmt.Sprintf("capacity at SLO: undecided, below %s — %s failed the SLO and %s undecided; none was shown to meet it",
			p.valueText(failed[0]), p.listText(failed), p.rangeText(*res.Undecided))
	}
	return "capacity at SLO: undecided — no load probed was shown to meet the SLO, and none failed it"
}

// undecidedNote is what the headline of a capacity adds when loads were left undecided, so the
// first line never reads as the whole answer while the range is on the next: "; 8–10 sessions
// undecided, so the capacity may be higher". "" when none was.
func (p *Plan) undecidedNote(res search.Result) string {
	u := res.Undecided
	if u == nil || res.Best == nil {
		return ""
	}
	if u[1] > *res.Best {
		return "; " + p.rangeText(*u) + " undecided, so the capacity may be higher"
	}
	return "; " + p.rangeText(*u) + " undecided"
}

// failedLoads are the loads whose last probe failed, lowest first.
func failedLoads(res search.Result) []float64 {
	last := map[float64]search.Verdict{}
	for _, pb := range res.Probes {
		last[pb.Value] = pb.Verdict
	}
	var out []float64
	for v, verdict := range last {
		if verdict == search.Fail {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// listText writes loads as the probe table does: "2, 4 and 16 sessions".
func (p *Plan) listText(values []float64) string {
	if len(values) == 1 {
		return p.valueText(values[0])
	}
	parts := make([]string, len(values)-1)
	for i, v := range values[:len(values)-1] {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ", ") + " and " + p.valueText(values[len(values)-1])
}

// rangeText writes an undecided range: "1 session", "8–10 sessions".
func (p *Plan) rangeText(u [2]float64) string {
	if u[0] == u[1] {
		return p.valueText(u[0])
	}
	return strconv.FormatFloat(u[0], 'g', -1, 64) + "–" + p.valueText(u[1])
}
