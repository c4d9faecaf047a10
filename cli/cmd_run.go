package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/live"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/report"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run every stage of a scenario and write the results directory",
		ArgsUsage: "[SCENARIO.yaml]",
		UsageText: runExamples,
		Description: flagsHelp + "Validates the scenario first: a scenario with errors, an unset ${ENV} or api_key_env variable, or\n" +
			"an unwritable results directory sends nothing and exits 2. Then it runs each stage in order\n" +
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
			"partial, skip the rest, exit 130. A second signal exits at once.\n\n" +
			"Exit codes:\n" +
			"  0    every stage ran; at least one met the SLO (or none is set); the gate (if any) passed\n" +
			"  1    a stage failed (stopped as unreachable, no successful request, or error rate over\n" +
			"       the SLO's limit), a replay fell behind its trace, no stage met the SLO, or the gate failed\n" +
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
			dir, err := runScenario(ctx, sc, runOptions{base: base, quiet: cmd.Bool("quiet"), preflight: !cmd.Bool("no-preflight"), fromResolved: overridden, shard: shard}, stdout, stderr)
			if dir == "" {
				return err
			}
			if len(sc.Gate) == 0 && len(cmd.StringSlice("check")) == 0 && cmd.String("baseline") == "" {
				return err
			}
			fmt.Fprintln(stdout)
			gerr := runGate(cmd, dir, cmd.String("baseline"), sc.Gate)
			var ee *exitError
			if err != nil && (gerr == nil || errors.As(gerr, &ee) && ee.code == exitUndecided) {
				return err // a failed stage says more than an undecided gate
			}
			return gerr
		},
	}
}

// runOptions are run's flags that shape the run itself.
type runOptions struct {
	base      string // results base directory
	quiet     bool   // no progress display
	preflight bool   // one streamed request before the first stage
	// fromResolved: flags made or changed the scenario, so the run is reproduced from its
	// scenario.resolved.yaml rather than from the file.
	fromResolved bool
	shard        shardRun // --shard and the coordinator (zero: unsharded)
}

// runScenario builds the workload, starts the mock when asked, checks the target with one request,
// prepares the results directory and runs the stages. Everything that can be refused is refused
// before the first stage. It returns the results directory ("" when the run did not finish) and, for
// a finished run, an exit-1 error when a stage failed or no stage met the SLO.
func runScenario(ctx context.Context, sc *workload.Scenario, opt runOptions, stdout, stderr io.Writer) (string, error) {
	ctx, stop := interruptible(ctx, stderr)
	defer stop()
	if err := checkTarget(ctx, sc); err != nil {
		return "", err
	}
	if err := checkOpenFiles(sc, stderr); err != nil {
		return "", err
	}
	w, err := sc.Build()
	if err != nil {
		return "", badInput("building the workload: %v", err)
	}
	if ctx.Err() != nil {
		return "", &exitError{code: exitInterrupted, err: errors.New("interrupted before the first request; nothing was written")}
	}
	progress := live.NewProgress(len(w.Stages))
	if port := sc.Output.PrometheusPort; port != 0 {
		stopProm, err := servePrometheus(sc.Output.PrometheusHost, port, progress, stderr)
		if err != nil {
			return "", badInput("%s: %v; nothing was sent", sc.File, err)
		}
		defer stopProm()
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	baseURL, closeMock, err := startTarget(ctx, sc, w, opt.preflight, log, stderr)
	if err != nil {
		return "", err
	}
	defer closeMock()
	// The barrier comes after the preflight (a shard whose target is refused never joins) and before
	// the results directory (a shard that could not join leaves none).
	member, err := opt.shard.join(ctx, sc)
	if err != nil {
		return "", err
	}
	defer member.Close(log)
	shardInfo := opt.shard.info(member)
	dir, err := makeRunDir(opt.base, sc.Name, opt.shard.dirSuffix())
	if err == nil {
		err = opt.shard.writeInfo(dir, shardInfo) // shard.json: a shard killed in its first stage is still known
	}
	if err != nil {
		return "", badInput("results directory: %v; choose another with --out or output.dir", err)
	}
	resolved, err := sc.ResolvedYAML()
	if err != nil {
		return "", fmt.Errorf("resolving the scenario: %w", err)
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "scenario.resolved.yaml"), resolved); err != nil {
		return "", badInput("results directory: %v", err)
	}
	started := time.Now()
	fmt.Fprintf(stdout, "plload %s: %d stage(s), results in %s\n", sc.Name, len(w.Stages), dir)
	var stages []*resultfiles.StageReport
	var summaryErr error
	prog := live.StartDisplay(stdout, stderr, progress, opt.quiet)
	_, err = engine.Run(ctx, engine.Config{
		Scenario: sc, Workload: w, BaseURL: baseURL, Dir: dir, Log: log, Live: progress,
		ServerMetricsURL: serverMetricsURL(sc, baseURL), Shard: opt.shard.shard, StageStart: member.stageStart(),
		OnStage: func(r engine.StageResult) {
			prog.Println(stdout, stageLine(r, len(w.Stages)))
			st, err := summarizeStage(sc, w, r, shardInfo)
			if err != nil {
				summaryErr = errors.Join(summaryErr, err)
				return
			}
			stages = append(stages, st)
			if !sc.Output.RecordRequests {
				os.Remove(filepath.Join(r.Dir, "profile_export.jsonl"))
			}
		},
	})
	prog.Stop()
	return finishRun(sc, stages, dir, opt, started, err, summaryErr, stdout, shardInfo)
}

