package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/matrix"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/report"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/workload"
)

func matrixCommand() *cli.Command {
	return &cli.Command{
		Name:      "matrix",
		Usage:     "run the seed's run matrix from one scenario: A closed-loop ladder, B open loop at mean/peak/peak+30 %, C replay, D ramp",
		ArgsUsage: "SCENARIO.yaml",
		UsageText: "plload matrix SCENARIO.yaml [--repeats 3] [--out DIR]",
		Description: "Runs the standard run matrix of a customer benchmark, each part a scenario of its own (the file with\n" +
			"its load replaced) run as plload run runs it, into <out>/<name>-matrix-<time>/A/, B/, C/, D/:\n" +
			"  A  closed loop: concurrency 1, 2, 4, … doubling up to matrix.max_concurrency (default: the\n" +
			"     scenario's largest concurrency, else 64) — saturation throughput\n" +
			"  B  open loop (request_rate) at the mean, the peak and 1.3 × the peak rate — SLO and goodput\n" +
			"  C  replay of workload.trace on its own clock (skipped, with the reason, when there is none)\n" +
			"  D  a rate ramp from mean to 1.3 × peak over matrix.ramp (2m), held matrix.hold (3m), with\n" +
			"     its time to absorb (the SLO's latency limits judged per slo.window)\n" +
			"Rates come from matrix: {mean_rate, peak_rate} (a request_rate stage's unit), else from the\n" +
			"comments plload fit writes into a fitted scenario. Every point of A and B has the warmup and\n" +
			"duration of the scenario's first stage; A, B and C run --repeats times and the report gives the\n" +
			"spread (min–max) of each number. report.md and report.html follow the seed's template:\n" +
			"Verdict, Question, Workload, Configuration, Method, Results, Cost, Limitations, Reproduce.\n\n" +
			"Exit codes: 0 every part ran and some stage met the SLO (or none is set); 1 a part failed to run\n" +
			"or had a failed stage (as plload run decides), or no stage of any part met the SLO; 2 bad input\n" +
			"(no rates, a bad scenario, a refused target before anything was sent); 130 interrupted.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "repeats", Value: 3, Usage: "runs of every point of A, B and C, for the spread"},
			outFlag(),
			&cli.BoolFlag{Name: "quiet", Usage: "no progress display (stage lines and tables still print)"},
			noPreflightFlag("before each part"),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			m, warnings, err := newMatrixRun(cmd)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(cmd.Root().ErrWriter, w.Error())
			}
			return m.run(ctx, cmd.Root().Writer, cmd.Root().ErrWriter)
		},
	}
}

// matrixRun is a matrix whose every part's scenario was built and checked: nothing is sent before
// it exists.
type matrixRun struct {
	sc      *workload.Scenario   // the file as written
	plan    matrix.Plan          // the parts
	parts   []*workload.Scenario // plan.Parts[i]'s scenario (nil: skipped)
	base    string               // results base directory
	opt     runner.Options       // every part's run options but its base
	command string               // reruns the matrix
}

// maxMatrixRepeats bounds --repeats: more runs of one point than this belong in a soak, not a matrix.
const maxMatrixRepeats = 10

func newMatrixRun(cmd *cli.Command) (*matrixRun, workload.Issues, error) {
	sc, warnings, err := loadScenario(cmd, workload.LoadOptions{ForRun: true})
	if err != nil {
		return nil, nil, err
	}
	repeats := int(cmd.Int("repeats"))
	if repeats < 1 || repeats > maxMatrixRepeats {
		return nil, nil, badInput("--repeats %d: accepted: 1 to %d runs of every point; nothing was sent", repeats, maxMatrixRepeats)
	}
	data, err := os.ReadFile(sc.File)
	if err != nil {
		return nil, nil, badInput("%s: %v; nothing was sent", sc.File, err)
	}
	rates, err := matrix.RatesOf(sc, data)
	if err != nil {
		return nil, nil, badInput("%s: %v; nothing was sent", sc.File, err)
	}
	m := &matrixRun{sc: sc, plan: matrix.NewPlan(sc, rates, repeats), base: sc.Output.Dir,
		opt: runner.Options{Quiet: cmd.Bool("quiet"), Preflight: !cmd.Bool("no-preflight"), FromResolved: true,
			Tool: toolName(), Render: report.Render, Table: report.StageTable}}
	if cmd.IsSet("out") {
		m.base = cmd.String("out")
	}
	m.command = fmt.Sprintf("plload matrix %s --repeats %d --out %s", runner.AbsPath(sc.File), repeats, runner.AbsPath(m.base))
	m.parts = make([]*workload.Scenario, len(m.plan.Parts))
	for i, p := range m.plan.Parts {
		if p.Skip != "" {
			continue
		}
		psc, part, partWarnings, err := partScenario(sc.File, data, p)
		if err != nil {
			return nil, nil, err
		}
		m.plan.Parts[i], m.parts[i] = part, psc
		for _, w := range partWarnings {
			if strings.HasPrefix(w.Path, "load.") {
				warnings = append(warnings, &workload.Issue{Severity: w.Severity, File: fmt.Sprintf("part %s", p.ID), Path: w.Path, Message: w.Message})
			}
		}
	}
	return m, warnings, nil
}

