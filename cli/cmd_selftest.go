package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/runner"
	"github.com/plload/plload/selftest"
	"github.com/plload/plload/workload"
)

func selftestCommand() *cli.Command {
	return &cli.Command{
		Name:  "selftest",
		Usage: "prove the injector: measure a known delay over a concurrency ladder",
		Description: "Runs the real engine against the bundled mock with an exact schedule — fixed TTFT, fixed gap\n" +
			"between chunks, a fixed token count, no jitter — at each concurrency of the ladder. The mock stamps\n" +
			"every chunk with its own send time, so each step judges the client's added delay (its receive time\n" +
			"− the server's own send time) against --bound: the injector's error, free of the server's lateness.\n" +
			"Per step it prints the measured TTFT and chunk gap (p50/p99, |error| p99), the mock's send lateness,\n" +
			"the client delay, start and think lag, the client's health (CPU busy, waiting for a CPU, Go\n" +
			"scheduler latency) and the step's verdict. It ends with one final line that agrees with the steps:\n" +
			"\"PASS: …\" when every step passed; \"PASS up to N streams: …\" when the steps from the bottom up to\n" +
			"N passed and higher ones broke --bound (named, with why); \"FAIL: …\" when the first step did not\n" +
			"pass. Each states the bound proven (\"this machine measures within ±X ms up to N concurrent streams\").\n\n" +
			"With --target (your own server, which sends no stamps) the steps judge |measured − configured| of\n" +
			"TTFT and chunk gap, the server's lateness included: the verdict is about the measurement, and it\n" +
			"blames this machine only where the client's health says it was strained.\n\n" +
			"--http picks the protocol as a scenario's target.http does (2: h2c on the cleartext mock), --tls serves\n" +
			"the mock over https:// with a certificate made for the run (auto then negotiates HTTP/2 by ALPN); each\n" +
			"step line names the protocol and how many connections carried its streams. The bound is the same on\n" +
			"every protocol.\n\n" +
			"By default the mock runs as a separate `plload mockserver` process, so the two do not share a Go\n" +
			"runtime. Exit 0 when the final line states a bound (every step passed, or every step up to N);\n" +
			"1 when no step holds (the first step broke --bound or failed) or the ladder could not run; 2 for\n" +
			"bad flags; 130 when interrupted.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "ladder", Value: "1,10,100,500,1000,2000", Usage: "concurrent streams per step, comma-separated"},
			&cli.DurationFlag{Name: "ttft", Value: 200 * time.Millisecond, Usage: "the mock's time to first token"},
			&cli.DurationFlag{Name: "itl", Value: 20 * time.Millisecond, Usage: "the mock's gap between chunks"},
			&cli.IntFlag{Name: "tokens", Value: 50, Usage: "tokens per answer"},
			&cli.DurationFlag{Name: "warmup", Value: 2 * time.Second, Usage: "warmup per step (not measured)"},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "measured time per step"},
			&cli.DurationFlag{Name: "bound", Value: time.Millisecond, Usage: "largest acceptable p99 of the client's added delay per chunk (measured receive time − the server's own send time); with --target and no send times, of |measured − configured| TTFT and chunk gap"},
			&cli.BoolFlag{Name: "in-process", Usage: "run the mock inside this process instead of its own"},
			&cli.StringFlag{Name: "target", Usage: "an external known-delay server (OpenAI base URL, .../v1) with the same --ttft and --itl"},
			&cli.BoolFlag{Name: "busy-poll", Usage: "ask the mock for microsecond send times; it keeps a core busy, which on a 2-core machine starves the client"},
			&cli.StringFlag{Name: "http", Value: workload.DefaultHTTP, Usage: "the protocol, as target.http: auto (HTTP/2 where TLS negotiates it), 1.1, or 2 (h2c on http://)"},
			&cli.BoolFlag{Name: "tls", Usage: "serve the bundled mock over https:// with a certificate made for the run"},
			&cli.BoolFlag{Name: "json", Usage: "print the steps as JSON"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			out := cmd.Root().Writer
			ladder, err := parseLadder(cmd.String("ladder"))
			if err != nil {
				return badInput("selftest --ladder: %v", err)
			}
			cfg := selftest.Config{Ladder: ladder, TTFT: cmd.Duration("ttft"), ITL: cmd.Duration("itl"), Tokens: cmd.Int("tokens"),
				Warmup: cmd.Duration("warmup"), Duration: cmd.Duration("duration"), Bound: cmd.Duration("bound"),
				InProcess: cmd.Bool("in-process"), Target: cmd.String("target"), BusyPoll: cmd.Bool("busy-poll"),
				HTTP: cmd.String("http"), TLS: cmd.Bool("tls")}
			if !slices.Contains(workload.HTTPVersions, cfg.HTTP) {
				return badInput("selftest --http %q: accepted are %s", cfg.HTTP, strings.Join(workload.HTTPVersions, ", "))
			}
			if cfg.TLS && cfg.Target != "" {
				return badInput("selftest --tls serves the bundled mock over TLS; with --target, an https:// URL is TLS already")
			}
			switch {
			case cfg.TTFT < 0 || cfg.ITL <= 0 || cfg.Tokens < 2 || cfg.Duration <= 0 || cfg.Warmup < 0 || cfg.Bound <= 0:
				return badInput("selftest: --ttft ≥ 0, --itl > 0, --tokens ≥ 2, --duration > 0, --warmup ≥ 0 and --bound > 0 are required")
			}
			if cfg.Executable, err = os.Executable(); err != nil && !cfg.InProcess && cfg.Target == "" {
				return fmt.Errorf("selftest: finding plload's own binary for the mock process: %w (use --in-process)", err)
			}
			if !cmd.Bool("json") {
				cfg.Progress = out
				judged := "the client's added delay p99 (receive − the server's send time)"
				if cfg.Target != "" {
					judged = "the client delay p99 where the server stamps send times, else TTFT/gap |error| p99"
				}
				over := "HTTP " + cfg.HTTP
				if cfg.TLS {
					over += " over TLS"
				}
				fmt.Fprintf(out, "plload selftest: TTFT %s, a chunk every %s, %d tokens, %s per step (+%s warmup), %s, bound ±%s on %s\n",
					cfg.TTFT, cfg.ITL, cfg.Tokens, cfg.Duration, cfg.Warmup, over, cfg.Bound, judged)
			}
			ctx, stop := runner.Interruptible(ctx, cmd.Root().ErrWriter)
			defer stop()
			steps, runErr := selftest.Run(ctx, cfg)
			if ctx.Err() != nil {
				if !cmd.Bool("json") {
					fmt.Fprintf(out, "INTERRUPTED after %d of %d steps: no verdict\n", len(steps), len(ladder))
				}
				return exitErr(exitInterrupted, fmt.Errorf("interrupted"))
			}
			verdict := selftest.Judge(steps, cfg.Bound, cfg.Target, runErr)
			if cmd.Bool("json") {
				if steps == nil {
					steps = []selftest.Step{}
				}
				data, _ := json.MarshalIndent(struct {
					Steps      []selftest.Step  `json:"steps"`
					Verdict    selftest.Verdict `json:"verdict"`
					Conclusion string           `json:"conclusion"`
				}{steps, verdict, verdict.Line}, "", "  ")
				fmt.Fprintln(out, string(data))
			} else {
				fmt.Fprintln(out, verdict.Line)
			}
			if runErr != nil {
				return exitErr(exitFailed, fmt.Errorf("selftest: %w", runErr))
			}
			if verdict.Holds {
				return nil // a bound is stated: up to the last step of the unbroken run from the bottom
			}
			for _, s := range steps {
				if !s.Pass && s.Errors > 0 {
					return exitErr(exitFailed, fmt.Errorf("selftest: the step at %s failed (%s)", streamCount(s.Concurrency), s.Verdict))
				}
				if !s.Pass {
					return exitErr(exitFailed, fmt.Errorf("selftest: the step at %s broke the ±%s bound (%s)", streamCount(s.Concurrency), cfg.Bound, s.Verdict))
				}
			}
			if !verdict.Pass { // no step failed yet no pass: nothing ran
				return exitErr(exitFailed, fmt.Errorf("selftest: %s", verdict.Line))
			}
			return nil
		},
	}
}

// streamCount is "1 stream", "10 streams".
func streamCount(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}

func parseLadder(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: accepted: positive whole numbers separated by commas, such as 1,10,100", f)
		}
		out = append(out, n)
	}
	return out, nil
}
