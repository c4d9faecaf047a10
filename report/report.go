// Package report renders the results model (package results) for people: report.md and report.html
// with their charts, the terminal's stage tables, the cross-run table of `plload report`, the search
// and matrix reports, and the handoff work order.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// Write writes report.json (resultfiles.Report.Write) and beside it the files people read: report.md,
// report.html and the charts.
func Write(dir string, sc *workload.Scenario, r *resultfiles.Report) error {
	if err := r.Write(dir); err != nil {
		return err
	}
	return Render(dir, sc, r)
}

var _ resultfiles.Renderer = Render

// Render writes report.md, the charts and report.html of a run into dir (a resultfiles.Renderer); the
// report.json beside them is resultfiles.Report.Write's.
func Render(dir string, sc *workload.Scenario, r *resultfiles.Report) error {
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "report.md"), []byte(Markdown(r, sc))); err != nil {
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
	page, err := HTML(runs, r.Tool, methodSection(r, sc), stageSVGs...)
	if err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "report.html"), page)
}

// Markdown is report.md: the headline first, the stage table, warnings, then how it was measured.
func Markdown(r *resultfiles.Report, sc *workload.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# plload report: %s\n\n%s\n\n", r.Run, r.Headline)
	if line := EnergyHeadline(r.Stages); line != "" {
		b.WriteString("**Energy**: " + line + "\n\n")
	}
	for _, w := range resultfiles.ReplayWarnings(r.Stages) {
		b.WriteString("**Warning**: " + mdCell(w) + "\n\n")
	}
	if r.Interrupted {
		b.WriteString(interruptedNote(r, sc))
	}
	b.WriteString(StageTable(r.Stages))
	b.WriteString(columnNotes)
	b.WriteString(sections(rowsOf([]Run{{Stages: r.Stages}}), false, nil))
	b.WriteString(methodSection(r, sc))
	return b.String()
}

// interruptedNote says what an interrupt cut: the last stage and those after it, or — a signal that
// came once the stages had ended, while the report was written — nothing of the measurement.
func interruptedNote(r *resultfiles.Report, sc *workload.Scenario) string {
	whole := sc != nil && len(r.Stages) == len(sc.Load.Stages)
	for _, st := range r.Stages {
		whole = whole && !st.Summary.Partial
	}
	if whole {
		return "The run was interrupted after its stages ended, while this report was written: no stage was cut short by it.\n\n"
	}
	return "The run was interrupted: the last stage is partial (its window ends at the interrupt) and later stages did not run.\n\n"
}

func methodSection(r *resultfiles.Report, sc *workload.Scenario) string {
	var b strings.Builder
	m := sc.Masked()
	b.WriteString("\n## Method\n\n")
	// A target.stream: false run reads whole JSON answers: there are no chunks to timestamp, and
	// saying "streaming SSE" there would describe a measurement that never happened.
	if sc.Streamed() {
		b.WriteString("- Tool: " + r.Tool + ", one goroutine per session, streaming SSE; every chunk is timestamped on the monotonic clock when the read that completed it returned, before JSON parsing; wall-clock times come from one anchor plus monotonic offsets.\n")
	} else {
		b.WriteString("- Tool: " + r.Tool + ", one goroutine per session, non-streamed whole answers (target.stream: false); each answer's end is timestamped on the monotonic clock when its whole body had arrived, before JSON parsing, so TTFT, TTFO, TPOT and ITL are absent; wall-clock times come from one anchor plus monotonic offsets.\n")
	}
	b.WriteString("- Window per stage: t0 = the first request's issue time (arrival_rate, request_rate, replay: the schedule's origin); W = t0 + warmup; E = W + duration; E_eff = min(E, interrupt). Latency, errors and cache hit count requests that started in [W, E_eff); throughput counts successful requests that ended in it, divided by E_eff − W. Warmup is real load, excluded from these numbers.\n")
	b.WriteString("- Percentiles: linear interpolation between closest ranks. TTFT: first token event (reasoning included) − request start. ITL: all gaps between consecutive token events, pooled. TPOT: per request, (E2E − TTFT) ÷ (output tokens − 1), reasoning tokens included (vLLM's TPOT, AIPerf's inter_token_latency). Open loop: \"from intended\" latencies start at the send the schedule intended, so a client that fell behind (coordinated omission) shows there; send lag = send − intended send.\n")
	tok := sc.Tokenizer()
	fmt.Fprintf(&b, "- Tokenizer: %s (sha256 %.12s…). Every length plload chose (synthetic text, dataset length filters, trace blocks, input lengths without usage) is counted in it; `prompt_tokens_agreement` in stage.json compares it with the server's usage.prompt_tokens.\n", tok.Name(), tok.SHA256())
	b.WriteString(promptAgreementLines(r.Stages))
	b.WriteString(sloMethodLine(sc.SLO))
	b.WriteString(costMethodLine(sc))
	b.WriteString("\n## Workload\n\n")
	switch src := sc.Source(); {
	case sc.Retrieval():
		fmt.Fprintf(&b, "- Requests: %s; each answer is checked for a %s per text it asked for (retrieval_items).\n", sc.RetrievalText(),
			map[string]string{"embeddings": "vector", "rerank": "score"}[sc.Target.Endpoint])
	case src != nil:
		b.WriteString(sourceText(sc, src))
	default:
		syntheticText(&b, sc)
	}
	b.WriteString("- Datasets (sha256 of stage_NN/dataset.jsonl, the workload's identity):\n")
	for _, s := range r.Stages {
		fmt.Fprintf(&b, "  - stage %02d: %s\n", s.Stage, s.DatasetSHA256)
	}
	configurationSection(&b, r, sc, m)
	return b.String()
}

