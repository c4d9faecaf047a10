package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// Report is report.json: the run and all its stages.
type Report struct {
	SchemaVersion int            `json:"schema_version"`
	Tool          string         `json:"tool"`
	Run           string         `json:"run"`
	ScenarioFile  string         `json:"scenario_file"`
	Command       string         `json:"command"`
	Seed          uint64         `json:"seed"`
	Started       time.Time      `json:"started"`
	Finished      time.Time      `json:"finished"`
	Interrupted   bool           `json:"interrupted"`
	Headline      string         `json:"headline"`
	HeadlineStage int            `json:"headline_stage"` // 0: none
	Stages        []*StageReport `json:"stages"`
}

// Meta is what the report says about how the run was made.
type Meta struct {
	Tool, ScenarioFile, Command string
	Started, Finished           time.Time
	Interrupted                 bool
}

// New assembles a run's report from its stage reports.
func New(sc *workload.Scenario, stages []*StageReport, m Meta) *Report {
	r := &Report{SchemaVersion: SchemaVersion, Tool: m.Tool, Run: sc.Name, ScenarioFile: m.ScenarioFile,
		Command: m.Command, Seed: sc.Seed, Started: m.Started, Finished: m.Finished, Interrupted: m.Interrupted,
		Stages: stages, Headline: HeadlineLine(stages)}
	sums := make([]*metrics.StageSummary, len(stages))
	for i, s := range stages {
		sums[i] = s.Summary
	}
	if best := metrics.Headline(sums); best >= 0 {
		r.HeadlineStage = stages[best].Stage
	}
	return r
}

// Write writes report.json and report.md into dir.
func (r *Report) Write(dir string, sc *workload.Scenario) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "report.json"), append(data, '\n')); err != nil {
		return err
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "report.md"), []byte(r.Markdown(sc))); err != nil {
		return err
	}
	if len(r.Stages) == 0 {
		return nil
	}
	runs := []Run{{Dir: dir, Name: r.Run, Stages: r.Stages}}
	if err := WriteCharts(dir, runs); err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	for _, st := range r.Stages {
		if err := StageChartsFromRecords(dir, st); err != nil {
			return fmt.Errorf("charts of stage %d: %w", st.Stage, err)
		}
	}
	var stageSVGs [][]byte
	for _, st := range r.Stages {
		for _, kind := range []string{"cdf", "timeseries"} {
			if svg, err := os.ReadFile(filepath.Join(dir, "charts", fmt.Sprintf("stage_%02d_%s.svg", st.Stage, kind))); err == nil {
				stageSVGs = append(stageSVGs, svg)
			}
		}
	}
	page, err := HTML(runs, r.Tool, strings.TrimPrefix(methodSection(r, sc), "\n"), stageSVGs...)
	if err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "report.html"), page)
}

// Warnings lists every stage's warnings, prefixed with the stage.
func (r *Report) Warnings() []string {
	var out []string
	for _, s := range r.Stages {
		for _, w := range s.Summary.Warnings {
			out = append(out, fmt.Sprintf("stage %02d: %s", s.Stage, w))
		}
	}
	return out
}

// Markdown is report.md: the headline first, the stage table, warnings, then how it was measured.
func (r *Report) Markdown(sc *workload.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# plload report: %s\n\n%s\n\n", r.Run, r.Headline)
	if r.Interrupted {
		b.WriteString("The run was interrupted: the last stage is partial (its window ends at the interrupt) and later stages did not run.\n\n")
	}
	b.WriteString(StageTable(r.Stages))
	b.WriteString("\nColumns: load is the concurrency (or arrival rate and its cap); active sess is the time-weighted mean (min–max) of open sessions; " +
		"req/s, out tok/s and goodput/s count successful requests that ended in the measurement window (goodput: those that also met the TTFT and ITL limits); " +
		"latencies are in ms; RTT is the network round trip (GET /v1/models on a warm connection, measured before the stage): the part of TTFT no server can remove; ITL is the pooled distribution of gaps between streamed tokens; err% counts cancellations as errors (†: some requests were cancelled, so latency percentiles are lower bounds); " +
		"cache hit% is cached ÷ prompt tokens over successful requests that reported usage.\n")
	if w := r.Warnings(); len(w) > 0 {
		b.WriteString("\n## Warnings\n\n")
		for _, line := range w {
			b.WriteString("- " + line + "\n")
		}
	}
	b.WriteString(errorsSection(r.Stages))
	b.WriteString(serverSection(r.Stages))
	b.WriteString(injectorSection(r.Stages))
	b.WriteString(methodSection(r, sc))
	return b.String()
}

