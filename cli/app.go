// Package cli holds plload's commands: each file is one command, a thin adapter from flags to one call
// into the package that does the work, and back to an exit code.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/gate"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/workload"
)

// Exit codes (README.md): the orchestration's runner.Code, and 0.
const (
	exitOK          = 0
	exitFailed      = int(runner.Failed)      // the run finished but something the user asked to be told about failed
	exitBadInput    = int(runner.BadInput)    // flags, scenario, files, a target the preflight refused
	exitUndecided   = int(runner.Undecided)   // a gate or a search could decide nothing (or a run kept a possible regression from a decision)
	exitInterrupted = int(runner.Interrupted) // a signal stopped it
)

// version is set at build time with -ldflags "-X github.com/plload/plload/cli.version=v1.2.3".
var version = "dev"

// exitErr is err ending the command with code.
func exitErr(code int, err error) error { return &runner.Error{Code: runner.Code(code), Err: err} }

func badInput(format string, args ...any) error {
	return exitErr(exitBadInput, fmt.Errorf(format, args...))
}

// CatchSignals makes SIGINT, SIGTERM and SIGHUP plload's to answer from the process's first instant
// (exit 130 with a line saying so, until a command installs its own handler): main calls it first.
func CatchSignals() { runner.CatchSignals(os.Stderr) }

// ownSignals marks a command that handles the stop signals itself, for a graceful shutdown: its
// action starts by taking them back from CatchSignals.
func ownSignals(c *cli.Command) *cli.Command {
	action := c.Action
	c.Action = func(ctx context.Context, cmd *cli.Command) error {
		runner.ReleaseSignals()
		return action(ctx, cmd)
	}
	return c
}

// Run executes the CLI and returns the exit code; main and the tests call it in-process.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	onUsageErrors(app, args)
	err := app.Run(ctx, args)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "plload:", err)
	var ee *runner.Error
	if errors.As(err, &ee) {
		return int(ee.Code)
	}
	// Anything urfave/cli itself rejects (unknown flag, bad value) is bad input.
	return exitBadInput
}

func newApp(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "plload",
		Usage:     "load-test OpenAI-compatible LLM servers with chatbot-shaped traffic",
		Version:   version,
		Writer:    stdout,
		ErrWriter: stderr,
		// Exit codes are decided in run, never inside the library.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Description: "plload sends multi-turn chat sessions with shared personas, think time and RAG documents,\n" +
			"records every request in AIPerf's profile_export.jsonl layout, and reports latency percentiles,\n" +
			"throughput, goodput, prefix-cache hit rate, SLO PASS/FAIL and cost at the SLO.\n\n" +
			"Exit codes: 0 success; 1 a stage, the SLO or a gate failed; 2 bad input (or a target the\n" +
			"preflight refused); 3 a gate could not decide; 130 interrupted. See plload run --help.",
		Commands: []*cli.Command{
			runCommand(),
			validateCommand(),
			ownSignals(mockserverCommand()),
			selftestCommand(),
			reportCommand(),
			gateCommand(),
			fitCommand(),
			searchCommand(),
			matrixCommand(),
			abCommand(),
			ownSignals(coordinateCommand()),
			mergeCommand(),
			k8sCommand(),
			slurmCommand(),
			tokenizeCommand(),
			versionCommand(),
		},
	}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, the Go version and the commit",
		Action: func(_ context.Context, cmd *cli.Command) error {
			fmt.Fprintf(cmd.Root().Writer, "plload %s (%s, commit %s)\n", version, runtime.Version(), commit())
			return nil
		},
	}
}