// partScenario is the part's scenario, checked as any file is and built once (a dataset or trace
// slice that cannot be made is refused before anything is sent), with closed-loop pools sized.
func partScenario(file string, data []byte, p matrix.Part) (*workload.Scenario, matrix.Part, workload.Issues, error) {
	parse := func(p matrix.Part) (*workload.Scenario, workload.Issues, error) {
		text, err := matrix.ScenarioYAML(data, p)
		if err != nil {
			return nil, nil, badInput("%s: part %s: %v; nothing was sent", file, p.ID, err)
		}
		psc, issues := workload.Parse(file, text, workload.LoadOptions{ForRun: true})
		if err := issues.Err(); err != nil {
			return nil, nil, badInput("%s: part %s (%s, load.mode %s): the scenario made for it has errors; nothing was sent:\n%v", file, p.ID, p.Title, p.Mode, err)
		}
		return psc, issues.Warnings(), nil
	}
	psc, _, err := parse(p)
	if err != nil {
		return nil, p, nil, err
	}
	p = matrix.SizePools(psc, p)
	psc, warnings, err := parse(p)
	if err != nil {
		return nil, p, nil, err
	}
	if _, err := psc.Build(); err != nil {
		return nil, p, nil, badInput("%s: part %s (%s): building its workload: %v; nothing was sent", file, p.ID, p.Title, err)
	}
	return psc, p, warnings, nil
}

// run runs the parts in order, writes the matrix report over their results and decides the exit code.
func (m *matrixRun) run(ctx context.Context, stdout, stderr io.Writer) error {
	ctx, stopSignals := quietInterrupt(ctx)
	defer stopSignals()
	dir, err := runner.MakeRunDir(m.base, m.sc.Name+"-matrix", "")
	if err != nil {
		return badInput("results directory: %v; choose another with --out or output.dir", err)
	}
	fmt.Fprintf(stdout, "plload matrix %s: %s; results in %s\n", m.sc.Name, m.planText(), dir)
	in := matrix.Input{Scenario: m.sc, Plan: m.plan, Dir: dir, Command: m.command, Tool: toolName(), Started: time.Now()}
	sent, unreachable := false, ""
	for i, p := range m.plan.Parts {
		o := matrix.Outcome{Part: p}
		switch {
		case in.Interrupted:
		case p.Skip != "":
			fmt.Fprintf(stdout, "\n== part %s: %s: skipped: %s ==\n", p.ID, p.Title, p.Skip)
		case unreachable != "":
			// More load on a target that stopped answering measures nothing but the outage.
			o.Part.Skip = unreachable
			fmt.Fprintf(stdout, "\n== part %s: %s: not run: %s ==\n", p.ID, p.Title, unreachable)
		default:
			fmt.Fprintf(stdout, "\n== part %s: %s ==\n", p.ID, p.Title)
			var code int
			o, code = m.runPart(ctx, p, m.parts[i], filepath.Join(dir, p.ID), stdout, stderr)
			if code == exitBadInput && !sent && len(o.Runs) == 0 {
				os.RemoveAll(dir) // nothing was sent: leave no empty matrix behind
				return exitErr(exitBadInput, fmt.Errorf("part %s %s", p.ID, strings.Join(o.Failures, "\n")))
			}
			sent = true
			in.Interrupted = code == exitInterrupted
			if why := abortedIn(o); why != "" {
				unreachable = fmt.Sprintf("part %s stopped: %s", p.ID, why)
			}
		}
		in.Outcomes = append(in.Outcomes, o)
	}
	in.Interrupted = in.Interrupted || ctx.Err() != nil // stopped after the last part's stages ended
	in.Finished = time.Now()
	return m.finish(in, stdout)
}

// quietInterrupt cancels the returned context on the first SIGINT, SIGTERM or SIGHUP, silently.
// Between parts no run's own handler (interruptible, which says what it does and exits at a second
// signal) is installed, and a signal there would kill the process before the matrix report is
// written; with this one the next part sees the cancelled context and the matrix ends as
// interrupted, report written, exit 130.
func quietInterrupt(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case <-signals:
			cancel()
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		close(done)
		cancel()
	}
}

