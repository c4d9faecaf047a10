package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/report"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "compare finished runs (plload's stage_NN/stage.json, or AIPerf artifact directories), or summarize any AIPerf records file",
		ArgsUsage: "DIR [DIR...]",
		Description: "With results directories: prints each run's headline and one table of all their stages, read from\n" +
			"stage_NN/stage.json alone (so it works when the request records were deleted), and warns\n" +
			"\"workload differs\" when the same stage number ran a different dataset. An AIPerf artifact directory\n" +
			"(profile_export.jsonl, and profile_export_aiperf.json when present) is a one-stage run computed from\n" +
			"its records in whichever layout they are; plload warns where AIPerf's summary disagrees with that.\n" +
			"--by model also splits every stage by its records' model (target.models): tables, SLO verdict and\n" +
			"cost per model, in the stage's own window. --handoff FILE also writes\n" +
			"a work order from the last directory: each problem with its evidence numbers, likely causes,\n" +
			"what to change, a done condition, and the commands to re-measure.\n\n" +
			"With --records FILE: computes a stage from any profile_export.jsonl (plload's or AIPerf's) with\n" +
			"the window, SLO and cost given by flags, or by --scenario and --stage. A limit or price not given is\n" +
			"not set: the SLO is judged on the limits given (N/A with none) and costs are N/A without a price.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "handoff", Usage: "write a work order (Markdown) from the last run to `FILE`"},
			&cli.StringFlag{Name: "chart", Usage: "write the runs' latency–throughput curves overlaid in one chart, with every run's SLO lines, to `FILE` (.svg or .png)"},
			&cli.StringFlag{Name: "html", Usage: "write the comparison as one self-contained HTML page to `FILE` (chart overlaid per run)"},
			&cli.StringFlag{Name: "by", Usage: "with results directories: also split every stage by `model` (its records' model metadata, target.models): tables, SLO verdict and cost per model, in the stage's own window"},
			&cli.BoolFlag{Name: "charts", Usage: "redraw charts/latency_throughput.svg and .png in each results directory from its stage.json"},
			&cli.StringFlag{Name: "records", Usage: "summarize this profile_export.jsonl (plload's, or AIPerf's in any layout) instead of results directories"},
			&cli.BoolFlag{Name: "json", Usage: "with --records: print the summary as JSON (stage.json's summary, plus layout: early, 0.3 or current)"},
			&cli.StringFlag{Name: "scenario", Usage: "with --records: take warmup, duration, SLO and cost from this scenario"},
			&cli.IntFlag{Name: "stage", Value: 1, Usage: "with --scenario: which stage's warmup and duration"},
			&cli.DurationFlag{Name: "warmup", Usage: "with --records: warmup excluded from the window"},
			&cli.DurationFlag{Name: "duration", Usage: "with --records: measurement window (default: to the last request)"},
			&cli.BoolFlag{Name: "arrival-rate", Usage: "with --records: t0 by the arrival_rate rule (issue time − scheduled offset)"},
			&cli.DurationFlag{Name: "ttft-p95", Usage: "with --records: SLO limit on TTFT p95"},
			&cli.DurationFlag{Name: "itl-p95", Usage: "with --records: SLO limit on ITL p95"},
			&cli.Float64Flag{Name: "error-rate-max", Usage: "with --records: SLO limit on the error rate (0–1; 0 allows no errors)"},
			&cli.Float64Flag{Name: "gpu-hourly-usd", Usage: "with --records: price of one GPU hour (without it every cost is N/A)"},
			&cli.IntFlag{Name: "gpu-count", Value: 1, Usage: "with --records: GPUs"},
			&cli.Float64Flag{Name: "expected-turns", Value: 1, Usage: "with --records: E[turns] for $/session"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if path := cmd.String("records"); path != "" {
				if cmd.Args().Len() > 0 {
					return badInput("report: give --records FILE or results directories, not both")
				}
				return reportRecords(cmd, path)
			}
			return report.Compare(report.CompareOptions{Dirs: cmd.Args().Slice(), By: cmd.String("by"), Charts: cmd.Bool("charts"),
				HTML: cmd.String("html"), Chart: cmd.String("chart"), Handoff: cmd.String("handoff"), Tool: toolName(), Out: cmd.Root().Writer})
		},
	}
}

