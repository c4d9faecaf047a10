// Package lockstep is plload ab's run (docs/measurement.md): one scenario against two targets in the
// same window. Run prepares both sides, starts each stage on both at one instant (the start
// barrier), writes each side's results directory, and compares the stages both finished over their
// common window with package ab, written to ab.json and ab.md. Rendering a side's report is passed
// in, never linked.
package lockstep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/plload/plload/ab"
	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/workload"
)

// RunOptions shape one A/B (plload ab).
type RunOptions struct {
	Base      string // results base directory
	Preflight bool   // one streamed request to each target before the first stage
	// Tool names the writer in stage.json and report.json: "plload v1.2.3".
	Tool string
	// Command is the command line each side's report.json records.
	Command string
	// Render writes the files people read (report.md, report.html, charts) beside each side's
	// report.json: the rendering floor's, passed in so that running an A/B never links it.
	Render resultfiles.Renderer
	// FailOnWorse makes B's verdicts the exit code (plload ab --fail-on worse): 1 when B is worse on
	// a metric whose numbers stand, 3 when it read worse only on numbers that cannot vouch for it.
	FailOnWorse bool
}

// Run runs the scenario against both targets at once (A first), each stage starting on both at one
// instant, writes each side's results directory and the comparison (ab.json, ab.md) beside them,
// and prints the stage lines and the comparison on stdout. Everything that can be refused is refused
// before the first stage. The error is a *runner.Error carrying the exit code: Interrupted when a
// signal stopped it, Failed when a side failed (a stage stopped or without a success, a report not
// written), BadInput for what was refused before anything was sent; nil whatever the verdicts.
func Run(ctx context.Context, sc *workload.Scenario, targets []Target, opt RunOptions, stdout, stderr io.Writer) error {
	stdout, stderr = &lockedWriter{w: stdout}, &lockedWriter{w: stderr}
	ctx, stop := runner.Interruptible(ctx, stderr)
	defer stop()
	sides, err := prepareSides(ctx, sc, targets, opt.Base, opt.Preflight, stderr)
	if err != nil {
		return err
	}
	dir, err := makeDirs(opt.Base, sc.Name, sides)
	if err != nil {
		return badInput("results directory: %v; choose another with --out or output.dir; no stage was started", err)
	}
	fmt.Fprintf(stdout, "plload ab %s: %s (A) vs %s (B), %d stage(s), results in %s\n", sc.Name, sides[0].target.Name, sides[1].target.Name, len(sides[0].w.Stages), dir)
	started := time.Now()
	runSides(ctx, sides, opt.Tool, stdout, stderr)
	for _, s := range sides {
		s.writeReport(started, opt)
	}
	res, err := compareSides(sides, uint64(sc.Seed))
	removeRecords(sides)
	if err != nil {
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("comparing the targets: %w (results in %s)", err, dir)}
	}
	if err := writeResult(dir, res); err != nil {
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("writing the comparison: %w", err)}
	}
	decision := ab.Decide(res, doubts(sides))
	fmt.Fprintf(stdout, "\n%s\ncomparison: %s\n%s\n", ab.Markdown(res), filepath.Join(dir, "ab.md"), decision.Line(sides[0].target.Name, sides[1].target.Name))
	if err := outcome(ctx, sides, dir); err != nil || !opt.FailOnWorse {
		return err
	}
	return verdictOutcome(decision, dir)
}

// verdictOutcome is --fail-on worse's exit code: 1 when B is worse on a metric whose numbers stand,
// 3 when it read worse only where the numbers cannot vouch for it (a strained client measuring B, a
// stage cut short, a replay that fell behind), else nil.
func verdictOutcome(d ab.Decision, dir string) error {
	switch {
	case len(d.Worse) > 0:
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("FAILED (exit 1, --fail-on worse): B is worse:\n  %s\nresults in %s", strings.Join(d.Worse, "\n  "), dir)}
	case len(d.Undecided) > 0:
		return &runner.Error{Code: runner.Undecided, Err: fmt.Errorf("UNDECIDED (exit 3, --fail-on worse): B read worse only on numbers that cannot vouch for it:\n  %s\nrerun on a quieter machine, or the stage whole; results in %s", strings.Join(d.Undecided, "\n  "), dir)}
	}
	return nil
}