func commit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// loadScenario reads the one SCENARIO argument and returns the scenario and its warnings, or an
// exit-2 error listing every error in the file.
func loadScenario(cmd *cli.Command, opts workload.LoadOptions) (*workload.Scenario, workload.Issues, error) {
	if cmd.Args().Len() != 1 {
		return nil, nil, badInput("%s: expected one argument, the scenario file (got %d); usage: plload %s %s",
			cmd.Name, cmd.Args().Len(), cmd.Name, cmd.ArgsUsage)
	}
	sc, issues := workload.Load(cmd.Args().First(), opts)
	if err := issues.Err(); err != nil {
		n := len(issues.Errors())
		return nil, nil, exitErr(exitBadInput, fmt.Errorf("%d error(s) in the scenario; nothing was sent:\n%w", n, err))
	}
	return sc, issues.Warnings(), nil
}

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check a scenario and show what it would send; never sends traffic",
		ArgsUsage: "[SCENARIO.yaml] [the scenario flags of plload run]",
		Flags:     scenarioFlags(),
		Description: "Prints the resolved scenario (defaults filled, secrets masked as ***), then per stage the mode,\n" +
			"load, warmup, duration, session pool size, expected turns per session, estimated requests,\n" +
			"mean prompt tokens at the first / middle / last turn, and the dataset's size and sha256,\n" +
			"then every warning. Exit 0 when the scenario can run (warnings included), 2 on any error.\n" +
			"Unset ${ENV} references and api_key_env variables are warnings here and errors at run.\n" +
			"With run's scenario flags (--base-url, --request-rate, ...) it shows the scenario they make,\n" +
			"from a file or from the flags alone, as plload run would run it.",
		Action: func(_ context.Context, cmd *cli.Command) error {
			sc, warnings, _, err := scenarioInput(cmd, workload.LoadOptions{})
			if err != nil {
				return err
			}
			if err := checkGateRules(sc); err != nil {
				return err
			}
			return printValidation(cmd.Root().Writer, sc, warnings)
		},
	}
}

func printValidation(out io.Writer, sc *workload.Scenario, warnings workload.Issues) error {
	resolved, err := sc.ResolvedYAML()
	if err != nil {
		return fmt.Errorf("writing the resolved scenario: %w", err)
	}
	w, err := sc.Build()
	if err != nil {
		return fmt.Errorf("building the workload: %w", err)
	}
	fmt.Fprintf(out, "# %s resolved: defaults filled, secrets masked\n%s\n", sc.File, resolved)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\tload\twarmup\tduration\tpool\tE[turns]\trequests (est.)\tin flight (est.)\tprompt tok first/mid/last\tdataset\tsha256")
	for _, st := range sc.Stats(w) {
		inFlight := "-" // closed loop: the stage's concurrency bounds it (arrival_rate: its max_concurrency)
		if sc.Load.LoadMode().ReadsLoadKey("max_in_flight") {
			inFlight = fmt.Sprintf("%.1f", st.Estimate.InFlight)
		}
		fmt.Fprintf(tw, "%02d\t%s\t%s\t%s\t%d\t%.2f\t%.0f\t%s\t%.0f / %.0f / %.0f\t%s\t%s\n",
			st.Stage, st.Load, st.Warmup, st.Duration, st.PoolSize, st.ExpectedTurns, st.Estimate.Requests, inFlight,
			st.PromptFirst, st.PromptMid, st.PromptLast, humanBytes(st.DatasetBytes), st.SHA256)
	}
	tw.Flush()
	fmt.Fprintf(out, "\nprompt tokens are %s counts of the text (chat-template tokens not included), with every answer\n"+
		"at its max_output_tokens; requests (est.) assume %s.\n", sc.Tokenizer().Name(), sc.Assumption())
	if n := w.MaxToolRounds(); n > 0 {
		fmt.Fprintf(out, "agent sessions: every request also carries the tools block (%d tokens), and each user turn may add up to\n"+
			"%d tool rounds (requests after tool results): neither is in the estimates above.\n", sc.Tokenizer().Count(string(w.ToolsJSON())), n)
	}
	if len(warnings) == 0 {
		fmt.Fprintln(out, "\nno warnings")
		return nil
	}
	fmt.Fprintf(out, "\n%d warning(s):\n", len(warnings))
	for _, is := range warnings {
		fmt.Fprintln(out, "  "+is.Error())
	}
	return nil
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// checkGateRules refuses a scenario whose gate: list has a rule plload cannot read.
func checkGateRules(sc *workload.Scenario) error {
	for i, rule := range sc.Gate {
		if _, err := gate.ParseRule(rule); err != nil {
			return badInput("%s: gate[%d]: %v", sc.File, i, err)
		}
	}
	return nil
}