// servePrometheus serves the live /metrics on host:port (before any traffic: a busy port is bad
// input) until stop is called. A non-loopback host is allowed because the scenario names it, and it
// is logged.
func servePrometheus(host string, port int, progress *live.Progress, stderr io.Writer) (stop func(), err error) {
	addr := net.JoinHostPort(host, fmt.Sprint(port))
	stop, err = live.Serve(addr, progress)
	if err != nil {
		return nil, err
	}
	if !mock.IsLoopback(addr) {
		fmt.Fprintf(stderr, "warning: live /metrics on %s is reachable from other machines\n", addr)
	}
	return stop, nil
}

// startTarget starts the in-process mock when the scenario asks for it (baseURL is then its URL; ""
// means the scenario's own) and sends the preflight request. release stops the mock.
func startTarget(ctx context.Context, sc *workload.Scenario, w *workload.Workload, preflight bool, log *slog.Logger, stderr io.Writer) (baseURL string, release func(), err error) {
	release = func() {}
	if sc.UsesMock() {
		m, err := startMock(sc)
		if err != nil {
			return "", release, badInput("starting the in-process mock: %v", err)
		}
		release = func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = m.Close(closeCtx)
		}
		baseURL = m.BaseURL()
		log.Info("started the bundled mock in-process", "url", baseURL)
	}
	if !preflight {
		return baseURL, release, nil
	}
	warning, err := engine.Preflight(ctx, engine.Config{Scenario: sc, Workload: w, BaseURL: baseURL})
	switch {
	case ctx.Err() != nil:
		err = &exitError{code: exitInterrupted, err: errors.New("interrupted before the first stage; nothing was written")}
	case err != nil:
		err = &exitError{code: exitBadInput, err: fmt.Errorf("%s: %w", sc.File, err)}
	case warning != "":
		fmt.Fprintln(stderr, "warning: "+warning)
	}
	if err != nil {
		release()
		return "", func() {}, err
	}
	return baseURL, release, nil
}

// finishRun writes the report of a run whose stages ended (runErr: why the engine stopped, if it
// did), prints the headline and the table, and decides the outcome: the results directory and, for a
// finished run, an exit-1 error listing what failed.
func finishRun(sc *workload.Scenario, stages []*resultfiles.StageReport, dir string, opt runOptions, started time.Time, runErr, summaryErr error, stdout io.Writer, shard *resultfiles.ShardInfo) (string, error) {
	interrupted := errors.Is(runErr, engine.ErrInterrupted)
	scenarioFile := absPath(sc.File)
	if opt.fromResolved {
		scenarioFile = absPath(filepath.Join(dir, "scenario.resolved.yaml"))
	}
	rep := resultfiles.New(sc, stages, resultfiles.Meta{Tool: toolName(), ScenarioFile: scenarioFile,
		Command: "plload run " + scenarioFile + " --out " + absPath(opt.base) + opt.shard.flags(), Started: started, Finished: time.Now(), Interrupted: interrupted, Shard: shard})
	if werr := report.Write(dir, sc, rep); werr != nil {
		summaryErr = errors.Join(summaryErr, werr)
	}
	fmt.Fprintf(stdout, "\n%s\n\n%s", rep.Headline, report.StageTable(stages))
	for _, w := range rep.Warnings() {
		fmt.Fprintln(stdout, "warning: "+w)
	}
	failures := runFailures(sc, stages, rep.HeadlineStage != nil)
	switch {
	case interrupted:
		fmt.Fprintf(stdout, "interrupted: the last stage is partial and later stages were skipped; results in %s\n", dir)
		return "", &exitError{code: exitInterrupted, err: errors.New("interrupted")}
	case summaryErr != nil && runErr != nil: // what stopped the run comes first: the report's failure follows from it
		return "", &exitError{code: exitFailed, err: fmt.Errorf("the run stopped: %v; writing the report: %w (results in %s)", runErr, summaryErr, dir)}
	case summaryErr != nil:
		return "", &exitError{code: exitFailed, err: fmt.Errorf("writing the report: %w (results in %s)", summaryErr, dir)}
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, "report.md"))
	if runErr != nil {
		failures = append([]string{fmt.Sprintf("the run stopped: %v", runErr)}, failures...)
	}
	if len(failures) > 0 {
		return dir, &exitError{code: exitFailed, err: fmt.Errorf("FAILED (exit 1):\n  %s\nresults in %s", strings.Join(failures, "\n  "), dir)}
	}
	return dir, nil
}