// sourceText says where a dataset's or trace's workload came from — file, format, sha256, lines
// used, options — never its text (it can be a customer's data).
func sourceText(sc *workload.Scenario, src *workload.Source) string {
	kind, opts := "trace", ""
	if d := sc.Workload.Dataset; d != nil {
		kind = "dataset"
		out := "from the file (or 256 where it gives none)"
		if d.OutputTokens.Dist != nil {
			out = distText(*d.OutputTokens.Dist)
		}
		opts = fmt.Sprintf("order %s, history %s (%s), max output tokens %s", d.Order, d.History,
			map[string]string{"live": "the server's own answers", "recorded": "the file's recorded answers"}[d.History], out)
		if d.MaxTurns > 0 {
			opts += fmt.Sprintf(", at most %d turns", d.MaxTurns)
		}
		if d.MinInputTokens > 0 || d.MaxInputTokens > 0 {
			opts += fmt.Sprintf(", prompts of %d–%d tokens", d.MinInputTokens, d.MaxInputTokens)
		}
	} else if t := sc.Workload.Trace; t != nil {
		opts = fmt.Sprintf("block %d tokens per hash id, output lengths asked exactly (ignore_eos)", t.BlockTokens)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- Source: %s `%s` (format %s, sha256 %s): %d of %d lines used; %s. Its text is not shown here.\n",
		kind, src.File, src.Format, src.SHA256, src.LinesUsed, src.Lines, opts)
	fmt.Fprintf(&b, "- Sessions: %d conversations, %.2f turns each on average; think time between turns from the file where it has times, else %s.\n",
		len(src.Sessions), sc.ExpectedTurns(), distText(sc.Session.ThinkTime))
	return b.String()
}

func syntheticText(b *strings.Builder, sc *workload.Scenario) {
	fmt.Fprintf(b, "- Personas: %s; selection %s", personasText(sc), sc.Session.PersonaSelection)
	if sc.Session.PersonaSelection == "zipf" {
		fmt.Fprintf(b, " (s = %g)", sc.Session.ZipfS)
	}
	b.WriteString(".\n")
	fmt.Fprintf(b, "- Sessions: turns %s, user message %s tokens, max output %s tokens, think time %s", distText(sc.Session.Turns),
		distText(sc.Session.UserInputTokens), distText(sc.Session.MaxOutputTokens), distText(sc.Session.ThinkTime))
	if sc.Session.RetrievedTokens != nil {
		fmt.Fprintf(b, ", a retrieved document of %s tokens before every user turn", distText(*sc.Session.RetrievedTokens))
	}
	if rag := sc.Session.RAG; rag != nil {
		fmt.Fprintf(b, "; RAG turns: %s candidate documents of %s tokens, the best %d sent before the question, after %s", distText(rag.Candidates),
			distText(rag.DocumentTokens), rag.TopK, ragStepsText(sc))
	}
	fmt.Fprintf(b, "; language %s. History is real: each request re-sends every earlier message and the server's own answers.\n", sc.Session.Language)
}

func configurationSection(b *strings.Builder, r *resultfiles.Report, sc, m *workload.Scenario) {
	b.WriteString("\n## Configuration\n\n")
	target := "`" + m.Target.BaseURL + "`" // a code span: a masked *** is not emphasis
	if mk := sc.Target.Mock; sc.UsesMock() && mk != nil {
		target = fmt.Sprintf("the bundled mock, in-process (TTFT %s, %g tok/s per stream, jitter %g, error rate %g)", mk.TTFT, mk.TPS, mk.Jitter, mk.ErrorRate)
	}
	model := "model " + m.Target.Model
	if len(sc.Target.Models) > 0 {
		mix := make([]string, len(sc.Target.Models))
		for i, mw := range sc.Target.Models {
			mix[i] = fmt.Sprintf("%s (weight %g)", mw.Name, mw.Weight)
		}
		model = "a model mix, one per session: " + strings.Join(mix, ", ")
	}
	fmt.Fprintf(b, "- Target: %s, %s, endpoint %s; seed %d.\n", target, model, m.Target.Endpoint, sc.Seed)
	b.WriteString(outputLengthLine(sc))
	if len(sc.Target.ExtraBody) > 0 {
		eb, _ := json.Marshal(sc.Target.ExtraBody)
		fmt.Fprintf(b, "- extra_body: `%s`.\n", eb)
	}
	fmt.Fprintf(b, "- Load: %s; drain timeout %s; request timeout %s.\n", sc.Load.Mode, sc.Load.DrainTimeout, sc.Target.Timeout)
	b.WriteString("\n## Limitations\n\n")
	if tok := sc.Tokenizer(); tok.Name() == workload.DefaultTokenizerName {
		b.WriteString("- Token counts of plload's own (input lengths without usage, synthetic text targets) use o200k_base, not the model's tokenizer (set target.tokenizer or --tokenizer); server-reported usage is used whenever it is sent.\n")
	}
	b.WriteString("- The load generator shares this machine's CPU with anything else running; check the think-lag and start-lag warnings, and prove the injector with `plload selftest`.\n")
	if sc.Source() == nil {
		b.WriteString("- Synthetic prompts are prose-like but not real user traffic; cache hit rates reflect the scenario's persona sharing, not production's.\n")
	}
	b.WriteString("\n## Reproduce\n\n```sh\n" + r.Command + "\n```\n")
	fmt.Fprintf(b, "\nRun %s → %s.\n", r.Started.Format(time.RFC3339), r.Finished.Format(time.RFC3339))
}

