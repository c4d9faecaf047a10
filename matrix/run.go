package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/workload"
)

// MaxRepeats bounds Options.Repeats: more runs of one point than this belong in a soak, not a matrix.
const MaxRepeats = 10

// Options shape a matrix run.
type Options struct {
	// Repeats is how many times every point of A, B and C runs, for the spread: 1 to MaxRepeats.
	Repeats int
	// Base is the results base directory, where the matrix's own directory is made.
	Base string
	// Run are every part's run options; the matrix sets Base to the part's directory. Run.Tool
	// also names the writer in report.md.
	Run runner.Options
	// WriteReport writes the matrix report's files: the rendering floor's, passed in so that the
	// matrix never links it.
	WriteReport ReportWriter
}

// ReportWriter writes the matrix report into dir: report.md with markdown as its text, and beside
// it what people read (report.html, the latency–throughput chart of curves).
type ReportWriter func(dir, markdown string, curves []Curve) error

// Curve is a run drawn on the matrix's latency–throughput chart: a run of part A or B, named by its
// part's ID.
type Curve struct {
	Name   string
	Dir    string
	Stages []*resultfiles.StageReport
}

// Matrix is a matrix whose every part's scenario was built and checked: nothing is sent before it
// exists.
type Matrix struct {
	sc      *workload.Scenario   // the file as written
	plan    Plan                 // the parts
	parts   []*workload.Scenario // plan.Parts[i]'s scenario (nil: skipped)
	opt     Options              // opt.Run: every part's run options but its base
	command string               // reruns the matrix
}