// reportRecords summarizes one records file as a stage.
func reportRecords(cmd *cli.Command, path string) error {
	// A flag not given is a limit or price not set: judging against 0 would FAIL every stage, and a
	// price of 0 would print $0.000 as if the GPUs were free.
	in := metrics.StageInput{NeverStarted: -1,
		SLO: metrics.SLOLimits{TTFTP95Ms: msOf(cmd.Duration("ttft-p95")), ITLP95Ms: msOf(cmd.Duration("itl-p95")),
			ErrorRateMax: cmd.Float64("error-rate-max"), ErrorRateUnset: !cmd.IsSet("error-rate-max")},
		Cost: metrics.CostInputs{GPUHourlyUSD: cmd.Float64("gpu-hourly-usd"), GPUCount: cmd.Int("gpu-count"),
			ExpectedTurns: cmd.Float64("expected-turns"), Unpriced: !cmd.IsSet("gpu-hourly-usd")},
		Warmup: cmd.Duration("warmup"), Duration: cmd.Duration("duration"),
	}
	arrival := cmd.Bool("arrival-rate")
	var sc *workload.Scenario
	i := 0
	if file := cmd.String("scenario"); file != "" {
		var issues workload.Issues
		sc, issues = workload.Load(file, workload.LoadOptions{})
		if err := issues.Err(); err != nil {
			return badInput("report --scenario: %v", err)
		}
		i = cmd.Int("stage") - 1
		if i < 0 || i >= len(sc.Load.Stages) {
			return badInput("report --stage %d: the scenario has stages 1–%d", i+1, len(sc.Load.Stages))
		}
		in = resultfiles.StageInput(sc, i)
		// Every open-loop mode measures its window from the schedule's origin, as arrival_rate does.
		arrival = sc.Load.IsOpenLoop()
	}
	if _, err := os.Stat(path); err != nil {
		return badInput("report --records: %v", err)
	}
	rs, err := metrics.SummarizeRecords(path, in, arrival)
	if err != nil {
		return badInput("report --records: %v", err)
	}
	out := cmd.Root().Writer
	if cmd.Bool("json") {
		data, err := json.MarshalIndent(rs, "", "  ")
		if err != nil {
			return fmt.Errorf("report --records --json: %w", err)
		}
		fmt.Fprintf(out, "%s\n", data)
		return nil
	}
	sum := rs.StageSummary
	st := &resultfiles.StageReport{SchemaVersion: resultfiles.SchemaVersion, Tool: toolName(), Run: filepath.Base(path), Stage: 1, Stages: 1,
		Mode: map[bool]string{true: workload.ModeArrivalRate, false: workload.ModeConcurrency}[arrival], SLO: in.SLO,
		Cost: resultfiles.CostInputs{CostInputs: in.Cost}, Summary: sum}
	if sc != nil { // the stage's load as the scenario says it: mode, rate, arrival, name
		st = resultfiles.NewStageReport(toolName(), sc, i, "", sum, resultfiles.EngineCounts{})
		st.Run = filepath.Base(path)
	}
	fmt.Fprintf(out, "records: %s (%s)\n\n", path, layoutName(rs.Layout))
	fmt.Fprintf(out, "%s\n\n%s", resultfiles.HeadlineLine([]*resultfiles.StageReport{st}), report.StageTable([]*resultfiles.StageReport{st}))
	if len(sum.Warnings) > 0 {
		fmt.Fprintln(out)
	}
	for _, w := range sum.Warnings {
		fmt.Fprintln(out, "warning: "+w)
	}
	return nil
}

// layoutName says which layout a records file was read in, in words.
func layoutName(layout string) string {
	switch layout {
	case metrics.LayoutEarly:
		return "AIPerf's early (2025) layout"
	case metrics.Layout03:
		return "AIPerf 0.3 layout"
	}
	return "current layout (plload, AIPerf ≥ 0.4)"
}

func msOf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
