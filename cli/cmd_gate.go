package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/gate"
	"github.com/plload/plload/runner"
)

func gateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "check", Usage: "a threshold rule, repeatable: \"ttft_p95 < 500ms\", \"stage 2: error_rate < 1%\", \"slo == PASS\" (no scope = the headline stage)"},
		&cli.StringFlag{Name: "max-regression", Usage: "tolerances against --baseline, e.g. ttft_p95=10%,out_tok_s=5% (defaults: ttft_p95, itl_p95, e2e_p95 10%; out_tok_s 5%)"},
		&cli.BoolFlag{Name: "allow-different-workload", Usage: "compare runs whose dataset sha256 differs (normally refused)"},
		&cli.BoolFlag{Name: "allow-undecided", Usage: "exit 0, not 3, when no check could be decided (the reasons are still printed)"},
		&cli.StringFlag{Name: "junit", Usage: "write the checks as JUnit XML to `FILE`"},
	}
}

func gateCommand() *cli.Command {
	return &cli.Command{
		Name:  "gate",
		Usage: "pass or fail a finished run: thresholds, and regressions against a baseline run",
		Description: "Checks a candidate results directory against threshold rules (--check and the gate: list of its\n" +
			"scenario.resolved.yaml) and, with --baseline, against a baseline run stage by stage. Latency\n" +
			"percentiles are compared on both runs' records by resampling whole requests (a request's chunk\n" +
			"gaps are not independent): a bootstrap 95% interval of the relative change, a regression only when\n" +
			"the whole interval is past the tolerance, a pass only when none of it is. Throughputs are compared\n" +
			"with their counting noise. Otherwise a check is not decided (INCONCLUSIVE), and says why: the\n" +
			"interval straddles the tolerance, fewer than 30 requests, a run's records are missing, or the\n" +
			"client was strained (an injector warning in stage.json) in the run whose bias could have swayed the\n" +
			"decision: a strained candidate cannot fake a pass, a strained baseline cannot fake a fail, and a\n" +
			"strain that is only the Go scheduler's latency cannot sway a decision that 3 × that delay cannot\n" +
			"move across the tolerance. A run that kept checks from a decision (strained client, missing\n" +
			"records, value or stage) also gets a warning line naming its directory and why.\n" +
			"Runs whose workloads differ (dataset sha256) are refused unless --allow-different-workload.\n\n" +
			"Writes gate.json into the candidate directory, --junit FILE, GitHub Actions annotations when\n" +
			"GITHUB_ACTIONS=true and a summary to $GITHUB_STEP_SUMMARY when set.\n\n" +
			"Exit codes:\n" +
			"  0  pass: no check failed, at least one was decided, and no possible regression was left\n" +
			"     undecided because of a run. Checks left undecided for thin evidence (the interval straddles\n" +
			"     the tolerance, fewer than 30 requests), or a pass that only a strained baseline kept from\n" +
			"     counting, do not fail the gate beside decided passes (a CI job that went red on every such\n" +
			"     check would be switched off): they are printed, counted on the last line (\"gate PASSED\n" +
			"     (6 checks, 2 not decided)\") and annotated as warnings.\n" +
			"  1  fail: a check failed (whatever the others are).\n" +
			"  2  bad input: flags, rules, a directory that is not a run, an unreadable scenario.resolved.yaml.\n" +
			"  3  undecided: no check could be decided, or a run kept a possible regression from being\n" +
			"     decided: the candidate's client was strained where the numbers say regression (a real 30%\n" +
			"     regression on a busy runner looks like that, and a green job beside it would ship it), or\n" +
			"     records, a value or a stage were missing. Each check says why. --allow-undecided makes this\n" +
			"     exit 0 (the reasons are still printed).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "candidate", Usage: "the results directory to judge", Required: true},
			&cli.StringFlag{Name: "baseline", Usage: "a results directory to compare with"},
		}, gateFlags()...),
		Action: func(_ context.Context, cmd *cli.Command) error {
			return runGate(cmd, cmd.String("candidate"), cmd.String("baseline"), nil)
		},
	}
}

// runGate evaluates a run; scenarioRules come from the scenario that just ran (nil: read the candidate's
// scenario.resolved.yaml).
func runGate(cmd *cli.Command, candDir, baseDir string, scenarioRules []string) error {
	g, err := gate.Run(gate.Options{Candidate: candDir, Baseline: baseDir, Checks: cmd.StringSlice("check"), ScenarioRules: scenarioRules,
		MaxRegression: cmd.String("max-regression"), AllowDifferentWorkload: cmd.Bool("allow-different-workload"),
		AllowUndecided: cmd.Bool("allow-undecided"), JUnit: cmd.String("junit"),
		GitHubActions: os.Getenv("GITHUB_ACTIONS") == "true", GitHubStepSummary: os.Getenv("GITHUB_STEP_SUMMARY"),
		Out: cmd.Root().Writer, ErrOut: cmd.Root().ErrWriter})
	var bad *gate.BadInput
	switch {
	case errors.As(err, &bad):
		return exitErr(exitBadInput, err)
	case err != nil:
		return err
	case g.Verdict == gate.VerdictFail:
		return exitErr(exitFailed, fmt.Errorf("gate failed: see the FAIL lines above (gate.json in %s)", runner.AbsPath(candDir)))
	case !g.Passed:
		return exitErr(exitUndecided, fmt.Errorf("gate undecided: %s; --allow-undecided accepts this (gate.json in %s)", gate.UndecidedWhy(g), runner.AbsPath(candDir)))
	}
	return nil
}
