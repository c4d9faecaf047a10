package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/fit"
	"github.com/plload/plload/metrics"
)

func fitCommand() *cli.Command {
	return &cli.Command{
		Name:      "fit",
		Usage:     "measure request logs or traces and write a synthetic scenario fitted to them",
		ArgsUsage: "LOG [LOG...]",
		Description: "Reads request logs (flat {timestamp, session_id?, prompt_tokens, completion_tokens} or OpenAI-style\n" +
			"{timestamp, session_id?, request, usage}), plload/AIPerf records (profile_export.jsonl) or traces\n" +
			"(mooncake, azure, burstgpt, qwen_bailian), and prints arrival rate, peak minute, burstiness,\n" +
			"prompt/answer length percentiles with a lognormal fit, sessions and prefix sharing. Only numbers\n" +
			"are kept and printed, never prompt text. --out writes a scenario whose every value is commented\n" +
			"`# from logs (N requests)` or `# assumed: why`; without it the scenario is printed after the summary.\n" +
			"The format is detected from the first line or CSV header unless --format names it.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Usage: "the logs' format: " + strings.Join(fit.Formats, ", ") + " (default: detected per file)"},
			&cli.StringFlag{Name: "out", Usage: "write the fitted scenario to `FILE`"},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as one JSON object (the keys docs/data.md lists) instead of text"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			paths := cmd.Args().Slice()
			if len(paths) == 0 {
				return badInput("fit: expected at least one log file; usage: plload fit %s", cmd.ArgsUsage)
			}
			format := cmd.String("format")
			if format != "" && !slices.Contains(fit.Formats, format) {
				return badInput("fit: --format %q; accepted: %s", format, strings.Join(fit.Formats, ", "))
			}
			log := fit.NewLog()
			for _, p := range paths {
				if err := log.ReadFile(p, format); err != nil {
					return badInput("fit: %v", err)
				}
			}
			sum, err := fit.Summarize(log)
			if err != nil {
				return badInput("fit: %s: %v", strings.Join(paths, ", "), err)
			}
			out := cmd.Root().Writer
			name := strings.TrimSuffix(filepath.Base(paths[0]), filepath.Ext(paths[0]))
			yaml := fit.Scenario(sum, fit.ScenarioOptions{Name: "fit-" + name, Sources: paths})
			if p := cmd.String("out"); p != "" {
				if err := metrics.WriteFileAtomic(p, []byte(yaml)); err != nil {
					return badInput("fit: %v", err)
				}
			}
			if cmd.Bool("json") {
				b, err := json.Marshal(sum)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
				return nil
			}
			sum.Print(out, paths)
			if p := cmd.String("out"); p != "" {
				fmt.Fprintf(out, "\nwrote %s: check the `# assumed` lines, then `plload validate %s` and `plload run %s`\n", p, p, p)
			} else {
				fmt.Fprintf(out, "\n# scenario (write it with --out FILE):\n%s", yaml)
			}
			return nil
		},
	}
}
