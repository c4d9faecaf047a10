package lockstep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/plload/plload/ab"
	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/workload"
)

// side is one target's run: its scenario (the file's, with this target's URL and model), its
// workload (built from the same seed as the other's), its results.
type side struct {
	target resultfiles.ABTarget
	sc     *workload.Scenario
	w      *workload.Workload
	dir    string
	stages []*resultfiles.StageReport
	// runErr is why its engine run stopped (nil: it ran every stage); summaryErr a stage summary or
	// the report that could not be written.
	runErr, summaryErr error
}

// prepareSides makes each target's scenario and workload and checks both targets before either
// is sent a stage: a host that does not resolve is bad input (exit 2), a target whose preflight
// request is refused is a failed side (exit 1), and nothing goes to the other target either.
func prepareSides(ctx context.Context, sc *workload.Scenario, targets []Target, base string, preflight bool, stderr io.Writer) ([]*side, error) {
	var sides []*side
	for _, t := range targets {
		s := *sc // the file's scenario, this target's URL and model; the other fields are read only
		s.Target.BaseURL, s.Target.Mock = t.URL, nil
		if t.Model != "" {
			s.Target.Model = t.Model
		}
		if err := runner.CheckTarget(ctx, &s); err != nil {
			return nil, fmt.Errorf("--target %s: %w", t.Name, err)
		}
		if err := runner.CheckOpenFiles(&s, stderr); err != nil {
			return nil, err
		}
		// Each side builds its own workload from the one seed: the engine releases a pool's dataset
		// bytes as it writes them, so two runs must not share one.
		w, err := s.Build()
		if err != nil {
			return nil, badInput("building the workload: %v", err)
		}
		sides = append(sides, &side{target: resultfiles.ABTarget{Name: t.Name, URL: t.URL, Model: s.Target.Model, Dir: t.Name}, sc: &s, w: w})
	}
	// Before any traffic (the preflight included): the results directory takes both sides' records.
	for _, s := range sides {
		if err := runner.CheckResultsDir(base, s.sc, s.w); err != nil {
			return nil, err
		}
	}
	if !preflight {
		return sides, nil
	}
	for _, s := range sides {
		warning, err := engine.Preflight(ctx, engine.Config{Scenario: s.sc, Workload: s.w})
		switch {
		case ctx.Err() != nil:
			return nil, &runner.Error{Code: runner.Interrupted, Err: errors.New("interrupted before the first stage; nothing was written")}
		case err != nil:
			return nil, &runner.Error{Code: runner.Failed, Err: fmt.Errorf("--target %s=%s: %w; the A/B did not start: nothing was sent to either target beyond the one preflight request", s.target.Name, s.target.URL, err)}
		case warning != "":
			fmt.Fprintf(stderr, "warning: --target %s: %s\n", s.target.Name, warning)
		}
	}
	return sides, nil
}

