package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// Handoff writes the work order of docs/records.md from the last run: each problem with its evidence, likely
// causes, what to change, a done condition, and the commands to re-measure. A limit the scenario did
// not set is no problem: with no SLO nothing is a violation, and the work order says so.
func Handoff(runs []Run, scenarioFile string) string {
	last := runs[len(runs)-1]
	abs, _ := filepath.Abs(last.Dir)
	var b strings.Builder
	fmt.Fprintf(&b, "# Work order: %s\n\nFrom the plload results in `%s`.\n\n%s\n\n", last.Name, abs, resultfiles.HeadlineLine(last.Stages))
	w := &workOrder{b: &b}
	sloSet := false
	for _, st := range last.Stages {
		sloSet = sloSet || st.SLO.Set()
		w.stage(st)
	}
	if w.problems == 0 {
		if sloSet {
			b.WriteString("No problems: every stage is complete and passes its SLO, and usage is reported.\n\n")
		} else {
			b.WriteString("No problems: every stage is complete and usage is reported. No SLO was set, so no stage was judged: add an slo section (slo: {ttft: {p95: 500ms}, tpot: {p99: 50ms}}) for verdicts.\n\n")
		}
	}
	b.WriteString("## Re-measure\n\n```sh\n")
	if scenarioFile != "" {
		fmt.Fprintf(&b, "plload run %s\n", scenarioFile)
	} else {
		fmt.Fprintf(&b, "plload run %s   # header values there are masked as ***: restore them first\n", filepath.Join(abs, "scenario.resolved.yaml"))
	}
	dirs := make([]string, 0, len(runs))
	for _, r := range runs {
		a, _ := filepath.Abs(r.Dir)
		dirs = append(dirs, a)
	}
	fmt.Fprintf(&b, "plload report %s <the new results directory>\n```\n", strings.Join(dirs, " "))
	return b.String()
}

// workOrder numbers the problems as it writes them.
type workOrder struct {
	b        *strings.Builder
	problems int
}

func (w *workOrder) item(title, evidence, causes, change, done string) {
	w.problems++
	fmt.Fprintf(w.b, "## %d. %s\n\n- Evidence: %s\n- Likely causes: %s\n- What to change: %s\n- Done when: %s\n\n", w.problems, title, evidence, causes, change, done)
}

// stage writes one stage's problems: partial, replay pace, SLO checks that failed (only limits that
// were set are checked), usage, and the measurement warnings.
func (w *workOrder) stage(st *resultfiles.StageReport) {
	s := st.Summary
	name := fmt.Sprintf("stage %02d (load %s)", st.Stage, st.LoadText())
	if st.Partial {
		w.item(name+" is partial", "the run was interrupted during this stage; its window ends at the interrupt",
			"a user interrupt or a stopped machine", "re-run the scenario to the end",
			fmt.Sprintf("stage %02d completes (stage.json partial: false)", st.Stage))
	}
	if why := resultfiles.ReplayWarning(s); why != "" {
		w.item(name+": the replay is not valid", why+fmt.Sprintf(" (send lag p50/p99/max %s ms, in flight max %d)", sendLag(s.SendLag), s.InFlight.Max),
			"the client machine is short of CPU, or max_in_flight held requests back while earlier ones were still streaming",
			"run plload on a machine with spare CPU (check with plload selftest), raise load.max_in_flight, or replay slower (load.time_scale > 1)",
			fmt.Sprintf("stage %02d has replay_valid: true", st.Stage))
	}
	for _, c := range s.SLO.Checks {
		if c.Pass != nil && !*c.Pass {
			w.sloCheck(name, st, c)
		}
	}
	w.usage(name, s)
	for _, warn := range s.Warnings {
		if strings.Contains(warn, "client may be the bottleneck") || strings.Contains(warn, "dataset reuse") {
			w.item(name+": a measurement warning", warn, "the load generator or the scenario, not the server",
				"run plload on a machine with spare CPU (check with plload selftest), or raise the session pool", "the warning is gone")
		}
	}
}

func (w *workOrder) usage(name string, s *metrics.StageSummary) {
	if s.Requests.Succeeded > 0 && !s.CacheHit.OK {
		w.item(name+": the server reports no prompt usage",
			fmt.Sprintf("%d of %d successful requests carried no usage; cache hit %% is N/A", s.MissingUsage, s.Requests.Succeeded),
			"the server does not send usage in streams, or not prompt_tokens_details",
			"enable usage in streaming (vLLM: --enable-prompt-tokens-details; stream_options.include_usage is sent by plload)",
			"stage.json shows cache_hit as a number and cached_reported equal to the successful requests")
	} else if s.CacheHit.OK && s.CachedReported < s.Requests.Succeeded {
		w.item(name+": some answers lack cached-token counts",
			fmt.Sprintf("cached tokens reported by %d of %d successful requests", s.CachedReported, s.Requests.Succeeded),
			"the server omits prompt_tokens_details on some answers", "enable prompt token details on the server",
			"cached_reported equals the successful requests")
	}
}

