package gate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// Options are what plload gate (and plload run's gate after a run) judges: a candidate results
// directory, its rules and, optionally, a baseline run.
type Options struct {
	Candidate, Baseline string
	// Checks are rules given on the command line; ScenarioRules the scenario's gate: list (nil: read
	// from the candidate's scenario.resolved.yaml).
	Checks, ScenarioRules []string
	// MaxRegression is the tolerances against the baseline ("ttft_p95=10%,out_tok_s=5%"; "": defaults).
	MaxRegression string
	// AllowDifferentWorkload compares runs whose workloads differ; AllowUndecided passes a gate that
	// decided nothing.
	AllowDifferentWorkload, AllowUndecided bool
	// JUnit is a file to write the checks to as JUnit XML ("": none).
	JUnit string
	// GitHubActions writes annotations to Out and a summary to GitHubStepSummary (when set).
	GitHubActions     bool
	GitHubStepSummary string
	Out, ErrOut       io.Writer
}

// BadInput is an error of the gate's input (a directory that is not a run, a bad rule, nothing to
// check): plload exits 2 for it.
type BadInput struct{ Err error }

func (e *BadInput) Error() string { return e.Err.Error() }
func (e *BadInput) Unwrap() error { return e.Err }

func badInput(format string, args ...any) error { return &BadInput{fmt.Errorf(format, args...)} }

// Run judges a run: the rules' checks on the candidate and, with a baseline, its regressions stage by
// stage. It prints the checks, writes gate.json into the candidate (and the JUnit file and GitHub
// annotations asked for), and returns the result; an error says why there is none.
func Run(opt Options) (GateResult, error) {
	cand, err := resultfiles.ReadRun(opt.Candidate)
	if err != nil {
		return GateResult{}, badInput("gate --candidate: %v", err)
	}
	texts := append([]string(nil), opt.Checks...)
	scenarioRules := opt.ScenarioRules
	if scenarioRules == nil {
		// An unreadable scenario is an error, never "no rules": a gate that dropped the scenario's own
		// gate: list would pass a run whose gate fails.
		scenarioRules, err = workload.ReadGateRules(filepath.Join(opt.Candidate, "scenario.resolved.yaml"))
		if err != nil {
			return GateResult{}, badInput("gate --candidate: %v", err)
		}
	}
	texts = append(texts, scenarioRules...)
	var rules []Rule
	for _, t := range texts {
		r, err := ParseRule(t)
		if err != nil {
			return GateResult{}, badInput("gate: %v", err)
		}
		rules = append(rules, r)
	}
	tol, err := ParseTolerances(opt.MaxRegression)
	if err != nil {
		return GateResult{}, badInput("gate: %v", err)
	}
	checks := Evaluate(rules, cand)
	baseAbs := ""
	if opt.Baseline != "" {
		base, err := resultfiles.ReadRun(opt.Baseline)
		if err != nil {
			return GateResult{}, badInput("gate --baseline: %v", err)
		}
		baseAbs = absPath(opt.Baseline)
		diffs := resultfiles.WorkloadDiffs([]resultfiles.NamedRun{{Name: "baseline", Stages: base}, {Name: "candidate", Stages: cand}})
		if len(diffs) > 0 && !opt.AllowDifferentWorkload {
			return GateResult{}, badInput("gate: the runs did not measure the same workload (%s); compare them anyway with --allow-different-workload", strings.Join(diffs, "; "))
		}
		dirs := map[string]string{"baseline": opt.Baseline, "candidate": opt.Candidate}
		checks = append(checks, Regressions(base, cand, tol, func(run string, st *resultfiles.StageReport) (*metrics.StageSeries, error) {
			return seriesOf(dirs[run], st)
		})...)
	}
	if len(checks) == 0 {
		return GateResult{}, badInput("gate: nothing to check: give --check rules, a gate: list in the scenario, or --baseline")
	}
	g := NewGateResult(absPath(opt.Candidate), baseAbs, checks, opt.AllowUndecided)
	PrintGate(opt.Out, g)
	if err := WriteGateJSON(opt.Candidate, g); err != nil {
		return GateResult{}, fmt.Errorf("gate.json: %w", err)
	}
	if opt.JUnit != "" {
		if err := WriteJUnit(opt.JUnit, g); err != nil {
			return GateResult{}, badInput("gate --junit: %v", err)
		}
	}
	if opt.GitHubActions {
		if err := GitHub(opt.Out, opt.GitHubStepSummary, g); err != nil {
			fmt.Fprintf(opt.ErrOut, "warning: GitHub summary: %v\n", err)
		}
	}
	return g, nil
}

// absPath is p made absolute, or p itself when it cannot be.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// seriesOf reads a stage's records into samples, or says why it cannot.
func seriesOf(dir string, st *resultfiles.StageReport) (*metrics.StageSeries, error) {
	path := filepath.Join(dir, fmt.Sprintf("stage_%02d", st.Stage), "profile_export.jsonl")
	f, err := os.Open(path)
	if err != nil {
		if !st.RecordsKept {
			return nil, fmt.Errorf("%s: %w; the run had output.record_requests: false, which deletes them: set it to true to compare latencies", path, err)
		}
		return nil, err // the error names the path
	}
	defer f.Close()
	var recs []*metrics.Record
	if err := metrics.ReadRecords(f, func(r *metrics.Record) error { recs = append(recs, r); return nil }); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := metrics.Series(recs, st.Summary)
	return &s, nil
}
