package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/ab"
	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/report"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/workload"
)

// abCommand is plload ab: one scenario against two targets at once, then the comparison (docs/measurement.md).
func abCommand() *cli.Command {
	return &cli.Command{
		Name:      "ab",
		Usage:     "run one scenario against two targets in the same window and compare them",
		ArgsUsage: "SCENARIO.yaml --target A=URL --target B=URL",
		UsageText: "plload ab SCENARIO.yaml --target old=http://10.0.0.5:8000/v1 --target new=http://10.0.0.6:8000/v1 [--model new=M] [--out DIR]",
		Description: "Runs the scenario against both targets at the same time, in one process: the same seed makes\n" +
			"the same sessions for both, and each stage starts on both at one instant, so the two windows are\n" +
			"the same window and drift in the client, the network or the time of day hits both alike. The\n" +
			"first --target is A (the incumbent), the second B. Each target gets its own results directory\n" +
			"(NAME/ under <out>/<name>-ab-<time>/, a normal plload results directory) and the comparison is\n" +
			"ab.json and ab.md beside them: per metric A, B, B − A, its 95 % bootstrap interval and B's verdict\n" +
			"(better, worse, or same: no significant difference). Output chars/s and time per output char\n" +
			"(tpoc) compare servers whose tokenizers differ; HTTP 429s are counted apart.\n\n" +
			"Before anything is sent, one streamed request checks each target (--no-preflight skips it);\n" +
			"a target it refuses stops the A/B before either gets traffic.\n\n" +
			"Exit codes:\n" +
			"  0    both targets ran; whatever the verdicts\n" +
			"  1    a side failed: its preflight was refused, a stage was stopped as unreachable, or no\n" +
			"       request of a stage succeeded\n" +
			"  2    bad input: --target/--model flags, scenario, files; nothing was sent\n" +
			"  130  interrupted",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "target", Usage: "NAME=URL of a target (OpenAI base URL, with /v1); give it twice: A, then B"},
			&cli.StringSliceFlag{Name: "model", Usage: "NAME=MODEL: the model to ask that target for (default: the scenario's target.model)"},
			outFlag(),
			noPreflightFlag("to each target before the first stage"),
		},
		Action: abAction,
	}
}

// abSide is one target's run: its scenario (the file's, with this target's URL and model), its
// workload (built from the same seed as the other's), its results.
type abSide struct {
	target resultfiles.ABTarget
	sc     *workload.Scenario
	w      *workload.Workload
	dir    string
	stages []*resultfiles.StageReport
	// runErr is why its engine run stopped (nil: it ran every stage); summaryErr a stage summary or
	// the report that could not be written.
	runErr, summaryErr error
}

func abAction(ctx context.Context, cmd *cli.Command) error {
	stdout, stderr := &lockedWriter{w: cmd.Root().Writer}, &lockedWriter{w: cmd.Root().ErrWriter}
	targets, err := parseABTargets(cmd.StringSlice("target"), cmd.StringSlice("model"))
	if err != nil {
		return err
	}
	sc, warnings, err := loadScenario(cmd, workload.LoadOptions{ForRun: true})
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, w.Error())
	}
	ctx, stop := runner.Interruptible(ctx, stderr)
	defer stop()
	sides, err := prepareABSides(ctx, sc, targets, !cmd.Bool("no-preflight"), stderr)
	if err != nil {
		return err
	}
	base := sc.Output.Dir
	if cmd.IsSet("out") {
		base = cmd.String("out")
	}
	dir, err := makeABDirs(base, sc.Name, sides)
	if err != nil {
		return badInput("results directory: %v; choose another with --out or output.dir; no stage was started", err)
	}
	fmt.Fprintf(stdout, "plload ab %s: %s (A) vs %s (B), %d stage(s), results in %s\n", sc.Name, sides[0].target.Name, sides[1].target.Name, len(sides[0].w.Stages), dir)
	started := time.Now()
	runABSides(ctx, sides, stdout, stderr)
	for _, s := range sides {
		writeABSideReport(s, started, cmd)
	}
	res, err := compareABSides(sides, uint64(sc.Seed))
	removeABRecords(sides)
	if err != nil {
		return exitErr(exitFailed, fmt.Errorf("comparing the targets: %w (results in %s)", err, dir))
	}
	if err := writeABResult(dir, res); err != nil {
		return exitErr(exitFailed, fmt.Errorf("writing the comparison: %w", err))
	}
	fmt.Fprintf(stdout, "\n%s\ncomparison: %s\n", ab.Markdown(res), filepath.Join(dir, "ab.md"))
	return abOutcome(ctx, sides, dir)
}