// runFailures says what makes a finished run exit 1 (README, "Exit codes"): a stage that failed —
// stopped because the target was unreachable, without one successful request, or with an error rate
// over slo.error_rate_max —, a replay stage that could not keep the trace's pace, or no stage that
// met the SLO (no headline; only when the scenario sets one). [] when none.
func runFailures(sc *workload.Scenario, stages []*resultfiles.StageReport, headline bool) []string {
	var out []string
	errMax, errSet := sc.SLO.ErrorRateLimit()
	for _, st := range stages {
		sum := st.Summary
		switch {
		case st.Engine.Aborted != "":
			out = append(out, fmt.Sprintf("stage %02d failed: %s", st.Stage, st.Engine.Aborted))
		case sum.Requests.Succeeded == 0:
			out = append(out, fmt.Sprintf("stage %02d failed: no request in its window succeeded (%d errors, %d cancelled)", st.Stage, sum.Requests.Errors, sum.Requests.Cancelled))
		case errSet && sum.ErrorRate.OK && sum.ErrorRate.V > errMax:
			out = append(out, fmt.Sprintf("stage %02d failed: error rate %.2f%% is over the SLO's error rate limit %.2f%%", st.Stage, 100*sum.ErrorRate.V, 100*errMax))
		}
		if sum.ReplayValid.OK && !sum.ReplayValid.V { // a replay that fell behind did not measure the trace
			out = append(out, fmt.Sprintf("stage %02d is not a valid replay: client could not keep the trace's pace: %s", st.Stage, replayReason(sum)))
		}
	}
	if !headline && len(stages) > 0 && sc.SLO.IsSet() {
		out = append(out, noHeadline(sc, stages))
	}
	return out
}

// noHeadline says why no stage is the run's headline: none met the SLO, or none could be judged
// because every stage is partial (cut short, or a shard of a merged run lost) — not the same news.
func noHeadline(sc *workload.Scenario, stages []*resultfiles.StageReport) string {
	for _, st := range stages {
		if !st.Summary.Partial {
			return fmt.Sprintf("no stage met the SLO (%s)", resultfiles.SLOText(sc.SLO))
		}
	}
	return fmt.Sprintf("no stage can be judged against the SLO (%s): every stage is partial (cut short, or a shard of the run lost: see merge.json), so none is the headline", resultfiles.SLOText(sc.SLO))
}

// replayReason says how far behind the trace a replay stage fell, and what to do about it.
func replayReason(sum *metrics.StageSummary) string {
	why := sum.ReplayInvalidReason
	if why == "" {
		why = fmt.Sprintf("send lag p99 %.1f ms, max %.1f ms (limits: p99 ≤ %g ms, none > %g ms)", sum.SendLag.P99, sum.SendLag.Max, metrics.ReplayLagP99LimitMs, metrics.ReplayLateLimitMs)
	}
	return why + "; raise load.max_in_flight, replay slower (load.time_scale > 1), or run on a machine with more cores"
}