// Likely causes and changes by latency metric, for SLO checks beyond the turn-1 ones.
var (
	prefillCauses = "requests queue for a batch slot at this load; long prompts take long to prefill; a low prefix-cache hit rate makes every turn re-prefill its history"
	prefillChange = "lower the load per replica (or add replicas); enable prefix caching and chunked prefill; check max_num_seqs / max_num_batched_tokens on the server"
	decodeCauses  = "decode batches are too large for the GPU at this load; prefill of new requests interrupts decoding"
	decodeChange  = "cap concurrent sequences; enable chunked prefill so long prompts do not stall decoding; consider a faster GPU or tensor parallelism"
	sloAdvice     = map[string][2]string{
		metrics.SLOMetricTTFT: {prefillCauses, prefillChange},
		metrics.SLOMetricTTFO: {prefillCauses + "; reasoning models think before their first output token", prefillChange},
		metrics.SLOMetricTPOT: {decodeCauses, decodeChange},
		metrics.SLOMetricITL:  {decodeCauses, decodeChange},
		metrics.SLOMetricE2E:  {"the answer's length and the decode rate, plus any queueing before the first token", prefillChange + "; " + decodeChange},
	}
)

// sloCheck writes a failed SLO check: the turn-1 names with their own evidence, any other latency
// limit (<metric>_<stat>_ms) from its distribution, the error rate with its kinds.
func (w *workOrder) sloCheck(name string, st *resultfiles.StageReport, c metrics.SLOCheck) {
	s := st.Summary
	switch c.Name {
	case "ttft_p95_ms":
		w.item(name+": TTFT p95 over the SLO",
			fmt.Sprintf("TTFT p50/p95/p99 %s ms against a limit of %s ms; active sessions %.1f; cache hit %s",
				lats(s.TTFT, 50, 95, 99), lat(c.Limit), s.Active.Mean, pct(s.CacheHit.V, s.CacheHit.OK)),
			prefillCauses, prefillChange,
			fmt.Sprintf("TTFT p95 ≤ %s ms at stage %02d with the same dataset (sha256 %.12s…)", lat(c.Limit), st.Stage, st.DatasetSHA256))
		return
	case "itl_p95_ms":
		w.item(name+": ITL p95 over the SLO",
			fmt.Sprintf("pooled ITL p50/p95 %s ms against a limit of %s ms; out tok/s %.1f", lats(s.ITL, 50, 95), lat(c.Limit), s.Throughput.OutTokPerSec),
			decodeCauses, decodeChange, fmt.Sprintf("ITL p95 ≤ %s ms at stage %02d", lat(c.Limit), st.Stage))
		return
	case "error_rate":
		w.item(name+": error rate over the SLO",
			fmt.Sprintf("error rate %.2f%% against %.2f%%; errors by kind: %s", 100*s.ErrorRate.V, 100*c.Limit, kinds(s.ErrorKinds)),
			"HTTP 429/503 mean the server or a gateway sheds load; timeouts mean answers take longer than target.timeout; resets and cut streams mean a process or proxy dies or restarts",
			"read the errors in stage_NN/profile_export.jsonl; raise server capacity or lower the load; raise target.timeout only if long answers are expected",
			fmt.Sprintf("error rate ≤ %.2f%% at stage %02d", 100*c.Limit, st.Stage))
		return
	}
	metric, stat, ok := latencyCheck(c.Name)
	if !ok {
		w.item(name+": "+c.Name+" over the SLO", fmt.Sprintf("%s = %s against a limit of %s", c.Name, fmtG(derefOr(c.Value)), fmtG(c.Limit)),
			"see the stage's latency table", "see the stage's latency table", fmt.Sprintf("%s ≤ %s at stage %02d", c.Name, fmtG(c.Limit), st.Stage))
		return
	}
	label := strings.ToUpper(metric) + " " + stat
	advice := sloAdvice[metric]
	w.item(name+": "+label+" over the SLO",
		fmt.Sprintf("%s %s ms against a limit of %s ms; %s mean/median/p99 %s ms; in flight mean %.1f (max %d)", label, lat(derefOr(c.Value)), lat(c.Limit),
			strings.ToUpper(metric), latencyTriple(s, metric), s.InFlight.Mean, s.InFlight.Max),
		advice[0], advice[1], fmt.Sprintf("%s ≤ %s ms at stage %02d with the same dataset (sha256 %.12s…)", label, lat(c.Limit), st.Stage, st.DatasetSHA256))
}

// latencyCheck splits a check name <metric>_<stat>_ms into its metric and statistic.
func latencyCheck(name string) (metric, stat string, ok bool) {
	rest, ok := strings.CutSuffix(name, "_ms")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(rest, "_")
	if i < 0 || !slices.Contains(metrics.SLOMetrics, rest[:i]) || !slices.Contains(metrics.SLOStats, rest[i+1:]) {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// latencyTriple is a metric's mean/median/p99 in ms.
func latencyTriple(s *metrics.StageSummary, metric string) string {
	d := map[string]metrics.Dist{metrics.SLOMetricTTFT: s.TTFT, metrics.SLOMetricTTFO: s.TTFO, metrics.SLOMetricTPOT: s.TPOT,
		metrics.SLOMetricITL: s.ITL, metrics.SLOMetricE2E: s.E2E}[metric]
	if !d.Known() {
		return "N/A"
	}
	return lat(d.Mean) + "/" + lat(d.P50) + "/" + lat(d.P99)
}

// fmtG prints a number in at most six significant digits.
func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func derefOr(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

func pct(v float64, ok bool) string {
	if !ok {
		return "N/A"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

func kinds(m map[string]int) string {
	if len(m) == 0 {
		return "none recorded"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s × %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