// abTarget is one --target, with its --model.
type abTarget struct{ name, url, model string }

// abFiles are the files the A/B writes next to the sides' directories, so no side may be named so.
var abFiles = []string{"ab.json", "ab.md"}

// abName is what a target's name may hold: it names its results directory.
var abName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// parseABTargets reads the two --target NAME=URL flags (A first) and any --model NAME=MODEL.
func parseABTargets(targets, models []string) ([]abTarget, error) {
	const usage = "accepted: exactly two, --target A=URL --target B=URL (the first is A, the incumbent), such as --target old=http://10.0.0.5:8000/v1"
	if len(targets) != 2 {
		return nil, badInput("--target given %d time(s): %s; nothing was sent", len(targets), usage)
	}
	var out []abTarget
	for _, t := range targets {
		name, raw, ok := strings.Cut(t, "=")
		if !ok || name == "" || raw == "" {
			return nil, badInput("--target %q: not NAME=URL; %s; nothing was sent", t, usage)
		}
		if !abName.MatchString(name) {
			return nil, badInput("--target %q: the name %q names its results directory: accepted: letters, digits, '.', '_', '-' (up to 64, not starting with a punctuation mark); nothing was sent", t, name)
		}
		if slices.ContainsFunc(abFiles, func(f string) bool { return strings.EqualFold(f, name) }) {
			// The side's directory would take the comparison's own file name: the run is lost at the end.
			return nil, badInput("--target %q: the name %q is a file of the A/B's results (%s); accepted: any other name; nothing was sent", t, name, strings.Join(abFiles, ", "))
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, badInput("--target %q: %q is not an http:// or https:// URL with a host; accepted: the server's OpenAI base URL, such as http://10.0.0.5:8000/v1; nothing was sent", t, raw)
		}
		for _, o := range out {
			if strings.EqualFold(o.name, name) {
				return nil, badInput("--target: the name %q is given twice (names are compared without case: they name directories); accepted: two different names; nothing was sent", name)
			}
		}
		out = append(out, abTarget{name: name, url: raw})
	}
	seen := map[string]bool{}
	for _, m := range models {
		name, model, ok := strings.Cut(m, "=")
		i := slices.IndexFunc(out, func(t abTarget) bool { return t.name == name })
		switch {
		case !ok || model == "":
			return nil, badInput("--model %q: not NAME=MODEL; accepted: a target's name and the model to ask it for, such as --model %s=llama-3-8b; nothing was sent", m, out[1].name)
		case i < 0:
			return nil, badInput("--model %q: no --target is named %q; accepted: %s or %s; nothing was sent", m, name, out[0].name, out[1].name)
		case seen[name]:
			return nil, badInput("--model: target %q is given a model twice; accepted: one --model per target; nothing was sent", name)
		}
		seen[name], out[i].model = true, model
	}
	return out, nil
}

// prepareABSides makes each target's scenario and workload and checks both targets before either
// is sent a stage: a host that does not resolve is bad input (exit 2), a target whose preflight
// request is refused is a failed side (exit 1), and nothing goes to the other target either.
func prepareABSides(ctx context.Context, sc *workload.Scenario, targets []abTarget, preflight bool, stderr io.Writer) ([]*abSide, error) {
	var sides []*abSide
	for _, t := range targets {
		s := *sc // the file's scenario, this target's URL and model; the other fields are read only
		s.Target.BaseURL, s.Target.Mock = t.url, nil
		if t.model != "" {
			s.Target.Model = t.model
		}
		if err := runner.CheckTarget(ctx, &s); err != nil {
			return nil, fmt.Errorf("--target %s: %w", t.name, err)
		}
		if err := runner.CheckOpenFiles(&s, stderr); err != nil {
			return nil, err
		}
		// Each side builds its own workload from the one seed: the engine releases a pool's dataset
		// bytes as it writes them, so two runs must not share one.
		w, err := s.Build()
		if err != nil {
			return nil, badInput("building the workload: %v", err)
		}
		sides = append(sides, &abSide{target: resultfiles.ABTarget{Name: t.name, URL: t.url, Model: s.Target.Model, Dir: t.name}, sc: &s, w: w})
	}
	if !preflight {
		return sides, nil
	}
	for _, s := range sides {
		warning, err := engine.Preflight(ctx, engine.Config{Scenario: s.sc, Workload: s.w})
		switch {
		case ctx.Err() != nil:
			return nil, exitErr(exitInterrupted, errors.New("interrupted before the first stage; nothing was written"))
		case err != nil:
			return nil, exitErr(exitFailed, fmt.Errorf("--target %s=%s: %w; the A/B did not start: nothing was sent to either target beyond the one preflight request", s.target.Name, s.target.URL, err))
		case warning != "":
			fmt.Fprintf(stderr, "warning: --target %s: %s\n", s.target.Name, warning)
		}
	}
	return sides, nil
}