// New builds every part's scenario from sc (loaded for a run) and checks it, so that a part that
// cannot run is refused before anything is sent. It returns the matrix and the parts' warnings
// about their load, or a runner.Error with code BadInput.
func New(sc *workload.Scenario, opt Options) (*Matrix, workload.Issues, error) {
	if opt.Repeats < 1 || opt.Repeats > MaxRepeats {
		return nil, nil, badInput("--repeats %d: accepted: 1 to %d runs of every point; nothing was sent", opt.Repeats, MaxRepeats)
	}
	data, err := os.ReadFile(sc.File)
	if err != nil {
		return nil, nil, badInput("%s: %v; nothing was sent", sc.File, err)
	}
	rates, err := RatesOf(sc, data)
	if err != nil {
		return nil, nil, badInput("%s: %v; nothing was sent", sc.File, err)
	}
	m := &Matrix{sc: sc, plan: NewPlan(sc, rates, opt.Repeats), opt: opt}
	m.command = fmt.Sprintf("plload matrix %s --repeats %d --out %s", runner.AbsPath(sc.File), opt.Repeats, runner.AbsPath(opt.Base))
	m.parts = make([]*workload.Scenario, len(m.plan.Parts))
	var warnings workload.Issues
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

// badInput is a runner.Error with code BadInput and a formatted message.
func badInput(format string, args ...any) error {
	return &runner.Error{Code: runner.BadInput, Err: fmt.Errorf(format, args...)}
}

// partScenario is the part's scenario, checked as any file is and built once (a dataset or trace
// slice that cannot be made is refused before anything is sent), with closed-loop pools sized.
func partScenario(file string, data []byte, p Part) (*workload.Scenario, Part, workload.Issues, error) {
	parse := func(p Part) (*workload.Scenario, workload.Issues, error) {
		text, err := ScenarioYAML(data, p)
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
	p = SizePools(psc, p)
	psc, warnings, err := parse(p)
	if err != nil {
		return nil, p, nil, err
	}
	if _, err := psc.Build(); err != nil {
		return nil, p, nil, badInput("%s: part %s (%s): building its workload: %v; nothing was sent", file, p.ID, p.Title, err)
	}
	return psc, p, warnings, nil
}

// Run runs the parts in order, each as runner.Run runs a scenario, writes the matrix report over
// their results and decides the exit code (a runner.Error; nil for exit 0).
func (m *Matrix) Run(ctx context.Context, stdout, stderr io.Writer) error {
	// Between parts no run's own handler (runner.Interruptible, which says what it does and exits at
	// a second signal) is installed: with this one a signal there lets the next part see the
	// cancelled context, and the matrix ends as interrupted, its report written, exit 130.
	ctx, stopSignals := runner.QuietInterrupt(ctx)
	defer stopSignals()
	dir, err := runner.MakeRunDir(m.opt.Base, m.sc.Name+"-matrix", "")
	if err != nil {
		return badInput("results directory: %v; choose another with --out or output.dir", err)
	}
	fmt.Fprintf(stdout, "plload matrix %s: %s; results in %s\n", m.sc.Name, m.planText(), dir)
	in := Input{Scenario: m.sc, Plan: m.plan, Dir: dir, Command: m.command, Tool: m.opt.Run.Tool, Started: time.Now()}
	sent, unreachable := false, ""
	for i, p := range m.plan.Parts {
		o := Outcome{Part: p}
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
			var code runner.Code
			o, code = m.runPart(ctx, p, m.parts[i], filepath.Join(dir, p.ID), stdout, stderr)
			if code == runner.BadInput && !sent && len(o.Runs) == 0 {
				os.RemoveAll(dir) // nothing was sent: leave no empty matrix behind
				return &runner.Error{Code: runner.BadInput, Err: fmt.Errorf("part %s %s", p.ID, strings.Join(o.Failures, "\n"))}
			}
			sent = true
			in.Interrupted = code == runner.Interrupted
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

// abortedIn is why the target stopped answering during the part, or "": the engine stopped a stage
// as unreachable, or the part's last stage got no answer at all — no request succeeded and its
// failures could not connect — which a stage shorter than load.abort_after ends before the engine's
// rule can say it.
func abortedIn(o Outcome) string {
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
func (m *Matrix) planText() string {
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
// exit code of the run that stopped the part (0 when none did).
func (m *Matrix) runPart(ctx context.Context, p Part, sc *workload.Scenario, partDir string, stdout, stderr io.Writer) (Outcome, runner.Code) {
	o := Outcome{Part: p}
	opt := m.opt.Run
	opt.Base = partDir
	for range p.Runs {
		known := runDirs(partDir)
		dir, err := runner.Run(ctx, sc, opt, stdout, stderr)
		var code runner.Code
		var ee *runner.Error
		if errors.As(err, &ee) {
			code = ee.Code
		} else if err != nil {
			code = runner.Failed
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
				o.Runs = append(o.Runs, Run{Dir: dir, Stages: stages})
				o.Failures = append(o.Failures, runner.Failures(sc, stages, true)...)
			}
		}
		switch {
		case code == runner.Interrupted:
			return o, code
		case code != 0 && code != runner.Failed, code == runner.Failed && dir == "":
			o.Failures = append(o.Failures, fmt.Sprintf("did not run: %v", err))
			return o, code
		}
	}
	return o, 0
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
func (m *Matrix) finish(in Input, stdout io.Writer) error {
	var curves []Curve
	var failures []string
	var sums []*metrics.StageSummary
	for _, o := range in.Outcomes {
		for _, r := range o.Runs {
			if o.Part.ID == PartA || o.Part.ID == PartB {
				curves = append(curves, Curve{Name: o.Part.ID, Dir: r.Dir, Stages: r.Stages})
			}
			for _, st := range r.Stages {
				sums = append(sums, st.Summary)
			}
		}
		for _, f := range o.Failures {
			failures = append(failures, fmt.Sprintf("part %s: %s", o.Part.ID, f))
		}
	}
	if metrics.Headline(sums) < 0 && m.sc.SLO.IsSet() && !in.Interrupted {
		// In the tables' words: a replay's PASS that fell behind its trace, or a partial stage's,
		// does not stand.
		failures = append(failures, fmt.Sprintf("%s (%s) in any part", resultfiles.NoPass(sums), resultfiles.SLOText(m.sc.SLO)))
	}
	werr := m.opt.WriteReport(in.Dir, Markdown(in), curves)
	fmt.Fprintf(stdout, "\nmatrix %s: %s\n", m.sc.Name, Headline(in))
	switch {
	case in.Interrupted:
		return &runner.Error{Code: runner.Interrupted, Err: fmt.Errorf("interrupted: the running part is partial and later parts did not run; results in %s", in.Dir)}
	case werr != nil:
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("writing the matrix report: %w (results in %s)", werr, in.Dir)}
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(in.Dir, "report.md"))
	if len(failures) > 0 {
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("FAILED (exit 1):\n  %s\nresults in %s", strings.Join(failures, "\n  "), in.Dir)}
	}
	return nil
}
