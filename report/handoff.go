package report

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Handoff writes the work order of SPEC §9 from the last run: each problem with its evidence, likely
// causes, what to change, a done condition, and the commands to re-measure.
func Handoff(runs []Run, scenarioFile string) string {
	last := runs[len(runs)-1]
	abs, _ := filepath.Abs(last.Dir)
	var b strings.Builder
	fmt.Fprintf(&b, "# Work order: %s\n\nFrom the plload results in `%s`.\n\n%s\n\n", last.Name, abs, HeadlineLine(last.Stages))
	problems := 0
	item := func(title, evidence, causes, change, done string) {
		problems++
		fmt.Fprintf(&b, "## %d. %s\n\n- Evidence: %s\n- Likely causes: %s\n- What to change: %s\n- Done when: %s\n\n", problems, title, evidence, causes, change, done)
	}
	for _, st := range last.Stages {
		s := st.Summary
		name := fmt.Sprintf("stage %02d (load %s)", st.Stage, loadOf(st))
		if st.Partial {
			item(name+" is partial", "the run was interrupted during this stage; its window ends at the interrupt",
				"a user interrupt or a stopped machine", "re-run the scenario to the end",
				fmt.Sprintf("stage %02d completes (stage.json partial: false)", st.Stage))
		}
		for _, c := range s.SLO.Checks {
			if c.Pass == nil || *c.Pass {
				continue
			}
			switch c.Name {
			case "ttft_p95_ms":
				item(name+": TTFT p95 over the SLO",
					fmt.Sprintf("TTFT p50/p95/p99 %s ms against a limit of %s ms; active sessions %.1f; cache hit %s",
						lats(s.TTFT, 50, 95, 99), lat(c.Limit), s.Active.Mean, pct(s.CacheHit.V, s.CacheHit.OK)),
					"requests queue for a batch slot at this load; long prompts take long to prefill; a low prefix-cache hit rate makes every turn re-prefill its history",
					"lower the load per replica (or add replicas); enable prefix caching and chunked prefill; check max_num_seqs / max_num_batched_tokens on the server",
					fmt.Sprintf("TTFT p95 ≤ %s ms at stage %02d with the same dataset (sha256 %.12s…)", lat(c.Limit), st.Stage, st.DatasetSHA256))
			case "itl_p95_ms":
				item(name+": ITL p95 over the SLO",
					fmt.Sprintf("pooled ITL p50/p95 %s ms against a limit of %s ms; out tok/s %.1f", lats(s.ITL, 50, 95), lat(c.Limit), s.Throughput.OutTokPerSec),
					"decode batches are too large for the GPU at this load; prefill of new requests interrupts decoding",
					"cap concurrent sequences; enable chunked prefill so long prompts do not stall decoding; consider a faster GPU or tensor parallelism",
					fmt.Sprintf("ITL p95 ≤ %s ms at stage %02d", lat(c.Limit), st.Stage))
			case "error_rate":
				item(name+": error rate over the SLO",
					fmt.Sprintf("error rate %.2f%% against %.2f%%; errors by kind: %s", 100*s.ErrorRate.V, 100*c.Limit, kinds(s.ErrorKinds)),
					"HTTP 429/503 mean the server or a gateway sheds load; timeouts mean answers take longer than target.timeout; resets and cut streams mean a process or proxy dies or restarts",
					"read the errors in stage_NN/profile_export.jsonl; raise server capacity or lower the load; raise target.timeout only if long answers are expected",
					fmt.Sprintf("error rate ≤ %.2f%% at stage %02d", 100*c.Limit, st.Stage))
			}
		}
		if s.Requests.Succeeded > 0 && !s.CacheHit.OK {
			item(name+": the server reports no prompt usage",
				fmt.Sprintf("%d of %d successful requests carried no usage; cache hit %% is N/A", s.MissingUsage, s.Requests.Succeeded),
				"the server does not send usage in streams, or not prompt_tokens_details",
				"enable usage in streaming (vLLM: --enable-prompt-tokens-details; stream_options.include_usage is sent by plload)",
				"stage.json shows cache_hit as a number and cached_reported equal to the successful requests")
		} else if s.CacheHit.OK && s.CachedReported < s.Requests.Succeeded {
			item(name+": some answers lack cached-token counts",
				fmt.Sprintf("cached tokens reported by %d of %d successful requests", s.CachedReported, s.Requests.Succeeded),
				"the server omits prompt_tokens_details on some answers", "enable prompt token details on the server",
				"cached_reported equals the successful requests")
		}
		for _, w := range s.Warnings {
			if strings.Contains(w, "client may be the bottleneck") || strings.Contains(w, "dataset reuse") {
				item(name+": a measurement warning", w, "the load generator or the scenario, not the server",
					"run plload on a machine with spare CPU (check with plload selftest), or raise the session pool", "the warning is gone")
			}
		}
	}
	if problems == 0 {
		b.WriteString("No problems: every stage is complete and passes its SLO, and usage is reported.\n\n")
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