// makeABDirs creates <base>/<name>-ab-<time>/ and a results directory per target in it, each with
// its scenario.resolved.yaml (its URL and model: `plload run` of it reruns that side alone).
func makeABDirs(base, name string, sides []*abSide) (string, error) {
	dir, err := runner.MakeRunDir(base, name+"-ab", "")
	if err != nil {
		return "", err
	}
	for _, s := range sides {
		s.dir = filepath.Join(dir, s.target.Dir)
		if err := os.Mkdir(s.dir, 0o755); err != nil {
			return "", err
		}
		resolved, err := s.sc.ResolvedYAML()
		if err != nil {
			return "", fmt.Errorf("resolving the scenario: %w", err)
		}
		if err := metrics.WriteFileAtomic(filepath.Join(s.dir, "scenario.resolved.yaml"), resolved); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// runABSides runs both targets' engines at once, each stage starting on both at one instant.
func runABSides(ctx context.Context, sides []*abSide, stdout, stderr io.Writer) {
	barrier := newStartBarrier(len(sides))
	var wg sync.WaitGroup
	for _, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("side", s.target.Name)
			_, s.runErr = engine.Run(ctx, engine.Config{
				Scenario: s.sc, Workload: s.w, Dir: s.dir, Log: log,
				ServerMetricsURL: runner.ServerMetricsURL(s.sc, s.target.URL),
				StageStart:       barrier.wait,
				OnStage: func(r engine.StageResult) {
					if r.Start.IsZero() { // the other side stopped before this stage began: nothing ran
						os.RemoveAll(r.Dir)
						return
					}
					fmt.Fprintf(stdout, "[%s] %s\n", s.target.Name, runner.StageLine(r, len(s.w.Stages)))
					st, err := runner.SummarizeStage(toolName(), s.sc, s.w, r, nil)
					if err != nil {
						s.summaryErr = errors.Join(s.summaryErr, err)
						return
					}
					s.stages = append(s.stages, st)
				},
			})
			// A side that stopped early stops the other at its next stage: the comparison is over.
			barrier.leave(s.target.Name, s.runErr)
		}()
	}
	wg.Wait()
}

// errOtherSideStopped ends a side's run because the other side's stopped: not a failure of its own.
var errOtherSideStopped = errors.New("the other target stopped")

// startBarrier lines the targets' stages up: a stage starts when every running side has reached it,
// at one instant for all (engine.Config.StageStart, the hook sharded runs use), so each stage's
// window is the same on both sides.
type startBarrier struct {
	mu      sync.Mutex
	parties int
	gates   map[int]*stageGate
	failed  error // a side stopped early: no further stage starts
}

type stageGate struct {
	arrived int
	at      time.Time
	open    chan struct{}
}

// abStartLead is how far ahead of the last arrival a stage's start is set: both engines must be
// waiting for it, not yet waking, when it comes.
const abStartLead = 20 * time.Millisecond

func newStartBarrier(parties int) *startBarrier {
	return &startBarrier{parties: parties, gates: map[int]*stageGate{}}
}

