package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/ab/lockstep"
	"github.com/plload/plload/report"
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
			"The last line is B's verdict in one sentence: the first metric it is worse on, with B − A and\n" +
			"its interval, or that it is no worse. --fail-on worse makes that verdict the exit code, so an\n" +
			"A/B can gate CI: a worse verdict fails it, unless the numbers behind it cannot vouch for it (the\n" +
			"client was strained while it measured B, which only makes B read worse; a stage cut short; a\n" +
			"replay that fell behind), which leaves it undecided.\n\n" +
			"Exit codes:\n" +
			"  0    both targets ran; whatever the verdicts (with --fail-on worse: B worse on none)\n" +
			"  1    a side failed: its preflight was refused, a stage was stopped as unreachable, or no\n" +
			"       request of a stage succeeded; with --fail-on worse, also: B is worse on a metric\n" +
			"  2    bad input: --target/--model/--fail-on flags, scenario, files; nothing was sent\n" +
			"  3    with --fail-on worse: B read worse only on numbers that cannot vouch for it\n" +
			"  130  interrupted",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "target", Usage: "NAME=URL of a target (OpenAI base URL, with /v1); give it twice: A, then B"},
			&cli.StringSliceFlag{Name: "model", Usage: "NAME=MODEL: the model to ask that target for (default: the scenario's target.model)"},
			&cli.StringFlag{Name: "fail-on", Usage: "worse: exit 1 when B is worse than A on any metric (3 when it read worse only on numbers a strained client, a partial stage or a lagging replay cannot vouch for); default: exit 0 whatever the verdicts"},
			outFlag(),
			noPreflightFlag("to each target before the first stage"),
		},
		Action: abAction,
	}
}

func abAction(ctx context.Context, cmd *cli.Command) error {
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	failOn := cmd.String("fail-on")
	if failOn != "" && failOn != "worse" {
		return badInput("--fail-on %q: accepted: worse (exit 1 when B is worse than A on any metric); nothing was sent", failOn)
	}
	targets, err := lockstep.ParseTargets(cmd.StringSlice("target"), cmd.StringSlice("model"))
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
	base := sc.Output.Dir
	if cmd.IsSet("out") {
		base = cmd.String("out")
	}
	return lockstep.Run(ctx, sc, targets, lockstep.RunOptions{Base: base, Preflight: !cmd.Bool("no-preflight"), Tool: toolName(),
		Command: abCommandLine(cmd), Render: report.Render, FailOnWorse: failOn == "worse"}, stdout, stderr)
}

// abCommandLine is the command line each side's report.json records: the scenario's absolute path
// and the --target and --model flags as given.
func abCommandLine(cmd *cli.Command) string {
	command := "plload ab " + runner.AbsPath(cmd.Args().First())
	for _, t := range cmd.StringSlice("target") {
		command += " --target " + t
	}
	for _, m := range cmd.StringSlice("model") {
		command += " --model " + m
	}
	if v := cmd.String("fail-on"); v != "" {
		command += " --fail-on " + v
	}
	return command
}
