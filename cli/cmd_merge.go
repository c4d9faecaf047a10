package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/cluster"
	"github.com/plload/plload/report"
	"github.com/plload/plload/runner"
)

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "merge the results directories of a sharded run (plload run --shard i/N) into one",
		ArgsUsage: "SHARD_DIR... --out DIR",
		Description: "Checks that every directory is a shard of the same run (the sha256 of scenario.resolved.yaml\n" +
			"without output:, the same count N, each index once), then writes DIR as one process would have:\n" +
			"every record of every shard (warmup and cancelled included), its times corrected by the shard's\n" +
			"clock offset, in global order (intended start, then the session's global ordinal, then the\n" +
			"turn), and stage.json, report.json and report.md computed over the union by the same code as\n" +
			"plload run. Engine counts are summed; the injector health shown is the worst shard's, and any\n" +
			"strained shard is a warning naming its index. merge.json lists the shards and their offsets.\n\n" +
			"A missing index or a partial shard (stopped during a stage) is refused; --allow-partial merges\n" +
			"what there is and the stages and merge.json name the shards that were missing or partial.\n" +
			"DIR must be new or empty; it appears whole or not at all.\n\n" +
			"Exit codes:\n" +
			"  0    merged; every stage ran and at least one met the SLO (or none is set)\n" +
			"  1    merged, but a stage failed or no stage met the SLO (as plload run), or writing failed\n" +
			"  2    bad input: not shard directories, different scenarios or counts, a duplicate or\n" +
			"       missing index, a partial shard without --allow-partial, a corrupt records line",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "the merged results directory (new or empty)"},
			&cli.BoolFlag{Name: "allow-partial", Usage: "merge even when a shard is missing or stopped early; the report names it"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			stdout := cmd.Root().Writer
			dirs, err := expandDirs(cmd.Args().Slice())
			if err != nil {
				return err
			}
			out := cmd.String("out")
			command := "plload merge " + strings.Join(dirs, " ") + " --out " + out
			if cmd.Bool("allow-partial") {
				command += " --allow-partial"
			}
			res, err := cluster.Merge(cluster.MergeOptions{Dirs: dirs, Out: out, AllowPartial: cmd.Bool("allow-partial"),
				Tool: toolName(), Command: command, Render: report.Render})
			var bad *cluster.MergeInputError
			switch {
			case errors.As(err, &bad):
				return badInput("merge: %v", err)
			case err != nil:
				return exitErr(exitFailed, fmt.Errorf("merge: %w (nothing was written to %s)", err, out))
			}
			return mergeOutcome(res, stdout)
		},
	}
}

// mergeOutcome prints the merged run's headline and table, and fails it as plload run would fail
// the same stages.
func mergeOutcome(res *cluster.MergeResult, stdout interface{ Write([]byte) (int, error) }) error {
	rep := res.Report
	fmt.Fprintf(stdout, "merged %d shard(s) of %d into %s\n", countPresent(res.Manifest), res.Manifest.Count, res.Dir)
	for _, s := range res.Manifest.Shards {
		if s.Problem != "" {
			fmt.Fprintf(stdout, "warning: shard %d/%d: %s\n", s.Index, res.Manifest.Count, s.Problem)
		}
	}
	fmt.Fprintf(stdout, "\n%s\n\n%s", rep.Headline, report.StageTable(rep.Stages))
	for _, w := range rep.Warnings() {
		fmt.Fprintln(stdout, "warning: "+w)
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(res.Dir, "report.md"))
	if failures := runner.Failures(res.Scenario, rep.Stages, rep.HeadlineStage != nil); len(failures) > 0 {
		return exitErr(exitFailed, fmt.Errorf("FAILED (exit 1):\n  %s\nresults in %s", strings.Join(failures, "\n  "), res.Dir))
	}
	return nil
}

func countPresent(m cluster.MergeManifest) int {
	n := 0
	for _, s := range m.Shards {
		if s.Dir != "" {
			n++
		}
	}
	return n
}

// expandDirs expands the arguments that are patterns (*, ?, [) itself: a Kubernetes Job's args reach
// plload without a shell, in an image that has none. A pattern that matches nothing is an error.
func expandDirs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		matches, err := filepath.Glob(a)
		if err != nil {
			return nil, badInput("merge: %q is not a valid pattern: %v; accepted: shard directories, or a pattern such as results/run-*-shard*", a, err)
		}
		if len(matches) == 0 {
			return nil, badInput("merge: %q matches no directory; accepted: shard directories, or a pattern that matches them", a)
		}
		out = append(out, matches...)
	}
	return out, nil
}