func errorsSection(stages []*StageReport) string {
	var b strings.Builder
	for _, s := range stages {
		if len(s.Summary.ErrorKinds) == 0 {
			continue
		}
		kinds := make([]string, 0, len(s.Summary.ErrorKinds))
		for k := range s.Summary.ErrorKinds {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%s × %d", k, s.Summary.ErrorKinds[k])
		}
		fmt.Fprintf(&b, "- stage %02d: %s\n", s.Stage, strings.Join(parts, ", "))
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n## Errors by kind\n\n" + b.String()
}

// serverSection puts the server's own view next to the client's: queueing, KV-cache use, its TTFT
// and its cache hit rate, from its Prometheus endpoint.
func serverSection(stages []*StageReport) string {
	var b strings.Builder
	for _, s := range stages {
		sv := s.Server
		if sv == nil {
			continue
		}
		if sv.Samples == 0 {
			fmt.Fprintf(&b, "| %02d | %s | | | | | |\n", s.Stage, sv.Note)
			continue
		}
		opt := func(o metrics.Opt[float64], f string) string {
			if !o.OK {
				return "N/A"
			}
			return fmt.Sprintf(f, o.V)
		}
		fmt.Fprintf(&b, "| %02d | %s (%d scrapes) | %s / %s | %s / %s | %s / %s | %s (client %s) | %s (client %s) |\n", s.Stage,
			metrics.ServerEngineOf(sv.Engine)+orNote(sv), sv.Samples, opt(sv.RunningMean, "%.1f"), opt(sv.RunningMax, "%.0f"),
			opt(sv.WaitingMean, "%.1f"), opt(sv.WaitingMax, "%.0f"), opt(sv.KVUsageMean, "%.2f"), opt(sv.KVUsageMax, "%.2f"),
			serverTTFT(sv), lats(s.Summary.TTFT, 50, 95), opt(sv.CacheHitRate, "%.3f"), pct(s.Summary.CacheHit.V, s.Summary.CacheHit.OK))
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n## Server view\n\n| stage | server | running mean / max | waiting mean / max | KV cache use mean / max | TTFT p50/p95 ms | cache hit |\n| --- | --- | --- | --- | --- | --- | --- |\n" + b.String() +
		"\nFrom the target's Prometheus endpoint, scraped every second; server TTFT comes from its histogram's increase over the window, so it is only as fine as the server's buckets (vLLM's jump from 100 ms to 250 ms).\n"
}

func orNote(s *metrics.ServerSummary) string {
	if s.Engine == "unknown" {
		return "unknown server"
	}
	return ""
}

// injectorSection shows how hard plload itself worked, stage by stage: the evidence that the client
// was not the bottleneck (thresholds: metrics.InjectorCPUWarnShare, InjectorSchedWarnMs,
// InjectorRunQueueWarnPercent).
func injectorSection(stages []*StageReport) string {
	var b strings.Builder
	b.WriteString("\n## Injector health\n\n| stage | client CPU | waiting for a CPU | scheduler latency p99 | GC pauses | think lag p99 | start lag p99 |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, s := range stages {
		h := s.Injector
		wait := "N/A"
		if h.RunQueueWaitPercent.OK {
			wait = fmt.Sprintf("%.0f%% of the time", h.RunQueueWaitPercent.V)
		}
		fmt.Fprintf(&b, "| %02d | %.0f%% of %d core(s) | %s | %.2f ms | %.1f ms | %s | %s |\n", s.Stage, h.CPUPercent, h.Cores, wait,
			h.SchedLatencyP99Ms, h.GCPauseTotalMs, lagText(s.Summary.ThinkLag), lagText(s.Summary.StartLag))
	}
	fmt.Fprintf(&b, "\nA warning is raised when the client's CPU passes %.0f%% of its cores, its threads wait for a CPU more than %d%% of the time (other processes taking the cores; Linux only), or its scheduler latency p99 passes %.0f ms: then its own timestamps may be late. With the bundled mock in-process, the CPU figure includes the mock's.\n",
		100*metrics.InjectorCPUWarnShare, metrics.InjectorRunQueueWarnPercent, metrics.InjectorSchedWarnMs)
	return b.String()
}

func lagText(d metrics.Dist) string {
	if !d.Known() {
		return "N/A"
	}
	return fmt.Sprintf("%.2f ms", d.P99)
}

func methodSection(r *Report, sc *workload.Scenario) string {
	var b strings.Builder
	m := sc.Masked()
	b.WriteString("\n## Method\n\n")
	b.WriteString("- Tool: " + r.Tool + ", one goroutine per session, streaming SSE; every chunk is timestamped on the monotonic clock when the read that completed it returned, before JSON parsing; wall-clock times come from one anchor plus monotonic offsets.\n")
	b.WriteString("- Window per stage: t0 = the first request's issue time (arrival_rate: the schedule's origin); W = t0 + warmup; E = W + duration; E_eff = min(E, interrupt). Latency, errors and cache hit count requests that started in [W, E_eff); throughput counts successful requests that ended in it, divided by E_eff − W. Warmup is real load, excluded from these numbers.\n")
	b.WriteString("- Percentiles: linear interpolation between closest ranks. TTFT: first token event (reasoning included) − request start. ITL: all gaps between consecutive token events, pooled.\n")
	fmt.Fprintf(&b, "- SLO: TTFT p95 ≤ %s, ITL p95 ≤ %s, error rate ≤ %g; any known value over its limit is FAIL, otherwise any unknown value is N/A.\n",
		sc.SLO.TTFTP95, sc.SLO.ITLP95, sc.SLO.ErrorRateMax)
	fmt.Fprintf(&b, "- Cost: $%g/h × %d GPU(s)%s; $/1M out = price ÷ (out tok/s × 3600) × 10⁶; $/1K turns = price ÷ (req/s × 3600) × 10³; $/session = $/1K turns ÷ 10³ × E[turns] (%.3f, after clamping). The headline is the complete, SLO-passing stage with the highest out tok/s.\n",
		sc.Cost.GPUHourlyUSD, sc.Cost.GPUCount, label(sc.Cost.Label), sc.Session.Turns.MeanInt())
	b.WriteString("\n## Workload\n\n")
	fmt.Fprintf(&b, "- Personas: %s; selection %s", personasText(sc), sc.Session.PersonaSelection)
	if sc.Session.PersonaSelection == "zipf" {
		fmt.Fprintf(&b, " (s = %g)", sc.Session.ZipfS)
	}
	b.WriteString(".\n")
	fmt.Fprintf(&b, "- Sessions: turns %s, user message %s tokens, max output %s tokens, think time %s", distText(sc.Session.Turns),
		distText(sc.Session.UserInputTokens), distText(sc.Session.MaxOutputTokens), distText(sc.Session.ThinkTime))
	if sc.Session.RetrievedTokens != nil {
		fmt.Fprintf(&b, ", a retrieved document of %s tokens before every user turn", distText(*sc.Session.RetrievedTokens))
	}
	fmt.Fprintf(&b, "; language %s. History is real: each request re-sends every earlier message and the server's own answers.\n", sc.Session.Language)
	b.WriteString("- Datasets (sha256 of stage_NN/dataset.jsonl, the workload's identity):\n")
	for _, s := range r.Stages {
		fmt.Fprintf(&b, "  - stage %02d: %s\n", s.Stage, s.DatasetSHA256)
	}
	b.WriteString("\n## Configuration\n\n")
	target := m.Target.BaseURL
	if mk := sc.Target.Mock; sc.UsesMock() && mk != nil {
		target = fmt.Sprintf("the bundled mock, in-process (TTFT %s, %g tok/s per stream, jitter %g, error rate %g)", mk.TTFT, mk.TPS, mk.Jitter, mk.ErrorRate)
	}
	fmt.Fprintf(&b, "- Target: %s, model %s, endpoint %s; seed %d.\n", target, m.Target.Model, m.Target.Endpoint, sc.Seed)
	fmt.Fprintf(&b, "- Output length: each request asks for at most its drawn max_output_tokens through `%s`; the server may stop earlier (no ignore_eos is sent), so output lengths are the server's.\n", sc.Target.MaxTokensField)
	if len(sc.Target.ExtraBody) > 0 {
		eb, _ := json.Marshal(sc.Target.ExtraBody)
		fmt.Fprintf(&b, "- extra_body: `%s`.\n", eb)
	}
	fmt.Fprintf(&b, "- Load: %s; drain timeout %s; request timeout %s.\n", sc.Load.Mode, sc.Load.DrainTimeout, sc.Target.Timeout)
	b.WriteString("\n## Limitations\n\n")
	b.WriteString("- Token counts of plload's own (input lengths without usage, synthetic text targets) use o200k_base, not the model's tokenizer; server-reported usage is used whenever it is sent.\n")
	b.WriteString("- The load generator shares this machine's CPU with anything else running; check the think-lag and start-lag warnings, and prove the injector with `plload selftest`.\n")
	b.WriteString("- Synthetic prompts are prose-like but not real user traffic; cache hit rates reflect the scenario's persona sharing, not production's.\n")
	b.WriteString("\n## Reproduce\n\n```sh\n" + r.Command + "\n```\n")
	fmt.Fprintf(&b, "\nRun %s → %s.\n", r.Started.Format(time.RFC3339), r.Finished.Format(time.RFC3339))
	return b.String()
}

func label(l string) string {
	if l == "" {
		return ""
	}
	return " (" + l + ")"
}

func personasText(sc *workload.Scenario) string {
	if sc.Personas.Source == "file" {
		return "from " + sc.Personas.File
	}
	return fmt.Sprintf("%d synthetic, system prompts of %s tokens", sc.Personas.Count, distText(sc.Personas.SystemPromptTokens))
}

func distText(d workload.Dist) string { return d.String() }