// wait is called by each side before each stage; it returns the stage's start once every running
// side has arrived, or an error when a side stopped early or ctx ended.
func (b *startBarrier) wait(ctx context.Context, stage int) (time.Time, error) {
	b.mu.Lock()
	if b.failed != nil {
		b.mu.Unlock()
		return time.Time{}, b.failed
	}
	g := b.gates[stage]
	if g == nil {
		g = &stageGate{open: make(chan struct{})}
		b.gates[stage] = g
	}
	g.arrived++
	b.openReady()
	b.mu.Unlock()
	select {
	case <-g.open:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if g.at.IsZero() {
		return time.Time{}, b.failed
	}
	return g.at, nil
}

// leave is called as a side's run ends; err (a side that did not finish) closes every later gate.
func (b *startBarrier) leave(name string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parties--
	if err != nil && b.failed == nil {
		b.failed = fmt.Errorf("%w: target %s stopped (%v), so the A/B is over", errOtherSideStopped, name, err)
		for _, g := range b.gates {
			if g.at.IsZero() {
				close(g.open)
				g.arrived = -1 << 30 // never opened again by openReady
			}
		}
	}
	b.openReady()
}

// openReady opens the gates every running side has reached (b.mu held).
func (b *startBarrier) openReady() {
	for _, g := range b.gates {
		if g.at.IsZero() && g.arrived >= b.parties && g.arrived > 0 {
			g.at = time.Now().Add(abStartLead)
			close(g.open)
		}
	}
}

// writeABSideReport writes a side's report.json and report.md, as plload run does.
func writeABSideReport(s *abSide, started time.Time, cmd *cli.Command) {
	command := "plload ab " + runner.AbsPath(cmd.Args().First())
	for _, t := range cmd.StringSlice("target") {
		command += " --target " + t
	}
	for _, m := range cmd.StringSlice("model") {
		command += " --model " + m
	}
	rep := resultfiles.New(s.sc, s.stages, resultfiles.Meta{Tool: toolName(), ScenarioFile: runner.AbsPath(filepath.Join(s.dir, "scenario.resolved.yaml")),
		Command: command, Started: started, Finished: time.Now(), Interrupted: errors.Is(s.runErr, engine.ErrInterrupted)})
	if err := report.Write(s.dir, s.sc, rep); err != nil {
		s.summaryErr = errors.Join(s.summaryErr, err)
	}
}

// removeABRecords deletes the records of a scenario with output.record_requests: false, once the
// comparison has read them.
func removeABRecords(sides []*abSide) {
	for _, s := range sides {
		if s.sc.Output.RecordRequests {
			continue
		}
		for _, st := range s.stages {
			os.Remove(filepath.Join(s.dir, fmt.Sprintf("stage_%02d", st.Stage), "profile_export.jsonl"))
		}
	}
}

// compareABSides compares every stage both sides finished, from their records.
func compareABSides(sides []*abSide, seed uint64) (resultfiles.AB, error) {
	a, b := sides[0], sides[1]
	res := resultfiles.AB{Targets: []resultfiles.ABTarget{a.target, b.target}, Metrics: []resultfiles.ABMetric{}, Requests: []resultfiles.ABStageCounts{},
		SameDataset: true, Confidence: 0.95, Resamples: ab.DefaultResamples, IntervalMethod: ab.IntervalMethod, Notes: []string{}}
	for _, sa := range a.stages {
		i := slices.IndexFunc(b.stages, func(st *resultfiles.StageReport) bool { return st.Stage == sa.Stage })
		if i < 0 {
			continue // B did not run it: nothing to compare
		}
		sb := b.stages[i]
		ea, eb, cut := commonWindow(sa.Summary, sb.Summary, a.target.Name, b.target.Name)
		xa, err := abSample(a, sa, ea)
		if err != nil {
			return res, err
		}
		xb, err := abSample(b, sb, eb)
		if err != nil {
			return res, err
		}
		slo := resultfiles.StageInput(a.sc, sa.Stage-1).SLO
		res.Metrics = append(res.Metrics, ab.Compare(sa.Stage, xa, xb, slo, ab.Options{Resamples: ab.DefaultResamples, Seed: seed + uint64(sa.Stage)})...)
		res.Requests = append(res.Requests, resultfiles.ABStageCounts{Stage: sa.Stage, Target: a.target.Name, ABCounts: xa.Counts, DatasetSHA256: sa.DatasetSHA256},
			resultfiles.ABStageCounts{Stage: sb.Stage, Target: b.target.Name, ABCounts: xb.Counts, DatasetSHA256: sb.DatasetSHA256})
		if sa.DatasetSHA256 != sb.DatasetSHA256 {
			res.SameDataset = false
		}
		res.Notes = append(res.Notes, ab.StageNotes(sa.Stage, a.target, b.target, xa.Counts, xb.Counts)...)
		if sa.Summary.Partial || sb.Summary.Partial {
			res.Notes = append(res.Notes, fmt.Sprintf("stage %02d is partial (cut short): its windows are what ran", sa.Stage))
		}
		if cut != "" {
			res.Notes = append(res.Notes, fmt.Sprintf("stage %02d: %s", sa.Stage, cut))
		}
	}
	return res, nil
}

// commonWindow is where each side's window ends for the comparison: its own E_eff, unless one side
// was cut short (stopped as unreachable, interrupted) — then both end as long after their W as the
// shorter one ran, so the two windows stay the same instants (both sides start together) and the
// paired slices of the throughputs pair the same moments; cut says so ("" when nothing was cut).
func commonWindow(a, b *metrics.StageSummary, nameA, nameB string) (endA, endB int64, cut string) {
	la, lb := a.Window.EEffNs-a.Window.WNs, b.Window.EEffNs-b.Window.WNs
	// Both cut by one interrupt end within moments of each other: a percent, or a tenth of a
	// second, is no other window.
	if !a.Partial && !b.Partial || la <= 0 || lb <= 0 || abs64(la-lb) <= max(max(la, lb)/100, int64(100*time.Millisecond)) {
		return a.Window.EEffNs, b.Window.EEffNs, ""
	}
	short, long, l, full := nameA, nameB, la, lb
	if lb < la {
		short, long, l, full = nameB, nameA, lb, la
	}
	cut = fmt.Sprintf("%s was cut short after %.1f s of the window; %s's %.1f s are compared over the same first %.1f s only (same window)",
		short, float64(l)/1e9, long, float64(full)/1e9, float64(l)/1e9)
	return a.Window.WNs + l, b.Window.WNs + l, cut
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// abSample reads one side's stage records over the stage's window (stage.json's), ending at end.
func abSample(s *abSide, st *resultfiles.StageReport, end int64) (ab.Sample, error) {
	path := filepath.Join(s.dir, fmt.Sprintf("stage_%02d", st.Stage), "profile_export.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return ab.Sample{}, err
	}
	defer f.Close()
	c := ab.NewCollector(st.Summary.Window.WNs, end)
	if err := metrics.ReadRecords(f, func(r *metrics.Record) error { c.Add(r); return nil }); err != nil {
		return ab.Sample{}, fmt.Errorf("%s: %w", path, err)
	}
	return c.Sample(), nil
}

func writeABResult(dir string, res resultfiles.AB) error {
	if err := res.Write(dir); err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "ab.md"), []byte(ab.Markdown(res)))
}

