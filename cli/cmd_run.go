package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/cluster"
	"github.com/plload/plload/report"
	"github.com/plload/plload/runner"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run every stage of a scenario and write the results directory",
		ArgsUsage: "[SCENARIO.yaml]",
		UsageText: runExamples,
		Description: flagsHelp + "Validates the scenario first: a scenario with errors, an unset ${ENV} or api_key_env variable, or\n" +
			"an unwritable results directory, or one without room for the records the stages are expected to\n" +
			"write, sends nothing and exits 2. Then it runs each stage in order\n" +
			"(warmup, duration, drain) and writes results/<name>-<YYYYmmdd-HHMMSS>/ (a shard: …-shardIofN/,\n" +
			"its sessions those whose ordinal ≡ I mod N, docs/deployment.md): scenario.resolved.yaml\n" +
			"(secrets masked) and per stage dataset.jsonl, profile_export.jsonl (one AIPerf record per\n" +
			"request), sessions.jsonl and run.log. A scenario whose target is mock starts the bundled mock\n" +
			"in-process on a free loopback port.\n\n" +
			"Before the first stage one streamed request (the scenario's model, 1 output token) checks the\n" +
			"target: refused, TLS, 401/403, 404 or a non-SSE answer stops the run with exit 2 and the fix\n" +
			"(--no-preflight skips it). During a stage a slot whose request failed backs off (50 ms doubling\n" +
			"to 1.6 s; a 429's Retry-After up to 10 s); when every request for load.abort_after (15 s) got\n" +
			"no answer at all, the stage stops as failed.\n\n" +
			"Ctrl+C, SIGTERM or SIGHUP once: stop issuing, cancel what is in flight, write the stage as\n" +
			"partial, skip the rest, exit 130 (after the last stage: the report is finished, marked\n" +
			"interrupted, exit 130). A second signal exits at once.\n\n" +
			"Exit codes:\n" +
			"  0    every stage ran; at least one met the SLO (or none is set); the gate (if any) passed\n" +
			"  1    a stage failed (stopped as unreachable, no successful request, error rate over the\n" +
			"       SLO's limit, or records it could not write: a full disk stops the stage at once and keeps\n" +
			"       the records written), a replay fell behind its trace, no stage met the SLO, or the gate failed\n" +
			"  2    bad input: flags, scenario, files, or a target the preflight refused; nothing was sent\n" +
			"  3    the gate could not decide (see plload gate --help)\n" +
			"  130  interrupted",
		Flags: append(append(append(scenarioFlags(), []cli.Flag{
			outFlag(),
			&cli.BoolFlag{Name: "quiet", Usage: "no progress display (stage lines and the final table still print)"},
			&cli.StringFlag{Name: "baseline", Usage: "after the run, gate it against this results directory (see plload gate)"},
			noPreflightFlag("before the first stage"),
		}...), shardFlags()...), gateFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
			shard, err := shardOptions(cmd, os.Getenv)
			if err != nil {
				return err
			}
			sc, warnings, overridden, err := runInput(cmd)
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
			if err := checkGateRules(sc); err != nil {
				return err
			}
			dir, err := runner.Run(ctx, sc, runner.Options{Base: base, Quiet: cmd.Bool("quiet"), Preflight: !cmd.Bool("no-preflight"), FromResolved: overridden, Shard: shard,
				Tool: toolName(), Render: report.Render, Table: report.StageTable}, stdout, stderr)
			if dir == "" {
				return err
			}
			if len(sc.Gate) == 0 && len(cmd.StringSlice("check")) == 0 && cmd.String("baseline") == "" {
				return err
			}
			fmt.Fprintln(stdout)
			gerr := runGate(cmd, dir, cmd.String("baseline"), sc.Gate)
			var ee *runner.Error
			if err != nil && (gerr == nil || errors.As(gerr, &ee) && int(ee.Code) == exitUndecided) {
				return err // a failed stage says more than an undecided gate
			}
			return gerr
		},
	}
}