// outputLengthLine says how output lengths were asked for, from the request actually sent: extra_body
// may set ignore_eos (true: the server runs to the cap) or min_tokens (it may not stop before them).
func outputLengthLine(sc *workload.Scenario) string {
	line := fmt.Sprintf("- Output length: each request asks for at most its drawn max_output_tokens through `%s`", sc.Target.LimitField())
	jsonOf := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	eos, eosSet := sc.Target.ExtraBody["ignore_eos"]
	minTok, minSet := sc.Target.ExtraBody["min_tokens"]
	switch {
	case eosSet && eos == true:
		line += "; extra_body sends `\"ignore_eos\": true`, so a server that honours it does not stop at end of sequence and runs to that cap"
	case eosSet:
		line += fmt.Sprintf("; extra_body sends `\"ignore_eos\": %s`, so the server may stop earlier", jsonOf(eos))
	default:
		line += "; no ignore_eos is sent, so the server may stop earlier"
	}
	if minSet {
		line += fmt.Sprintf(", and `\"min_tokens\": %s`, so not before that many tokens where it honours it", jsonOf(minTok))
	}
	return line + "; output lengths are the server's.\n"
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

// sloMethodLine lists every limit the scenario sets, in the order the stages are judged by them, or
// says that none is set (then every verdict is N/A, never PASS).
func sloMethodLine(slo workload.SLO) string {
	text := resultfiles.SLOText(slo)
	if text == "" {
		return "- SLO: no SLO set: verdicts are N/A, goodput is unknown, and the headline names the stage with the best throughput.\n"
	}
	line := "- SLO: " + text + "; any known value over its limit is FAIL, otherwise any unknown value is N/A."
	if len(slo.LatencyLimits()) > 0 {
		line += " Goodput counts the requests whose own value of each limited metric (mean ITL for ITL) is within its limit (a p95 limit of 500 ms: this request ≤ 500 ms)."
	} else {
		line += " No latency limit is set, so goodput is unknown."
	}
	return line + "\n"
}

// costMethodLine is how costs were figured, or that no price was set.
func costMethodLine(sc *workload.Scenario) string {
	head := "The headline is the complete, SLO-passing stage with the highest out tok/s (when the scenario sets no SLO, the complete stage with the highest out tok/s, named as the best throughput)."
	energy := ""
	if p := sc.Cost.EnergyUSDPerKWh; p != nil {
		energy = fmt.Sprintf(" Energy at $%g/kWh: the GPU telemetry's joules in the window ÷ 3.6 MJ × the price, per 1M output tokens and per 1K turns from J/out token and J/1K turns.", *p)
	}
	if sc.Cost.GPUHourlyUSD == nil {
		return "- Cost: no price set: cost N/A (cost.gpu_hourly_usd prices the stages). " + head + energy + "\n"
	}
	return fmt.Sprintf("- Cost: $%g/h × %d GPU(s)%s; $/1M out = price ÷ (out tok/s × 3600) × 10⁶; $/1K turns = price ÷ (req/s × 3600) × 10³; $/session = $/1K turns ÷ 10³ × E[turns] (%.3f, after clamping). %s%s\n",
		*sc.Cost.GPUHourlyUSD, sc.Cost.GPUCount, label(sc.Cost.Label), sc.ExpectedTurns(), head, energy)
}

// ragStepsText names a RAG turn's steps and where each went.
func ragStepsText(sc *workload.Scenario) string {
	var steps []string
	for _, st := range []struct {
		name string
		at   *workload.StepTarget
	}{{"embedding the question", sc.Session.RAG.Embed}, {"reranking the candidates", sc.Session.RAG.Rerank}} {
		if st.at == nil {
			continue
		}
		to := sc.StepTargetFor(st.at)
		where := "target's server"
		if st.at.BaseURL != "" {
			where = to.BaseURL
		}
		steps = append(steps, fmt.Sprintf("%s (model %s, %s)", st.name, to.Model, where))
	}
	return strings.Join(steps, " and ")
}
