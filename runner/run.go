package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/live"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// Options shape one run of a scenario.
type Options struct {
	Base      string // results base directory
	Quiet     bool   // no progress display
	Preflight bool   // one streamed request before the first stage
	// FromResolved: flags made or changed the scenario, so the run is reproduced from its
	// scenario.resolved.yaml rather than from the file.
	FromResolved bool
	Shard        Shard // this run's place in a sharded run (zero: unsharded)
	// Tool names the writer in stage.json and report.json: "plload v1.2.3".
	Tool string
	// Render writes the files people read (report.md, report.html, charts) beside report.json, and
	// Table is the stage tables printed after the headline: the rendering floor's, passed in so that
	// running a scenario never links it.
	Render resultfiles.Renderer
	Table  func([]*resultfiles.StageReport) string
}

// Run builds the workload, starts the mock when asked, checks the target with one request,
// prepares the results directory and runs the stages. Everything that can be refused is refused
// before the first stage. It returns the results directory ("" when the run did not finish) and, for
// a finished run, an exit-1 error when a stage failed or no stage met the SLO.
func Run(ctx context.Context, sc *workload.Scenario, opt Options, stdout, stderr io.Writer) (string, error) {
	signals := newInterrupt(ctx, stderr)
	ctx = signals.ctx
	defer signals.stop()
	if err := CheckTarget(ctx, sc); err != nil {
		return "", err
	}
	if err := CheckOpenFiles(sc, stderr); err != nil {
		return "", err
	}
	w, err := sc.Build()
	if err != nil {
		return "", badInput("building the workload: %v", err)
	}
	// Before any traffic (the preflight included): a read-only or full disk is refused here, with nothing sent.
	if err := CheckResultsDir(opt.Base, sc, w); err != nil {
		return "", err
	}
	if ctx.Err() != nil {
		return "", &Error{Code: Interrupted, Err: errors.New("interrupted before the first request; nothing was written")}
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
	baseURL, closeMock, err := StartTarget(ctx, sc, w, opt.Preflight, log, stderr)
	if err != nil {
		return "", err
	}
	defer closeMock()
	// The barrier comes after the preflight (a shard whose target is refused never joins) and before
	// the results directory (a shard that could not join leaves none).
	member, err := opt.Shard.join(ctx, sc)
	if err != nil {
		return "", err
	}
	defer member.Close(log)
	shardInfo := opt.Shard.info(member)
	dir, err := MakeRunDir(opt.Base, sc.Name, opt.Shard.dirSuffix())
	if err == nil {
		err = opt.Shard.writeInfo(dir, shardInfo) // shard.json: a shard killed in its first stage is still known
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
	prog := live.StartDisplay(stdout, stderr, progress, opt.Quiet)
	_, err = engine.Run(ctx, engine.Config{
		Scenario: sc, Workload: w, BaseURL: baseURL, Dir: dir, Log: log, Live: progress,
		ServerMetricsURL: ServerMetricsURL(sc, baseURL), GPU: GPUTelemetry(sc, baseURL), Shard: opt.Shard.Part, StageStart: member.stageStart(),
		OnStage: func(r engine.StageResult) {
			prog.Println(stdout, StageLine(r, len(w.Stages)))
			st, err := SummarizeStage(opt.Tool, sc, w, r, shardInfo)
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
	signals.setNote("stopping — the stages have ended; the report is written, marked interrupted (again to quit at once)")
	return finish(sc, stages, dir, opt, started, err, summaryErr, stdout, shardInfo, signals.stop)
}

// finish writes the report of a run whose stages ended (runErr: why the engine stopped, if it
// did), prints the headline and the table, and decides the outcome: the results directory and, for a
// finished run, an exit-1 error listing what failed. signalled uninstalls the run's signal handler
// and says whether a signal came: one that came after the stages, while the report was written,
// still makes the run interrupted (report.json says so, exit 130).
func finish(sc *workload.Scenario, stages []*resultfiles.StageReport, dir string, opt Options, started time.Time, runErr, summaryErr error, stdout io.Writer, shard *resultfiles.ShardInfo, signalled func() bool) (string, error) {
	interrupted := errors.Is(runErr, engine.ErrInterrupted)
	scenarioFile := AbsPath(sc.File)
	if opt.FromResolved {
		scenarioFile = AbsPath(filepath.Join(dir, "scenario.resolved.yaml"))
	}
	rep := resultfiles.New(sc, stages, resultfiles.Meta{Tool: opt.Tool, ScenarioFile: scenarioFile,
		Command: "plload run " + scenarioFile + " --out " + AbsPath(opt.Base) + opt.Shard.flags(), Started: started, Finished: time.Now(), Interrupted: interrupted, Shard: shard})
	write := func() error {
		err := rep.Write(dir)
		if err == nil && opt.Render != nil {
			err = opt.Render(dir, sc, rep)
		}
		return err
	}
	werr := write()
	lateSignal := signalled() && !interrupted
	if lateSignal { // the stages were whole; the run was not: the files say it was interrupted
		interrupted, rep.Interrupted = true, true
		werr = write()
	}
	if werr != nil {
		summaryErr = errors.Join(summaryErr, werr)
	}
	table := ""
	if opt.Table != nil {
		table = opt.Table(stages)
	}
	fmt.Fprintf(stdout, "\n%s\n\n%s", rep.Headline, table)
	for _, w := range rep.Warnings() {
		fmt.Fprintln(stdout, "warning: "+w)
	}
	failures := Failures(sc, stages, rep.HeadlineStage != nil)
	switch {
	case lateSignal:
		fmt.Fprintf(stdout, "interrupted after the stages ended, while the report was written: the report is whole and says the run was interrupted; results in %s\n", dir)
		return "", &Error{Code: Interrupted, Err: errors.New("interrupted")}
	case interrupted:
		skipped := ""
		if len(stages) < len(sc.Load.Stages) {
			skipped = fmt.Sprintf(", and the %d later stage(s) did not run", len(sc.Load.Stages)-len(stages))
		}
		fmt.Fprintf(stdout, "interrupted: the last stage is partial%s; results in %s\n", skipped, dir)
		if errors.Is(runErr, engine.ErrRecordsLost) {
			return "", &Error{Code: Interrupted, Err: errors.Join(runErr, summaryErr)} // "interrupted; records lost: …"
		}
		return "", &Error{Code: Interrupted, Err: errors.New("interrupted")}
	case summaryErr != nil && errors.Is(runErr, engine.ErrRecordsLost):
		// The disk that refused the records refused the summaries too: the records kept are still whole.
		return "", &Error{Code: Failed, Err: fmt.Errorf("the run stopped: %v; writing the report: %w (results in %s); once there is room, "+
			"plload report --records STAGE_DIR/profile_export.jsonl --scenario %s --stage N computes a stage from the records kept",
			runErr, summaryErr, dir, filepath.Join(dir, "scenario.resolved.yaml"))}
	case summaryErr != nil && runErr != nil: // what stopped the run comes first: the report's failure follows from it
		return "", &Error{Code: Failed, Err: fmt.Errorf("the run stopped: %v; writing the report: %w (results in %s)", runErr, summaryErr, dir)}
	case summaryErr != nil:
		return "", &Error{Code: Failed, Err: fmt.Errorf("writing the report: %w (results in %s)", summaryErr, dir)}
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, "report.md"))
	if runErr != nil && !errors.Is(runErr, engine.ErrRecordsLost) { // a stage lost records: its failed line says why and how many
		failures = append([]string{fmt.Sprintf("the run stopped: %v", runErr)}, failures...)
	}
	if len(failures) > 0 {
		return dir, &Error{Code: Failed, Err: fmt.Errorf("FAILED (exit 1):\n  %s\nresults in %s", strings.Join(failures, "\n  "), dir)}
	}
	return dir, nil
}

// Failures says what makes a finished run exit 1 (README, "Exit codes"): a stage that failed —
// stopped because the target was unreachable, without one successful request, or with an error rate
// over slo.error_rate_max —, a replay stage that could not keep the trace's pace, or no stage that
// met the SLO (no headline; only when the scenario sets one, and only where the tables show a FAIL
// or a verdict that could not be reached). Each line names the cause the stage tables show. [] when none.
func Failures(sc *workload.Scenario, stages []*resultfiles.StageReport, headline bool) []string {
	var out []string
	errMax, errSet := sc.SLO.ErrorRateLimit()
	for _, st := range stages {
		sum := st.Summary
		switch {
		case st.Engine.Aborted != "":
			out = append(out, fmt.Sprintf("stage %02d failed: %s", st.Stage, st.Engine.Aborted))
		case sum.Requests.Succeeded == 0 && sum.Requests.Errors == 0 && resultfiles.NoneEndedWarning(sum) != "":
			// Nothing failed: every answer outlasted the window (and the drain), so say that, not "no success".
			out = append(out, fmt.Sprintf("stage %02d failed: %s", st.Stage, resultfiles.NoneEndedWarning(sum)))
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
		if why := noHeadline(sc, stages); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// noHeadline says why no stage is the run's headline, in the words of the stage tables, when no
// other line of the run's failures says it already ("" then): stages that FAILed the SLO ("no stage
// met the SLO"), stages none of which could be judged (every one partial, or its verdict N/A). A
// stage that PASSed but is not the headline — a replay that fell behind its trace — has its own line,
// and its SLO PASS is never called a failure.
func noHeadline(sc *workload.Scenario, stages []*resultfiles.StageReport) string {
	slo := resultfiles.SLOText(sc.SLO)
	var failed, unmeasuredPass, notApplicable []string
	var failedStages []*resultfiles.StageReport
	partial := 0
	for _, st := range stages {
		sum := st.Summary
		if sum.Partial {
			partial++
			continue
		}
		switch sum.SLO.Verdict {
		case metrics.SLOFail:
			failed = append(failed, fmt.Sprintf("%02d", st.Stage))
			failedStages = append(failedStages, st)
		case metrics.SLOPass:
			if !sum.Measured() {
				unmeasuredPass = append(unmeasuredPass, fmt.Sprintf("%02d", st.Stage))
			}
		case metrics.SLONA:
			if sum.Requests.Succeeded > 0 { // a stage without a success has its own "failed" line
				notApplicable = append(notApplicable, fmt.Sprintf("%02d", st.Stage))
			}
		}
	}
	switch {
	case partial == len(stages):
		return fmt.Sprintf("no stage can be judged against the SLO (%s): every stage is partial (cut short, or a shard of the run lost: see merge.json), so none is the headline", slo)
	case len(failed) > 0 && len(unmeasuredPass) > 0:
		return fmt.Sprintf("no valid stage met the SLO (%s): %s failed it, and %s met it only as a replay that fell behind its trace",
			slo, resultfiles.StageList(failed), resultfiles.StageList(unmeasuredPass))
	case len(failed) > 0:
		return fmt.Sprintf("no stage met the SLO (%s): %s", slo, resultfiles.SLOBroken(failedStages, resultfiles.BrokenPerStage))
	case len(notApplicable) > 0:
		return fmt.Sprintf("no stage could be judged against the SLO (%s): %s has the verdict N/A (a limit's metric has no values: see its stage table)", slo, resultfiles.StageList(notApplicable))
	}
	return ""
}

// replayReason says how far behind the trace a replay stage fell, and what to do about it.
func replayReason(sum *metrics.StageSummary) string {
	why := sum.ReplayInvalidReason
	if why == "" {
		why = fmt.Sprintf("send lag p99 %.1f ms, max %.1f ms (limits: p99 ≤ %g ms, none > %g ms)", sum.SendLag.P99, sum.SendLag.Max, metrics.ReplayLagP99LimitMs, metrics.ReplayLateLimitMs)
	}
	return why + "; raise load.max_in_flight, replay slower (load.time_scale > 1), or run on a machine with more cores"
}