// abortedIn is why the target stopped answering during the part, or "": the engine stopped a stage
// as unreachable, or the part's last stage got no answer at all — no request succeeded and its
// failures could not connect — which a stage shorter than load.abort_after ends before the engine's
// rule can say it.
func abortedIn(o matrix.Outcome) string {
	var last *resultfiles.StageReport
	for _, r := range o.Runs {
		for _, st := range r.Stages {
			if st.Engine.Aborted != "" {
				return st.Engine.Aborted
			}
			last = st
		}
	}
	if last == nil || last.Summary.Requests.Succeeded > 0 {
		return ""
	}
	for _, out := range last.Engine.Outages {
		if slices.Contains([]string{"refused", "dns", "tls", "connect"}, out.Kind) {
			return fmt.Sprintf("the target stopped answering: no request of stage %02d succeeded (%s × %d, first: %s)", last.Stage, out.Kind, out.Requests, out.FirstMessage)
		}
	}
	return ""
}

// planText is the parts in one line, for the terminal.
func (m *matrixRun) planText() string {
	var parts []string
	for _, p := range m.plan.Parts {
		switch {
		case p.Skip != "":
			parts = append(parts, p.ID+" skipped")
		default:
			parts = append(parts, fmt.Sprintf("%s %d stage(s) × %d run(s)", p.ID, len(p.Stages), p.Runs))
		}
	}
	return strings.Join(parts, ", ")
}

// runPart runs one part's scenario Runs times into partDir and reads its results back. code is the
// exit code of the run that stopped the part (exitOK when none did).
func (m *matrixRun) runPart(ctx context.Context, p matrix.Part, sc *workload.Scenario, partDir string, stdout, stderr io.Writer) (matrix.Outcome, int) {
	o := matrix.Outcome{Part: p}
	opt := m.opt
	opt.Base = partDir
	for range p.Runs {
		known := runDirs(partDir)
		dir, err := runner.Run(ctx, sc, opt, stdout, stderr)
		code := exitOK
		var ee *runner.Error
		if errors.As(err, &ee) {
			code = int(ee.Code)
		} else if err != nil {
			code = exitFailed
		}
		if dir == "" { // the run did not finish: a results directory it left (partial) still counts
			if fresh := slices.DeleteFunc(runDirs(partDir), func(d string) bool { return slices.Contains(known, d) }); len(fresh) > 0 {
				dir = fresh[0]
			}
		}
		if dir != "" {
			stages, rerr := resultfiles.ReadRun(dir)
			if rerr != nil {
				o.Failures = append(o.Failures, fmt.Sprintf("reading its results: %v", rerr))
			} else {
				o.Runs = append(o.Runs, matrix.Run{Dir: dir, Stages: stages})
				o.Failures = append(o.Failures, runner.Failures(sc, stages, true)...)
			}
		}
		switch {
		case code == exitInterrupted:
			return o, code
		case code != exitOK && code != exitFailed, code == exitFailed && dir == "":
			o.Failures = append(o.Failures, fmt.Sprintf("did not run: %v", err))
			return o, code
		}
	}
	return o, exitOK
}

// runDirs lists the results directories under a part's directory.
func runDirs(partDir string) []string {
	var out []string
	entries, _ := os.ReadDir(partDir)
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(partDir, e.Name()))
		}
	}
	return out
}

// finish writes report.md, report.html and the chart, prints the headline and decides the exit code
// as plload run does: a part that failed, or no stage that met the SLO, is exit 1.
func (m *matrixRun) finish(in matrix.Input, stdout io.Writer) error {
	var runs []report.Run
	var failures []string
	met := false
	for _, o := range in.Outcomes {
		for _, r := range o.Runs {
			if o.Part.ID == matrix.PartA || o.Part.ID == matrix.PartB {
				runs = append(runs, report.Run{Dir: r.Dir, Name: o.Part.ID, Stages: r.Stages})
			}
			for _, st := range r.Stages {
				met = met || st.Summary.SLO.Verdict == metrics.SLOPass
			}
		}
		for _, f := range o.Failures {
			failures = append(failures, fmt.Sprintf("part %s: %s", o.Part.ID, f))
		}
	}
	if !met && m.sc.SLO.IsSet() && !in.Interrupted {
		failures = append(failures, fmt.Sprintf("no stage of any part met the SLO (%s)", resultfiles.SLOText(m.sc.SLO)))
	}
	werr := report.WriteMatrixReport(in.Dir, matrix.Markdown(in), runs)
	fmt.Fprintf(stdout, "\nmatrix %s: %s\n", m.sc.Name, matrix.Headline(in))
	switch {
	case in.Interrupted:
		return exitErr(exitInterrupted, fmt.Errorf("interrupted: the running part is partial and later parts did not run; results in %s", in.Dir))
	case werr != nil:
		return exitErr(exitFailed, fmt.Errorf("writing the matrix report: %w (results in %s)", werr, in.Dir))
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(in.Dir, "report.md"))
	if len(failures) > 0 {
		return exitErr(exitFailed, fmt.Errorf("FAILED (exit 1):\n  %s\nresults in %s", strings.Join(failures, "\n  "), in.Dir))
	}
	return nil
}
