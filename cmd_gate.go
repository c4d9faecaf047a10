package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/report"
	"github.com/plload/plload/workload"
)

func gateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "check", Usage: "a threshold rule, repeatable: \"ttft_p95 < 500ms\", \"stage 2: error_rate < 1%\", \"slo == PASS\" (no scope = the headline stage)"},
		&cli.StringFlag{Name: "max-regression", Usage: "tolerances against --baseline, e.g. ttft_p95=10%,out_tok_s=5% (defaults: ttft_p95, itl_p95, e2e_p95 10%; out_tok_s 5%)"},
		&cli.BoolFlag{Name: "allow-different-workload", Usage: "compare runs whose dataset sha256 differs (normally refused)"},
		&cli.StringFlag{Name: "junit", Usage: "write the checks as JUnit XML to `FILE`"},
	}
}

func gateCommand() *cli.Command {
	return &cli.Command{
		Name:  "gate",
		Usage: "pass or fail a finished run: thresholds, and regressions against a baseline run",
		Description: "Checks a candidate results directory against threshold rules (--check and the scenario's gate:\n" +
			"list) and, with --baseline, against a baseline run stage by stage. Latency percentiles are compared\n" +
			"on both runs' records by resampling whole requests (a request's chunk gaps are not independent):\n" +
			"a bootstrap 95% interval of the relative change, and a regression only when the whole interval is\n" +
			"past the tolerance; an interval that straddles it is \"inconclusive\" (too thin to decide) and does\n" +
			"not fail the gate. Throughputs are compared with their counting noise. When plload itself was\n" +
			"strained in either run of a stage (an injector warning in stage.json), that stage's comparisons are\n" +
			"inconclusive and say why. Runs whose workloads differ (dataset sha256) are refused unless\n" +
			"--allow-different-workload.\n\n" +
			"Writes gate.json into the candidate directory, --junit FILE, GitHub Actions annotations when\n" +
			"GITHUB_ACTIONS=true and a summary to $GITHUB_STEP_SUMMARY when set.\n" +
			"Exit 0 pass, 1 fail, 2 bad input.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "candidate", Usage: "the results directory to judge", Required: true},
			&cli.StringFlag{Name: "baseline", Usage: "a results directory to compare with"},
		}, gateFlags()...),
		Action: func(_ context.Context, cmd *cli.Command) error {
			return gate(cmd, cmd.String("candidate"), cmd.String("baseline"), nil)
		},
	}
}

// gate evaluates a run; scenarioRules come from the scenario that just ran (nil: read the candidate's
// scenario.resolved.yaml).
func gate(cmd *cli.Command, candDir, baseDir string, scenarioRules []string) error {
	out := cmd.Root().Writer
	cand, err := report.ReadRun(candDir)
	if err != nil {
		return badInput("gate --candidate: %v", err)
	}
	texts := append([]string(nil), cmd.StringSlice("check")...)
	if scenarioRules == nil {
		scenarioRules = rulesOf(candDir)
	}
	texts = append(texts, scenarioRules...)
	var rules []report.Rule
	for _, t := range texts {
		r, err := report.ParseRule(t)
		if err != nil {
			return badInput("gate: %v", err)
		}
		rules = append(rules, r)
	}
	tol, err := report.ParseTolerances(cmd.String("max-regression"))
	if err != nil {
		return badInput("gate: %v", err)
	}
	g := report.GateResult{SchemaVersion: report.SchemaVersion, Candidate: absPath(candDir)}
	g.Checks = report.Evaluate(rules, cand)
	if baseDir != "" {
		base, err := report.ReadRun(baseDir)
		if err != nil {
			return badInput("gate --baseline: %v", err)
		}
		g.Baseline = absPath(baseDir)
		diffs := report.WorkloadWarnings([]report.Run{{Name: "baseline", Stages: base}, {Name: "candidate", Stages: cand}})
		if len(diffs) > 0 && !cmd.Bool("allow-different-workload") {
			return badInput("gate: the runs did not measure the same workload (%s); compare them anyway with --allow-different-workload", strings.Join(diffs, "; "))
		}
		dirs := map[string]string{"baseline": baseDir, "candidate": candDir}
		g.Checks = append(g.Checks, report.Regressions(base, cand, tol, func(run string, st *report.StageReport) *metrics.StageSeries {
			return seriesOf(dirs[run], st)
		})...)
	}
	if len(g.Checks) == 0 {
		return badInput("gate: nothing to check: give --check rules, a gate: list in the scenario, or --baseline")
	}
	g.Passed = report.GatePassed(g.Checks)
	report.PrintGate(out, g)
	if err := report.WriteGateJSON(candDir, g); err != nil {
		return fmt.Errorf("gate.json: %w", err)
	}
	if f := cmd.String("junit"); f != "" {
		if err := report.WriteJUnit(f, g); err != nil {
			return badInput("gate --junit: %v", err)
		}
	}
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		if err := report.GitHub(out, os.Getenv("GITHUB_STEP_SUMMARY"), g); err != nil {
			fmt.Fprintf(cmd.Root().ErrWriter, "warning: GitHub summary: %v\n", err)
		}
	}
	if !g.Passed {
		return &exitError{code: exitFailed, err: fmt.Errorf("gate failed: see the FAIL lines above (gate.json in %s)", absPath(candDir))}
	}
	return nil
}

// rulesOf reads the gate: list of a run's scenario.resolved.yaml.
func rulesOf(dir string) []string {
	sc, issues := workload.Load(filepath.Join(dir, "scenario.resolved.yaml"), workload.LoadOptions{Getenv: func(string) string { return "x" }})
	if sc == nil || issues.Err() != nil {
		return nil
	}
	return sc.Gate
}

// seriesOf reads a stage's records into samples (nil when they were deleted).
func seriesOf(dir string, st *report.StageReport) *metrics.StageSeries {
	f, err := os.Open(filepath.Join(dir, fmt.Sprintf("stage_%02d", st.Stage), "profile_export.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var recs []*metrics.Record
	if metrics.ReadRecords(f, func(r *metrics.Record) error { recs = append(recs, r); return nil }) != nil {
		return nil
	}
	s := metrics.Series(recs, st.Summary)
	return &s
}