// shardFlags are run's flags for one shard of a sharded run (docs/deployment.md).
func shardFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "shard", Usage: "run one shard: INDEX/COUNT (0/4), the sessions and arrivals whose ordinal ≡ INDEX mod COUNT; or auto (JOB_COMPLETION_INDEX with --shards, SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/SIZE)"},
		&cli.IntFlag{Name: "shards", Usage: "with --shard auto in a Kubernetes Indexed Job: the shard count (the Job's completions)"},
		&cli.StringFlag{Name: "coordinator", Usage: "with --shard: host:port of plload coordinate; every shard starts each stage at its one start time"},
		&cli.StringFlag{Name: "token-env", Usage: "with --coordinator: environment variable holding the coordinator's shared secret"},
		&cli.DurationFlag{Name: "join-timeout", Value: cluster.DefaultJoinTimeout, Usage: "with --coordinator: the longest wait for every shard at the start barrier"},
		&cli.BoolFlag{Name: "coordinate", Usage: "with --shard 0/N and --coordinator ADDR: also be the coordinator, listening on ADDR (no separate plload coordinate)"},
	}
}

// shardOptions reads and checks the shard flags; every refusal is exit 2 naming the flag, before
// anything is built or sent.
func shardOptions(cmd *cli.Command, getenv func(string) string) (runner.Shard, error) {
	o := runner.Shard{Coordinator: cmd.String("coordinator"), JoinTimeout: cmd.Duration("join-timeout"), Coordinate: cmd.Bool("coordinate")}
	flag, shards := cmd.String("shard"), cmd.Int("shards")
	if cmd.IsSet("shards") && shards < 1 {
		return o, badInput("--shards %d; accepted: the shard count, 1 or more", shards)
	}
	sh, err := cluster.ParseShard(flag, shards, getenv)
	if err != nil {
		return o, badInput("%v; nothing was sent", err)
	}
	if cmd.IsSet("shards") && flag != "" && sh.Count != shards {
		return o, badInput("--shard %s names %d shards but --shards is %d; accepted: the same count", flag, sh.Count, shards)
	}
	o.Part = sh
	switch {
	case o.Coordinator == "" && cmd.IsSet("token-env"):
		return o, badInput("--token-env without --coordinator; accepted: --coordinator host:port --token-env VAR")
	case o.Coordinator != "" && flag == "":
		return o, badInput("--coordinator %s without --shard; accepted: --shard INDEX/COUNT or auto with it", o.Coordinator)
	case o.Coordinate && (o.Coordinator == "" || sh.Index != 0):
		return o, badInput("--coordinate on shard %s; accepted: --coordinate on shard 0 with --coordinator ADDR, the address it listens on", sh)
	case o.JoinTimeout <= 0:
		return o, badInput("--join-timeout %s; accepted: a positive duration such as 60s", o.JoinTimeout)
	}
	if env := cmd.String("token-env"); env != "" {
		if o.Token, err = cluster.TokenFromEnv(env, getenv); err != nil {
			return o, badInput("--token-env: %v", err)
		}
	}
	if o.Coordinate && o.Token == "" && !cluster.IsLoopback(o.Coordinator) {
		return o, badInput("--coordinate --coordinator %s listens beyond loopback; accepted: a shared secret with --token-env VAR (every shard passes the same), or a loopback address", o.Coordinator)
	}
	return o, nil
}

// toolName names plload in the files it writes: "plload v1.2.3".
func toolName() string { return "plload " + version }

// outFlag and noPreflightFlag are the flags every command that sends load takes; when says when
// the preflight request goes ("before the first stage").
func outFlag() cli.Flag {
	return &cli.StringFlag{Name: "out", Usage: "results base directory (overrides output.dir)"}
}

func noPreflightFlag(when string) cli.Flag {
	return &cli.BoolFlag{Name: "no-preflight", Usage: "skip the one streamed request sent " + when + " to check the target"}
}
