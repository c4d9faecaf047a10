package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/matrix"
	"github.com/plload/plload/report"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/workload"
)

func matrixCommand() *cli.Command {
	return &cli.Command{
		Name:      "matrix",
		Usage:     "run the standard benchmark matrix from one scenario: A closed-loop ladder, B open loop at mean/peak/peak+30 %, C replay, D ramp",
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
			"spread (min–max) of each number. report.md and report.html follow a performance engagement's report:\n" +
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
			sc, warnings, err := loadScenario(cmd, workload.LoadOptions{ForRun: true})
			if err != nil {
				return err
			}
			base := sc.Output.Dir
			if cmd.IsSet("out") {
				base = cmd.String("out")
			}
			m, partWarnings, err := matrix.New(sc, matrix.Options{Repeats: int(cmd.Int("repeats")), Base: base,
				Run: runner.Options{Quiet: cmd.Bool("quiet"), Preflight: !cmd.Bool("no-preflight"), FromResolved: true,
					Tool: toolName(), Render: report.Render, Table: report.StageTable},
				WriteReport: writeMatrixReport})
			if err != nil {
				return err
			}
			for _, w := range append(warnings, partWarnings...) {
				fmt.Fprintln(cmd.Root().ErrWriter, w.Error())
			}
			return m.Run(ctx, cmd.Root().Writer, cmd.Root().ErrWriter)
		},
	}
}

// writeMatrixReport is report.WriteMatrixReport over the matrix's curves.
func writeMatrixReport(dir, markdown string, curves []matrix.Curve) error {
	runs := make([]report.Run, len(curves))
	for i, c := range curves {
		runs[i] = report.Run{Dir: c.Dir, Name: c.Name, Stages: c.Stages}
	}
	return report.WriteMatrixReport(dir, markdown, runs)
}
