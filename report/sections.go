package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/plload/plload/metrics"
)

// The report's sections after the stage tables, in Markdown: report.md shows one run, report.html
// one or several (then each row names its run). Outside text (a server's messages) goes into code
// spans or escaped cells, so it is shown, never read as Markdown.

// stageLabel names a row's stage in a bullet: "stage 02", or "run a, stage 02".
func stageLabel(rs runStage, withRun bool) string {
	if withRun {
		return fmt.Sprintf("%s, stage %02d", rs.run, rs.st.Stage)
	}
	return fmt.Sprintf("stage %02d", rs.st.Stage)
}

// stageCells are a row's first cells in the section tables.
func stageCells(rs runStage, withRun bool) []string {
	if withRun {
		return []string{mdCell(rs.run), fmt.Sprintf("%02d", rs.st.Stage)}
	}
	return []string{fmt.Sprintf("%02d", rs.st.Stage)}
}

func stageHeader(withRun bool, rest ...string) []string {
	if withRun {
		return append([]string{"run", "stage"}, rest...)
	}
	return append([]string{"stage"}, rest...)
}

func warningsSection(rows []runStage, withRun bool, extra []string) string {
	var b strings.Builder
	for _, w := range extra {
		b.WriteString("- " + w + "\n")
	}
	for _, rs := range rows {
		for _, w := range rs.st.Summary.Warnings {
			b.WriteString("- " + stageLabel(rs, withRun) + ": " + w + "\n")
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n## Warnings\n\n" + b.String()
}

func errorsSection(rows []runStage, withRun bool) string {
	var b strings.Builder
	for _, rs := range rows {
		ek := rs.st.Summary.ErrorKinds
		if len(ek) == 0 {
			continue
		}
		kinds := make([]string, 0, len(ek))
		for k := range ek {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%s × %d", mdCell(k), ek[k])
		}
		fmt.Fprintf(&b, "- %s: %s\n", stageLabel(rs, withRun), strings.Join(parts, ", "))
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n## Errors by kind\n\n" + b.String()
}

// engineSection shows what the load generator did about failures: requests it sent again on a new
// connection, the spans in which every request failed, and why it stopped a stage early.
func engineSection(rows []runStage, withRun bool) string {
	var notes strings.Builder
	var outages [][]string
	for _, rs := range rows {
		e := rs.st.Engine
		if e.Retried > 0 {
			fmt.Fprintf(&notes, "- %s: %d requests were sent a second time, at once, on a new connection: the kept-alive connection they first went out on failed before any response byte (the server had closed it). Each counts once, from its first try.\n",
				stageLabel(rs, withRun), e.Retried)
		}
		if e.Aborted != "" {
			fmt.Fprintf(&notes, "- %s: stopped early: %s\n", stageLabel(rs, withRun), mdCell(e.Aborted))
		}
		for _, o := range e.Outages {
			outages = append(outages, append(stageCells(rs, withRun), o.From, o.To, mdCell(o.Kind), fmt.Sprint(o.Requests), mdCode(o.FirstMessage)))
		}
	}
	if notes.Len() == 0 && len(outages) == 0 {
		return ""
	}
	out := "\n## Retries and outages\n\n" + notes.String()
	if len(outages) > 0 {
		if notes.Len() > 0 {
			out += "\n"
		}
		out += "Outages: spans in which every request failed the same way (before a response byte, or with 429/5xx).\n\n" +
			markdownTable(stageHeader(withRun, "from", "to", "kind", "requests", "first message"), outages)
	}
	return out
}

// serverSection puts the server's own view next to the client's: queueing, KV-cache use, its TTFT
// and its cache hit rate, from its Prometheus endpoint.
func serverSection(rows []runStage, withRun bool) string {
	var table [][]string
	var scrapes strings.Builder
	sameSpan := false // some row shows the client's cache hit over the counters' span
	for _, rs := range rows {
		s, sv := rs.st, rs.st.Server
		if sv == nil {
			continue
		}
		sameSpan = sameSpan || (sv.Samples > 0 && sv.ClientCacheHit.OK)
		if sv.Scrapes > 0 && sv.ScrapesOK < sv.Scrapes {
			fmt.Fprintf(&scrapes, "- %s: server metrics: %d of %d scrapes ok (the others failed or timed out; the figures come from those that answered).\n",
				stageLabel(rs, withRun), sv.ScrapesOK, sv.Scrapes)
		}
		if sv.Samples == 0 {
			table = append(table, append(stageCells(rs, withRun), mdCell(sv.Note), "", "", "", "", ""))
			continue
		}
		opt := func(o metrics.Opt[float64], f string) string {
			if !o.OK {
				return "N/A"
			}
			return fmt.Sprintf(f, o.V)
		}
		table = append(table, append(stageCells(rs, withRun),
			fmt.Sprintf("%s (%d %s)", metrics.ServerEngineOf(sv.Engine)+orNote(sv), sv.Samples, map[bool]string{true: "scrape", false: "scrapes"}[sv.Samples == 1]),
			opt(sv.RunningMean, "%.1f")+" / "+opt(sv.RunningMax, "%.0f"), opt(sv.WaitingMean, "%.1f")+" / "+opt(sv.WaitingMax, "%.0f"),
			pct(sv.KVUsageMean.V, sv.KVUsageMean.OK)+" / "+pct(sv.KVUsageMax.V, sv.KVUsageMax.OK),
			fmt.Sprintf("%s (client %s)", serverTTFT(sv), lats(s.Summary.TTFT, 50, 95)),
			serverCacheHit(sv, s.Summary)))
	}
	if len(table) == 0 {
		return ""
	}
	out := "\n## Server view\n\n" + markdownTable(stageHeader(withRun, "server", "running mean / max", "waiting mean / max", "KV cache use mean / max", "TTFT p50/p95 ms", "cache hit"), table) +
		"\nFrom the target's Prometheus endpoint, scraped every second; server TTFT comes from its histogram's increase over the window, so it is only as fine as the server's buckets (vLLM's jump from 100 ms to 250 ms).\n"
	if sameSpan {
		out = strings.TrimSuffix(out, "\n") + " The client's cache hit \"same span\" is over the requests whose first token came between the two scrapes the server's counters were read at, the prompts the server counted; its \"window\" is over the requests that started in the stage's window.\n"
	}
	if scrapes.Len() > 0 {
		out += "\n" + scrapes.String()
	}
	return out
}

// serverCacheHit is the server's cache hit beside the client's over the same requests where stage.json
// has it — the requests whose first token came between the two scrapes the server's counters were read
// at, so the two agree where they count alike — then the client's over the window, which the requests
// at the window's edges move by several points on a short stage; the window figure alone without it.
func serverCacheHit(sv *metrics.ServerSummary, sum *metrics.StageSummary) string {
	server, window := pct(sv.CacheHitRate.V, sv.CacheHitRate.OK), pct(sum.CacheHit.V, sum.CacheHit.OK)
	if !sv.ClientCacheHit.OK {
		return fmt.Sprintf("%s (client %s)", server, window)
	}
	return fmt.Sprintf("%s (client %s same span; %s window)", server, pct(sv.ClientCacheHit.V, true), window)
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
func injectorSection(rows []runStage, withRun bool) string {
	var table [][]string
	for _, rs := range rows {
		h := rs.st.Injector
		wait := "N/A"
		if h.RunQueueWaitPercent.OK {
			// Summed over the process's threads, the wait passes 100 % of wall time when several
			// threads wait at once: it reads as the threads waiting at a time, on average.
			wait = fmt.Sprintf("%.2f threads at a time", h.RunQueueWaitPercent.V/100)
		}
		stolen := "N/A"
		if h.StealPercent.OK {
			stolen = fmt.Sprintf("%.1f %%", h.StealPercent.V)
		}
		readLag := "N/A"
		if h.ReadLagP99Ms.OK {
			readLag = fmt.Sprintf("%.2f ms", h.ReadLagP99Ms.V)
		}
		table = append(table, append(stageCells(rs, withRun), fmt.Sprintf("%.0f %% of %d %%", h.CPUPercent, 100*h.Cores), wait, stolen,
			readLag, fmt.Sprintf("%.2f ms", h.SchedLatencyP99Ms), fmt.Sprintf("%.1f ms", h.GCPauseTotalMs), lagText(rs.st.Summary.ThinkLag), lagText(rs.st.Summary.StartLag)))
	}
	if len(table) == 0 {
		return ""
	}
	return "\n## Injector health\n\n" + markdownTable(stageHeader(withRun, "client CPU", "waiting for a CPU", "stolen by a VM host", "read lag p99", "scheduler latency p99", "GC pauses", "think lag p99", "start lag p99"), table) +
		fmt.Sprintf("\nA warning is raised when the client's CPU passes %.0f%% of its cores, more than %.2f of its threads at a time, on average, wait for a CPU (other processes taking the cores; Linux only), or its read lag p99 passes %.0f ms (how long after bytes arrived its poller read them; where no poller read the answers — https:// targets — the Go scheduler's latency p99 stands in): then its own timestamps may be late. Stolen is the share of the machine's CPU time a VM host gave to other guests (top's st; Linux only): the machine stops for those slices of a few milliseconds, which can make a p99 late by that much: the self-test counts over 1 %% as strain, while a stage shows the figure and raises no warning of it. With the bundled mock in-process, the CPU figure includes the mock's.\n",
			100*metrics.InjectorCPUWarnShare, float64(metrics.InjectorRunQueueWarnPercent)/100, metrics.InjectorSchedWarnMs)
}

func lagText(d metrics.Dist) string {
	if !d.Known() {
		return "N/A"
	}
	return fmt.Sprintf("%.2f ms", d.P99)
}

// columnNotes explains the stage tables' columns.
const columnNotes = "\nColumns: load is the concurrency (c=), the session arrival rate and its cap, the request rate (or ramp), its arrival process and max_in_flight, or the replay's time scale and cap; " +
	"active sess is the time-weighted mean (min–max) of open sessions (a session thinking between turns holds no request); in flight is the time-weighted mean (max) of requests open at once, the number other tools' --max-concurrency caps; " +
	"req/s and tok/s count successful requests that ended in the measurement window (input tokens per request are input_sequence_length; total = input + output; out chars/s is N/A unless every request counted its characters); " +
	"goodput counts those that also met every latency limit of the SLO, per request, and its share of the requests that started in the window; " +
	"requests (ok) counts the requests that started in the window and, of them, the successes whose latencies the table shows; latencies are in ms, as mean/median/p90/p95/p99 whatever the SLO (the statistic it limits in bold; ‡: fewer than 20 requests behind the percentiles); TPOT is per request, ITL the pooled gaps between streamed tokens; RTT is the network round trip (GET /v1/models on a warm connection, measured before the stage): the part of TTFT no server can remove; " +
	"err% counts the drain's cancellations as errors (†, on err% and the latency cells: some requests were cancelled, so latency percentiles are lower bounds); " +
	"cache hit% is cached ÷ prompt tokens over successful requests that reported usage, by turn t1, t2, … as well; SLO N/A (not set) means no limit was given, cost N/A (no price) that no GPU price was.\n"

// sections is everything after the stage tables and before the method: warnings, errors, retries
// and outages, the server's view, the GPUs' telemetry and the injector's health.
func sections(rows []runStage, withRun bool, extraWarnings []string) string {
	return warningsSection(rows, withRun, extraWarnings) + errorsSection(rows, withRun) + engineSection(rows, withRun) +
		connectionsSection(rows, withRun) + serverSection(rows, withRun) + gpuSection(rows, withRun) + injectorSection(rows, withRun) +
		turnsSection(rows, withRun)
}