// doubts says, per stage both sides ran, why a worse verdict of B could not stand on it: a stage
// cut short, a side's replay that fell behind its trace, the client strained while it measured B.
func doubts(sides []*side) ab.Doubts {
	out := ab.Doubts{}
	a, b := sides[0], sides[1]
	for _, sb := range b.stages {
		var d ab.Doubt
		for _, sa := range a.stages {
			if sa.Stage == sb.Stage {
				d = ab.StageDoubt(sa, sb, b.target.Name)
			}
		}
		out[sb.Stage] = d
	}
	return out
}

// runSides runs both targets' engines at once, each stage starting on both at one instant.
func runSides(ctx context.Context, sides []*side, tool string, stdout, stderr io.Writer) {
	barrier := newStartBarrier(len(sides))
	var wg sync.WaitGroup
	for _, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("side", s.target.Name)
			_, s.runErr = engine.Run(ctx, engine.Config{
				Scenario: s.sc, Workload: s.w, Dir: s.dir, Log: log,
				ServerMetricsURL: runner.ServerMetricsURL(s.sc, s.target.URL),
				GPU:              runner.GPUTelemetry(s.sc, s.target.URL),
				StageStart:       barrier.wait,
				OnStage: func(r engine.StageResult) {
					if r.Start.IsZero() { // the other side stopped before this stage began: nothing ran
						os.RemoveAll(r.Dir)
						return
					}
					fmt.Fprintf(stdout, "[%s] %s\n", s.target.Name, runner.StageLine(r, len(s.w.Stages)))
					st, err := runner.SummarizeStage(tool, s.sc, s.w, r, nil)
					if err != nil {
						s.summaryErr = errors.Join(s.summaryErr, err)
						return
					}
					s.stages = append(s.stages, st)
				},
			})
			// A side that stopped early stops the other at its next stage: the comparison is over.
			barrier.leave(s.target.Name, s.runErr)
		}()
	}
	wg.Wait()
}

// writeResult writes ab.json and ab.md into dir.
func writeResult(dir string, res resultfiles.AB) error {
	if err := res.Write(dir); err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "ab.md"), []byte(ab.Markdown(res)))
}

// outcome: 130 when interrupted, 1 when a side failed (a stage stopped or without a success, a
// report not written), else 0 whatever the verdicts.
func outcome(ctx context.Context, sides []*side, dir string) error {
	var failures []string
	for _, s := range sides {
		// A side waiting at the barrier when the signal came ends with ctx's error, not ErrInterrupted.
		if errors.Is(s.runErr, engine.ErrInterrupted) || ctx.Err() != nil {
			return &runner.Error{Code: runner.Interrupted, Err: fmt.Errorf("interrupted: the last stage is partial; results in %s", dir)}
		}
		if s.runErr != nil && !errors.Is(s.runErr, errOtherSideStopped) {
			failures = append(failures, fmt.Sprintf("%s: %v", s.target.Name, s.runErr))
		}
		if s.summaryErr != nil {
			failures = append(failures, fmt.Sprintf("%s: writing its results: %v", s.target.Name, s.summaryErr))
		}
		for _, st := range s.stages {
			if st.Summary.Requests.Succeeded == 0 && s.runErr == nil {
				failures = append(failures, fmt.Sprintf("%s: stage %02d: no request in its window succeeded", s.target.Name, st.Stage))
			}
		}
	}
	if len(failures) > 0 {
		return &runner.Error{Code: runner.Failed, Err: fmt.Errorf("FAILED (exit 1): a side failed:\n  %s\nresults in %s", strings.Join(failures, "\n  "), dir)}
	}
	return nil
}

// badInput is a runner.BadInput error with a formatted message: refused before anything was sent.
func badInput(format string, args ...any) error {
	return &runner.Error{Code: runner.BadInput, Err: fmt.Errorf(format, args...)}
}

// lockedWriter serializes writes: both targets' engines log and print at once.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
