package prober

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/search"
	"github.com/plload/plload/workload"
)

// prober runs probes as the stages of one results directory.
type prober struct {
	plan    *Plan
	baseURL string
	dir     string
	log     *slog.Logger
	specs   []workload.Stage           // the probes run, in order: stage k is specs[k-1]
	stages  []*resultfiles.StageReport // their reports
	count   int                        // probes judged, for the progress lines
	// partial is the probe the user's interrupt cut short (nil: none): never judged, but its stage
	// is in the results, so search.json lists it.
	partial *search.Probe
}

// probe runs one stage at v and measures it (a search.Prober). The stage stops early once its
// failure is certain (search.EarlyStop); the other signs of saturation are judged from the finished
// stage's records.
func (p *prober) probe(ctx context.Context, v float64) (int, search.Measurement, error) {
	p.count++
	spec := p.plan.stageAt(v)
	sc := p.plan.withStages(append(slices.Clone(p.specs), spec))
	if err := runner.CheckOpenFiles(sc, io.Discard); err != nil {
		return 0, search.Measurement{Invalid: "the client's open-files limit: " + err.Error()}, nil
	}
	w, err := sc.Build()
	if err != nil {
		return 0, search.Measurement{}, fmt.Errorf("building probe %s: %w", p.plan.valueText(v), err)
	}
	k := len(sc.Load.Stages)
	var r engine.StageResult
	early := search.NewEarlyStop(p.plan.slo, spec.Duration.D())
	_, runErr := engine.Run(ctx, engine.Config{Scenario: sc, BaseURL: p.baseURL, Dir: p.dir, Log: p.log,
		StopWhen:         func(_ int, rec *metrics.Record) string { return early.Check(rec) },
		Workload:         w.WithStages(w.Stages[k-1:]),
		ServerMetricsURL: runner.ServerMetricsURL(sc, p.baseURL),
		GPU:              runner.GPUTelemetry(sc, p.baseURL),
		OnStage:          func(res engine.StageResult) { r = res }})
	if r.Stage == 0 {
		return 0, search.Measurement{}, runErr // nothing ran (the stage directory could not be made)
	}
	p.specs = append(p.specs, spec)
	st, err := runner.SummarizeStage(p.plan.given.Tool, sc, w, r, nil)
	if err != nil {
		return k, search.Measurement{}, err
	}
	p.stages = append(p.stages, st)
	switch {
	case r.Partial:
		p.partial = &search.Probe{Value: v, Verdict: search.Interrupted, Stage: k,
			Reason: "the run was interrupted during this probe: its stage is partial, and it was not judged"}
		return k, search.Measurement{}, engine.ErrInterrupted
	case r.Aborted != "":
		return k, search.Measurement{}, fmt.Errorf("probe at %s: %s", p.plan.valueText(v), r.Aborted)
	case runErr != nil && !errors.Is(runErr, engine.ErrStageFailed):
		return k, search.Measurement{}, runErr
	}
	m, err := p.measure(r, st)
	if r.Stopped != "" {
		m.StoppedEarly, m.StoppedLimit = r.Stopped, early.Limit()
	}
	return k, m, err
}

// measure reads a probe's records into its measurement and checks its client; the records go
// afterwards when the scenario does not keep them.
func (p *prober) measure(r engine.StageResult, st *resultfiles.StageReport) (search.Measurement, error) {
	path := filepath.Join(r.Dir, "profile_export.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return search.Measurement{}, err
	}
	s := search.NewSampler(p.plan.slo, st.Summary, p.plan.sc.Load.IsOpenLoop())
	err = metrics.ReadRecords(f, func(rec *metrics.Record) error { s.Add(rec); return nil })
	f.Close()
	if err != nil {
		return search.Measurement{}, fmt.Errorf("%s: %w", path, err)
	}
	if !p.plan.sc.Output.RecordRequests {
		os.Remove(path)
	}
	m := s.Measurement()
	m.Invalid, m.Strained, m.LateMs = clientStrain(r, p.plan.slo)
	return m, nil
}

// schedPeriodMs is how long a runnable thread may wait for a CPU at a time, taken as the Linux
// scheduler's period on a 2-core machine (CFS: 6 ms × (1 + log2 2)): the lateness per event a
// client whose threads waited for a CPU is allowed, since that wait is not measured per event.
const schedPeriodMs = 12

// clientStrain says how the client was strained during a probe, as plload run warns of it, unless
// the errors explain it (a dead target keeps the client busy failing fast). full is the client at
// its CPU's capacity: it could not hold the load, so the probe is invalid. late is anything else
// that makes its timestamps late (threads waiting for a CPU, GC pauses, scheduling delays), which
// only makes latencies read longer, by up to lateMs: 3 × the scheduling delay's p99 when that is
// the only warning (a measured delay; under a tenth of the tightest latency limit it cannot move
// a verdict and is not counted), else 3 × the larger of it and schedPeriodMs.
func clientStrain(r engine.StageResult, slo search.SLO) (full, late string, lateMs float64) {
	h := r.Injector
	if len(h.Warnings()) == 0 || runner.FailuresExplainStrain(r) {
		return "", "", 0
	}
	if w := (metrics.InjectorHealth{CPUPercent: h.CPUPercent, Cores: h.Cores}).Warnings(); len(w) > 0 {
		full = "the client was the limit, not the server: " + w[0]
	}
	rest := h
	rest.CPUPercent = 0
	w := rest.Warnings()
	if len(w) == 0 {
		return full, "", 0
	}
	tightest := math.Inf(1)
	for _, l := range slo.Latency {
		tightest = min(tightest, l.LimitMs)
	}
	lag := h.TimestampLagMs()
	lateMs = metrics.InjectorLateEvents * max(lag, schedPeriodMs)
	if len(w) == 1 && lag > metrics.InjectorSchedWarnMs {
		if lateMs = metrics.InjectorLateEvents * lag; lateMs <= tightest/10 {
			return full, "", 0
		}
	}
	return full, strings.Join(w, "; "), lateMs
}