// summarizeStage computes a finished stage's numbers from its records and writes stage.json.
func summarizeStage(sc *workload.Scenario, w *workload.Workload, r engine.StageResult, shard *resultfiles.ShardInfo) (*resultfiles.StageReport, error) {
	i := r.Stage - 1
	in := resultfiles.StageInput(sc, i)
	if r.T0Ns != 0 {
		in.T0Ns = metrics.Some(r.T0Ns)
	}
	if r.InterruptNs != 0 {
		in.InterruptNs = metrics.Some(r.InterruptNs)
	}
	if spec := sc.Load.Stages[i]; spec.Requests > 0 && (r.EndedByCount || spec.Duration.D() == 0) && r.LastEndNs > 0 && r.T0Ns != 0 {
		// A stage its count ended is measured to its last answer (docs/scenario.md).
		in.Duration = time.Duration(r.LastEndNs + 1 - r.T0Ns - int64(spec.Warmup.D()))
	}
	if sc.Load.IsOpenLoop() {
		in.NeverStarted = r.NotStarted
	}
	if strain := r.Injector.Warnings(); len(strain) > 0 && !failuresExplainStrain(r) {
		in.Warnings = append(in.Warnings, strain...)
	}
	if reuse := resultfiles.ReuseWarning(sc, len(w.Stages[i].Sessions), r.Reused, failuresExplainStrain(r)); reuse != "" {
		in.Warnings = append(in.Warnings, reuse) // engine.reused counts them either way
	}
	sum, err := metrics.SummarizeFile(filepath.Join(r.Dir, "profile_export.jsonl"), in, sc.Load.IsOpenLoop())
	if err != nil {
		return nil, fmt.Errorf("stage %d: %w", r.Stage, err)
	}
	if r.Partial {
		sum.Partial = true
	}
	st := resultfiles.NewStageReport(toolName(), sc, i, w.Stages[i].SHA256, sum,
		resultfiles.EngineCounts{Issued: r.Issued, Sessions: r.Sessions, Reused: r.Reused, NotStarted: r.NotStarted, Retried: r.Retried, Outages: outagesOf(r), Aborted: r.Aborted})
	st.Injector, st.NetworkRTT = r.Injector, r.RTT
	st.Server = serverSummary(r, sum)
	st.Shard = shard
	return st, st.Write(r.Dir)
}

// serverMetricsURL is where the target's Prometheus metrics are: target.server_metrics_url, or the
// base URL without /v1 plus /metrics ("" when off).
func serverMetricsURL(sc *workload.Scenario, baseURL string) string {
	switch u := sc.Target.ServerMetricsURL; u {
	case "off":
		return ""
	case "":
		if baseURL == "" {
			baseURL = workload.Expand(sc.Target.BaseURL, os.Getenv)
		}
		return strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1") + "/metrics"
	default:
		return workload.Expand(u, os.Getenv)
	}
}

// serverSummary reduces a stage's server_metrics.jsonl to its window.
func serverSummary(r engine.StageResult, sum *metrics.StageSummary) *metrics.ServerSummary {
	data, err := os.ReadFile(filepath.Join(r.Dir, "server_metrics.jsonl"))
	if err != nil && r.ServerMetricsNote == "" {
		return nil // scraping was off
	}
	var samples []metrics.ServerSample
	for _, line := range strings.Split(string(data), "\n") {
		var s metrics.ServerSample
		if json.Unmarshal([]byte(line), &s) == nil {
			samples = append(samples, s)
		}
	}
	out := metrics.SummarizeServer(samples, sum.Window.WNs, sum.Window.EEffNs)
	out.Scrapes, out.ScrapesOK = r.Scrapes, r.ScrapesOK
	if r.ServerMetricsNote != "" {
		out.Note = r.ServerMetricsNote
	}
	return &out
}

func toolName() string { return "plload " + version }

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// checkTarget refuses, before anything is written or sent, a target whose host does not resolve.
func checkTarget(ctx context.Context, sc *workload.Scenario) error {
	if sc.UsesMock() {
		return nil
	}
	raw := workload.Expand(sc.Target.BaseURL, os.Getenv)
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return badInput("%s: target.base_url %q is not a URL with a host; nothing was sent", sc.File, raw)
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		return nil
	}
	lookup, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := net.DefaultResolver.LookupHost(lookup, host); err != nil {
		return badInput("%s: target.base_url: cannot resolve host %q (%v); check the name or your DNS; nothing was sent", sc.File, host, err)
	}
	return nil
}

// failuresExplainStrain: see resultfiles.FailuresExplainStrain.
func failuresExplainStrain(r engine.StageResult) bool {
	return resultfiles.FailuresExplainStrain(r.Aborted, len(r.Outages), r.Errors, r.OK)
}