// abOutcome: 130 when interrupted, 1 when a side failed (a stage stopped or without a success, a
// report not written), else 0 whatever the verdicts.
func abOutcome(ctx context.Context, sides []*abSide, dir string) error {
	var failures []string
	for _, s := range sides {
		// A side waiting at the barrier when the signal came ends with ctx's error, not ErrInterrupted.
		if errors.Is(s.runErr, engine.ErrInterrupted) || ctx.Err() != nil {
			return exitErr(exitInterrupted, fmt.Errorf("interrupted: the last stage is partial; results in %s", dir))
		}
		if s.runErr != nil && !errors.Is(s.runErr, errOtherSideStopped) {
			failures = append(failures, fmt.Sprintf("%s: %v", s.target.Name, s.runErr))
		}
		if s.summaryErr != nil {
			failures = append(failures, fmt.Sprintf("%s: writing its results: %v", s.target.Name, s.summaryErr))
		}
		for _, st := range s.stages {
			if st.Summary.Requests.Succeeded == 0 && s.runErr == nil {
				failures = append(failures, fmt.Sprintf("%s: stage %02d: no request in its window succeeded", s.target.Name, st.Stage))
			}
		}
	}
	if len(failures) > 0 {
		return exitErr(exitFailed, fmt.Errorf("FAILED (exit 1): a side failed:\n  %s\nresults in %s", strings.Join(failures, "\n  "), dir))
	}
	return nil
}

// lockedWriter serializes writes: both targets' engines log and print at once.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