// makeDirs creates <base>/<name>-ab-<time>/ and a results directory per target in it, each with
// its scenario.resolved.yaml (its URL and model: `plload run` of it reruns that side alone).
func makeDirs(base, name string, sides []*side) (string, error) {
	dir, err := runner.MakeRunDir(base, name+"-ab", "")
	if err != nil {
		return "", err
	}
	for _, s := range sides {
		s.dir = filepath.Join(dir, s.target.Dir)
		if err := os.Mkdir(s.dir, 0o755); err != nil {
			return "", err
		}
		resolved, err := s.sc.ResolvedYAML()
		if err != nil {
			return "", fmt.Errorf("resolving the scenario: %w", err)
		}
		if err := metrics.WriteFileAtomic(filepath.Join(s.dir, "scenario.resolved.yaml"), resolved); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// writeReport writes a side's report.json and, with render, report.md and the rest, as plload run
// does; command is the command line the report records.
func (s *side) writeReport(started time.Time, opt RunOptions) {
	rep := resultfiles.New(s.sc, s.stages, resultfiles.Meta{Tool: opt.Tool, ScenarioFile: runner.AbsPath(filepath.Join(s.dir, "scenario.resolved.yaml")),
		Command: opt.Command, Started: started, Finished: time.Now(), Interrupted: errors.Is(s.runErr, engine.ErrInterrupted)})
	err := rep.Write(s.dir)
	if err == nil && opt.Render != nil {
		err = opt.Render(s.dir, s.sc, rep)
	}
	if err != nil {
		s.summaryErr = errors.Join(s.summaryErr, err)
	}
}

// removeRecords deletes the records of a scenario with output.record_requests: false, once the
// comparison has read them.
func removeRecords(sides []*side) {
	for _, s := range sides {
		if s.sc.Output.RecordRequests {
			continue
		}
		for _, st := range s.stages {
			os.Remove(filepath.Join(s.dir, fmt.Sprintf("stage_%02d", st.Stage), "profile_export.jsonl"))
		}
	}
}

// compareSides compares every stage both sides finished, from their records.
func compareSides(sides []*side, seed uint64) (resultfiles.AB, error) {
	a, b := sides[0], sides[1]
	res := resultfiles.AB{Targets: []resultfiles.ABTarget{a.target, b.target}, Metrics: []resultfiles.ABMetric{}, Requests: []resultfiles.ABStageCounts{},
		SameDataset: true, Confidence: 0.95, Resamples: ab.DefaultResamples, IntervalMethod: ab.IntervalMethod, Notes: []string{}}
	for _, sa := range a.stages {
		i := slices.IndexFunc(b.stages, func(st *resultfiles.StageReport) bool { return st.Stage == sa.Stage })
		if i < 0 {
			continue // B did not run it: nothing to compare
		}
		sb := b.stages[i]
		ea, eb, cut := commonWindow(sa.Summary, sb.Summary, a.target.Name, b.target.Name)
		xa, err := a.sample(sa, ea)
		if err != nil {
			return res, err
		}
		xb, err := b.sample(sb, eb)
		if err != nil {
			return res, err
		}
		slo := resultfiles.StageInput(a.sc, sa.Stage-1).SLO
		res.Metrics = append(res.Metrics, ab.Compare(sa.Stage, xa, xb, slo, ab.Options{Resamples: ab.DefaultResamples, Seed: seed + uint64(sa.Stage)})...)
		res.Requests = append(res.Requests, resultfiles.ABStageCounts{Stage: sa.Stage, Target: a.target.Name, ABCounts: xa.Counts, DatasetSHA256: sa.DatasetSHA256},
			resultfiles.ABStageCounts{Stage: sb.Stage, Target: b.target.Name, ABCounts: xb.Counts, DatasetSHA256: sb.DatasetSHA256})
		if sa.DatasetSHA256 != sb.DatasetSHA256 {
			res.SameDataset = false
		}
		res.Notes = append(res.Notes, ab.StageNotes(sa.Stage, a.target, b.target, xa.Counts, xb.Counts)...)
		res.Notes = append(res.Notes, ab.ValidityNotes(sa.Stage, a.target, b.target, sa, sb)...)
		if cut != "" {
			res.Notes = append(res.Notes, fmt.Sprintf("stage %02d: %s", sa.Stage, cut))
		}
	}
	return res, nil
}

// sample reads the side's records of a stage over the stage's window (stage.json's), ending at end.
func (s *side) sample(st *resultfiles.StageReport, end int64) (ab.Sample, error) {
	path := filepath.Join(s.dir, fmt.Sprintf("stage_%02d", st.Stage), "profile_export.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return ab.Sample{}, err
	}
	defer f.Close()
	c := ab.NewCollector(st.Summary.Window.WNs, end)
	if err := metrics.ReadRecords(f, func(r *metrics.Record) error { c.Add(r); return nil }); err != nil {
		return ab.Sample{}, fmt.Errorf("%s: %w", path, err)
	}
	return c.Sample(), nil
}