// stageLine is the one-line summary printed as a stage ends.
func stageLine(r engine.StageResult, stages int) string {
	state := "done"
	if r.Partial {
		state = "PARTIAL (interrupted)"
	}
	if r.Aborted != "" {
		state = "FAILED"
	}
	line := fmt.Sprintf("stage %02d/%02d %s: %d requests (%d ok, %d errors of which %d × 429, %d cancelled), %d output tokens, %d sessions, %.1f s",
		r.Stage, stages, state, r.Records, r.OK, r.Errors, r.RateLimit, r.Cancelled, r.OutTokens, r.Sessions, r.End.Sub(r.Start).Seconds())
	if r.Retried > 0 {
		line += fmt.Sprintf("\n  retried: %d requests went out again on a new connection (the server had closed the kept-alive one before answering)", r.Retried)
	}
	for _, k := range r.Failures {
		line += fmt.Sprintf("\n  errors: %s × %d (first: %s)", k.Kind, k.Count, k.First)
	}
	for _, o := range r.Outages {
		line += fmt.Sprintf("\n  outage %s – %s (%.1f s): %s, %d requests (first: %s)", o.From.UTC().Format("15:04:05.000"), o.To.UTC().Format("15:04:05.000Z"),
			o.To.Sub(o.From).Seconds(), o.Kind, o.Requests, o.FirstMessage)
	}
	if r.Aborted != "" {
		line += "\n  STOPPED: " + r.Aborted
	}
	return line
}

// makeRunDir creates base/<name>-<YYYYmmdd-HHMMSS><suffix> (suffix: a shard's -shardIofN), adding
// -2, -3... if that exists already.
func makeRunDir(base, name, suffix string) (string, error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	stem := filepath.Join(base, name+"-"+time.Now().Format("20060102-150405")+suffix)
	dir := stem
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 100 {
			return "", err
		}
		dir = fmt.Sprintf("%s-%d", stem, i)
	}
}

// startMock starts the bundled mock for a scenario's target.mock settings.
func startMock(sc *workload.Scenario) (*mock.Running, error) {
	m := sc.Target.Mock
	cfg := mock.DefaultConfig()
	cfg.Model = sc.Target.Model
	cfg.TTFT, cfg.TPS, cfg.Jitter = m.TTFT.D(), m.TPS, m.Jitter
	cfg.ErrorRate, cfg.CacheTTFTFactor, cfg.NoUsage, cfg.Seed = m.ErrorRate, m.CacheTTFTFactor, !m.Usage, m.Seed
	cfg.CloseAfterResponse = m.CloseAfterResponse
	cfg.MaxConcurrency, cfg.ScaleMaxConcurrency, cfg.ScaleAfter = m.MaxConcurrency, m.ScaleMaxConcurrency, m.ScaleAfter.D()
	if m.ToolCallRate != nil {
		cfg.ToolCallRate = *m.ToolCallRate
	}
	if m.JSONValidRate != nil {
		cfg.JSONValidRate = *m.JSONValidRate
	}
	cfg.Models = m.Models
	return mock.Start(cfg, "")
}

// interruptible cancels the returned context on the first SIGINT, SIGTERM or SIGHUP and exits the
// process at once on the second.
func interruptible(parent context.Context, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			fmt.Fprintf(stderr, "\n%s: stopping — cancelling requests in flight and writing the partial stage (again to quit at once)\n", sig)
			cancel()
		case <-done:
			return
		}
		select {
		case <-signals:
			fmt.Fprintln(stderr, "second signal: exiting now")
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		close(done)
		cancel()
	}
}

// outagesOf converts the engine's outages for stage.json ([] when there were none).
func outagesOf(r engine.StageResult) []resultfiles.Outage {
	out := []resultfiles.Outage{}
	for _, o := range r.Outages {
		out = append(out, resultfiles.Outage{From: o.From.UTC().Format(time.RFC3339Nano), To: o.To.UTC().Format(time.RFC3339Nano),
			Kind: o.Kind, Requests: o.Requests, FirstMessage: o.FirstMessage})
	}
	return out
}

// outFlag and noPreflightFlag are the flags every command that sends load takes; when says when
// the preflight request goes ("before the first stage").
func outFlag() cli.Flag {
	return &cli.StringFlag{Name: "out", Usage: "results base directory (overrides output.dir)"}
}

func noPreflightFlag(when string) cli.Flag {
	return &cli.BoolFlag{Name: "no-preflight", Usage: "skip the one streamed request sent " + when + " to check the target"}
}
