package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/report"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/search/prober"
	"github.com/plload/plload/workload"
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
			"A probe passes or fails only when the 95 % interval of every SLO latency statistic (a bootstrap\n" +
			"over its requests) lies wholly on one side of the limit; the error rate fails only when its Wilson\n" +
			"interval lies wholly over the limit, and is met when the rate measured is at or under it (so a\n" +
			"short probe without errors is never held back by error_rate_max). An undecided first probe goes\n" +
			"on upward: it is no evidence against higher loads. Otherwise\n" +
			"the same load runs again, the samples pooled, up to --repeats times, and is then undecided: the\n" +
			"answer gives the range (\"meets SLO up to 48 sessions (49–52 undecided)\"). A probe whose latency\n" +
			"or send lag rose quarter after quarter past its limit, or whose arrivals were left waiting, fails\n" +
			"as saturated. The client must not be the limit (injector health): a probe whose client's CPU was\n" +
			"full is invalid and stops the search; a client strained otherwise (threads waiting for a CPU, GC)\n" +
			"only makes latencies read longer, so its pass stands and its fail runs again unless it fails by\n" +
			"more than that lateness, and is invalid if still strained at the last run. At most 20 probes.\n\n" +
			"Writes search.json, every probe's stage_NN/, report.md/html with the capacity curve\n" +
			"(charts/search_curve.png) and scenario.resolved.yaml, whose stages are the probes (plload run\n" +
			"reruns them). Exit codes: 0 a capacity was found; 1 the lowest load probed failed the SLO, or the\n" +
			"search stopped (an invalid probe, a failure); 2 bad input, nothing sent; 3 no load probed could be\n" +
			"decided (none failed); 130 interrupted.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "knob", Usage: "what to vary: concurrency (load.mode concurrency) or rate (request_rate's rate, arrival_rate's sessions_per_sec); default: the scenario's load.mode"},
			&cli.Float64Flag{Name: "start", Usage: "the first load probed (default: the first stage's)"},
			&cli.Float64Flag{Name: "max", Usage: fmt.Sprintf("the largest load probed (default: %d sessions, or %d × --start for a rate)", prober.DefaultMaxConcurrency, prober.DefaultMaxRateFactor)},
			&cli.StringFlag{Name: "resolution", Value: "5%", Usage: "stop bisecting when the pass and the non-pass are this close: a percentage of the pass, or a number in the knob's unit"},
			&cli.IntFlag{Name: "repeats", Value: 3, Usage: "times one load may run before it is called undecided"},
			outFlag(),
			noPreflightFlag("first"),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			sc, warnings, err := loadScenario(cmd, workload.LoadOptions{ForRun: true})
			if err != nil {
				return err
			}
			o := prober.Options{Knob: cmd.String("knob"), Resolution: cmd.String("resolution"), Repeats: int(cmd.Int("repeats")), Base: sc.Output.Dir,
				Preflight: !cmd.Bool("no-preflight"), Tool: toolName(), Render: searchRenderers}
			if cmd.IsSet("start") {
				o.Start = new(cmd.Float64("start"))
			}
			if cmd.IsSet("max") {
				o.Max = new(cmd.Float64("max"))
			}
			if cmd.IsSet("out") {
				o.Base = cmd.String("out")
			}
			plan, err := prober.New(sc, o)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(cmd.Root().ErrWriter, w.Error())
			}
			return plan.Run(ctx, cmd.Root().Writer, cmd.Root().ErrWriter)
		},
	}
}

// searchRenderers are the report's: the run's report, the answer's headline and the capacity curve.
var searchRenderers = prober.Renderers{
	Report:   report.Render,
	Headline: report.SearchHeadline,
	Curve: func(dir string, stages []*resultfiles.StageReport, probes []resultfiles.SearchProbe, chosen int, unit string, lines []string) error {
		return report.WriteSearchReport(dir, report.NewSearchCurve(stages, probes, chosen, unit), lines, probes, unit)
	},
}
