package runner

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// SummarizeStage computes a finished stage's numbers from its records and writes stage.json; tool
// names the writer ("plload v1.2.3").
func SummarizeStage(tool string, sc *workload.Scenario, w *workload.Workload, r engine.StageResult, shard *resultfiles.ShardInfo) (*resultfiles.StageReport, error) {
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
	if strain := r.Injector.Warnings(); len(strain) > 0 && !FailuresExplainStrain(r) {
		in.Warnings = append(in.Warnings, strain...)
	}
	sum, err := metrics.SummarizeFile(filepath.Join(r.Dir, "profile_export.jsonl"), in, sc.Load.IsOpenLoop())
	if err != nil {
		return nil, fmt.Errorf("stage %d: %w", r.Stage, err)
	}
	if r.Partial {
		sum.Partial = true
	}
	if reuse := resultfiles.ReuseWarning(sc, resultfiles.StageReuse{Pool: len(w.Stages[i].Sessions), Sessions: r.Sessions, Reused: r.Reused,
		Cache: sum.ReuseCache, Explained: FailuresExplainStrain(r)}); reuse != "" {
		sum.Warnings = append(sum.Warnings, reuse) // a stage warning: in stage.json and the report
	}
	st := resultfiles.NewStageReport(tool, sc, i, w.Stages[i].SHA256, sum,
		resultfiles.EngineCounts{Issued: r.Issued, Sessions: r.Sessions, Reused: r.Reused, NotStarted: r.NotStarted, Retried: r.Retried, RetriedAfterClose: r.RetriedAfterClose, Outages: outagesOf(r), Aborted: r.Aborted,
			Protocol: r.Protocol, Connections: r.Connections})
	st.Injector, st.NetworkRTT = r.Injector, r.RTT
	st.Server = serverSummary(r, sum)
	st.GPU = gpuSummary(sc, r, sum)
	if pool := w.Stages[i]; pool.TraceBlocks > 0 {
		reuse := float64(pool.TraceReusedBlocks) / float64(pool.TraceBlocks)
		st.TraceBlockReuse = &reuse
		switch {
		case st.Server != nil && st.Server.CacheTokens.OK: // the server's metrics said it
			size := int(st.Server.CacheTokens.V)
			st.ServerCacheTokens = &size
		case sc.UsesMock(): // scraping off: the in-process mock's, which the scenario cannot change
			size := mock.DefaultConfig().CacheCapacity
			st.ServerCacheTokens = &size
		}
		if line, short := st.CacheAgainstTrace(); short { // a stage warning: in stage.json and the report
			sum.Warnings = append(sum.Warnings, line)
		}
	}
	st.Shard = shard
	return st, st.Write(r.Dir)
}

// serverSummary reduces a stage's server_metrics.jsonl to its window.
func serverSummary(r engine.StageResult, sum *metrics.StageSummary) *metrics.ServerSummary {
	samples, err := metrics.ReadJSONLines[metrics.ServerSample](filepath.Join(r.Dir, "server_metrics.jsonl"))
	if err != nil && r.ServerMetricsNote == "" {
		return nil // scraping was off
	}
	out := metrics.SummarizeServer(samples, sum.Window.WNs, sum.Window.EEffNs)
	out.Scrapes, out.ScrapesOK = r.Scrapes, r.ScrapesOK
	if r.ServerMetricsNote != "" {
		out.Note = r.ServerMetricsNote
	}
	out.WithClientCacheHit(filepath.Join(r.Dir, "profile_export.jsonl"))
	return &out
}

// FailuresExplainStrain: see resultfiles.FailuresExplainStrain.
func FailuresExplainStrain(r engine.StageResult) bool {
	return resultfiles.FailuresExplainStrain(r.Aborted, len(r.Outages), r.Errors, r.OK)
}

// StageLine is the one-line summary printed as a stage ends.
func StageLine(r engine.StageResult, stages int) string {
	state := "done"
	if r.Partial {
		state = "PARTIAL (interrupted)"
	}
	if r.Aborted != "" {
		state = "FAILED"
	}
	line := fmt.Sprintf("stage %02d/%02d %s: %d requests (%d ok, %d errors of which %d × 429, %d cancelled), %d output tokens, %d sessions, %.1f s",
		r.Stage, stages, state, r.Issued, r.OK, r.Errors, r.RateLimit, r.Cancelled, r.OutTokens, r.Sessions, r.End.Sub(r.Start).Seconds())
	if r.Records != r.Issued {
		// The counts above are the engine's; the report is computed from the records kept.
		line += fmt.Sprintf("\n  records: %d kept in %s, %d lost", r.Records, filepath.Join(r.Dir, "profile_export.jsonl"), r.Issued-r.Records)
	}
	if r.Retried > 0 {
		line += fmt.Sprintf("\n  retried: %d requests went out again on a new connection (the server had closed the kept-alive one without answering)", r.Retried)
		if r.RetriedAfterClose > 0 {
			line += fmt.Sprintf("; %d of them had been written in full before the close, so the server may have read them and done the work twice (stage.json: retried_after_close)", r.RetriedAfterClose)
		}
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

// outagesOf converts the engine's outages for stage.json ([] when there were none).
func outagesOf(r engine.StageResult) []resultfiles.Outage {
	out := []resultfiles.Outage{}
	for _, o := range r.Outages {
		out = append(out, resultfiles.Outage{From: o.From.UTC().Format(time.RFC3339Nano), To: o.To.UTC().Format(time.RFC3339Nano),
			Kind: o.Kind, Requests: o.Requests, FirstMessage: o.FirstMessage})
	}
	return out
}
