package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// The stage tables of the terminal, report.md and `plload report`: the metric table people already
// read from `vllm bench serve` and AIPerf (throughput in requests, input, output and total tokens per
// second; TTFT, TPOT, ITL and E2E as mean / median / p99), split into tables narrow enough for a
// laptop screen (≤ 10 columns with the run's), each row starting with its stage and load so it reads on its own.

// columns decides the optional columns from the stages shown together.
type columns struct {
	ttfo, startLag, run, server, openLoop, replay bool
	// sendSplit: a stage's records say how its send lag split (slot wait against the client's work).
	sendSplit bool
	// traceReuse: a stage replayed a trace with block ids, whose own reuse goes beside the cache hit.
	traceReuse bool
	// agents: a stage has tool calls or structured output (docs/scenario.md); batch: a stage is a batch job.
	agents, batch bool
	// retrieval: a stage sent embeddings or rerank requests; rag: a stage's turns had RAG steps.
	retrieval, rag bool
	// images: a stage's requests carried images.
	images bool
	// energy: a stage's GPU telemetry priced its energy per 1M output tokens (energyPriced).
	energy bool
	// limited marks, by SLO metric, the statistics an SLO of these stages limits (ttft p95): their
	// values are bold in the cells, whose statistics never change (tableStats).
	limited map[string]map[string]bool
	// withMax: an SLO limits a maximum, so every latency cell also shows max (tableStats has none).
	withMax bool
}

// tableStats are the statistics every latency cell shows, whatever the SLO: mean, median, p90, p95
// and p99, the columns vLLM's and AIPerf's users read.
var tableStats = []string{metrics.SLOStatMean, metrics.SLOStatP50, metrics.SLOStatP90, metrics.SLOStatP95, metrics.SLOStatP99}

// fewRequests is the count of requests below which a cell's percentiles are marked (fewMark): of 19
// values, p95 and p99 are the largest one or two, not a tail.
const (
	fewRequests = 20
	fewMark     = "‡"
)

// censoredMark marks a censored stage's err% and latency cells: some of its requests were cancelled
// (the drain at the stage's end, or an interrupt) before they finished, so their latencies are
// missing and the percentiles are lower bounds — the slowest requests are the ones left out.
const censoredMark = "†"

// censored marks a latency cell of a censored stage (censoredMark); N/A stays as it is.
func censored(s *metrics.StageSummary, cell string) string {
	if !s.Censored || cell == "N/A" {
		return cell
	}
	return cell + " " + censoredMark
}

func columnsFor(rows []runStage, withRun bool) columns {
	c := columns{run: withRun, limited: map[string]map[string]bool{}, energy: energyPriced(rows)}
	limited := c.limited
	for _, rs := range rows {
		r := rs.st
		c.ttfo = c.ttfo || r.Summary.ReasoningSeen
		mode := workload.ModeOf(r.Mode)
		c.startLag = c.startLag || mode.SessionSlots
		c.server = c.server || (r.Server != nil && r.Server.Samples > 0)
		// A concurrency stage's intended sends are its think times' ends: their lag is the think
		// lag of the injector table, not a schedule the load kept.
		c.openLoop = c.openLoop || mode.Scheduled
		c.replay = c.replay || mode.TraceClock || r.Summary.ReplayValid.OK
		c.sendSplit = c.sendSplit || r.Summary.SendLagSlot != nil
		c.traceReuse = c.traceReuse || r.TraceBlockReuse != nil
		c.agents = c.agents || r.Summary.Tools != nil || r.Summary.Structured != nil
		c.batch = c.batch || r.Batch != nil
		c.rag = c.rag || r.Summary.RAG != nil
		c.images = c.images || r.Summary.Images != nil
		c.retrieval = c.retrieval || workload.IsRetrieval(r.Target.Endpoint)
		for _, l := range r.SLO.Limits() {
			if limited[l.Metric] == nil {
				limited[l.Metric] = map[string]bool{}
			}
			limited[l.Metric][l.Stat] = true
			c.withMax = c.withMax || l.Stat == metrics.SLOStatMax
		}
	}
	return c
}

// table is one Markdown table with its title.
type table struct {
	title  string
	header []string
	rows   [][]string
}

// add appends a row: the lead cells, then the rest.
func (t *table) add(lead []string, cells ...string) {
	t.rows = append(t.rows, append(slices.Clone(lead), cells...))
}

// lead is the cells every table starts with, so each row reads on its own: the run (when several),
// the stage and its load.
func (c columns) lead(rs runStage) []string {
	stage := fmt.Sprintf("%02d", rs.st.Stage)
	if rs.st.Partial {
		stage += " (partial)"
	}
	if c.run {
		return []string{mdCell(rs.run), stage, mdCell(rs.st.LoadText())}
	}
	return []string{stage, mdCell(rs.st.LoadText())}
}

func (c columns) leadHeader(rest ...string) []string {
	if c.run {
		return append([]string{"run", "stage", "load"}, rest...)
	}
	return append([]string{"stage", "load"}, rest...)
}

// stats are the statistics of every latency cell: tableStats, and max after them when an SLO limits
// a maximum (so the limited value is in the table, in bold).
func (c columns) stats() []string {
	if c.withMax {
		return append(slices.Clone(tableStats), metrics.SLOStatMax)
	}
	return tableStats
}

// statHeader is a latency column's title: "TTFT mean/median/p90/p95/p99" (median is p50).
func (c columns) statHeader(label, metric string) string {
	names := make([]string, len(c.stats()))
	for i, st := range c.stats() {
		names[i] = map[string]string{metrics.SLOStatP50: "median"}[st]
		if names[i] == "" {
			names[i] = st
		}
	}
	return label + " " + strings.Join(names, "/")
}

// statCell is a latency cell with the statistics of statHeader, the SLO's in bold, marked when
// its percentiles rest on fewer than fewRequests requests (the distribution's own count).
func (c columns) statCell(metric string, d metrics.Dist) string {
	return c.statCellOf(metric, d, d.N)
}

// statCellOf is statCell where the requests behind the values are not the distribution's count
// (ITL pools the token gaps of requests).
func (c columns) statCellOf(metric string, d metrics.Dist, requests int) string {
	if !d.Known() {
		return "N/A"
	}
	parts := make([]string, len(c.stats()))
	for i, st := range c.stats() {
		parts[i] = lat(statOf(d, st))
		if c.limited[metric][st] {
			parts[i] = "**" + parts[i] + "**"
		}
	}
	cell := strings.Join(parts, "/")
	if requests < fewRequests {
		cell += " " + fewMark
	}
	return cell
}

// requestsCell is the requests a stage's latencies rest on: those that started in the window, and
// of them the successes ("76 (74)").
func requestsCell(s *metrics.StageSummary) string {
	return fmt.Sprintf("%d (%d)", s.Requests.InWindow, s.Requests.Succeeded)
}

// statOf is one statistic of a distribution.
func statOf(d metrics.Dist, stat string) float64 {
	return map[string]float64{metrics.SLOStatMean: d.Mean, metrics.SLOStatP50: d.P50, metrics.SLOStatP90: d.P90,
		metrics.SLOStatP95: d.P95, metrics.SLOStatP99: d.P99, metrics.SLOStatMax: d.Max}[stat]
}

// tables splits the stage columns into tables that each fit a laptop screen (≤ 10 columns; one table
// of all of them was 18 columns wide and scrolled the cost away): throughput, errors and cache,
// latency, TTFT by turn and the network, the open-loop schedule (when a stage has one), cost.
func (c columns) tables(rows []runStage) []table {
	var ts []table
	if c.batch {
		ts = append(ts, c.batchTable(rows))
	}
	ts = append(ts, c.throughputTable(rows), c.errorsTable(rows), c.latencyTable(rows), c.turnsTable(rows))
	if c.agents {
		ts = append(ts, c.agentsTable(rows))
	}
	if c.retrieval {
		ts = append(ts, c.retrievalTable(rows))
	}
	if c.rag {
		ts = append(ts, c.ragTable(rows))
	}
	if c.images {
		ts = append(ts, c.imagesTables(rows)...)
	}
	if c.openLoop {
		ts = append(ts, c.openLoopTable(rows))
	}
	return append(ts, c.costTable(rows))
}

func (c columns) throughputTable(rows []runStage) table {
	t := table{title: "Throughput (per second)", header: c.leadHeader("active sess", "in flight mean (max)", "req/s", "input tok/s",
		"out tok/s", "total tok/s", "out chars/s")}
	for _, rs := range rows {
		s := rs.st.Summary
		tp := s.Throughput
		chars := "N/A"
		if tp.OutCharsPerSec.OK {
			chars = resultfiles.Num(tp.OutCharsPerSec.V, 1)
		}
		t.add(c.lead(rs), fmt.Sprintf("%.1f (%d–%d)", s.Active.Mean, s.Active.Min, s.Active.Max),
			fmt.Sprintf("%.1f (%d)", s.InFlight.Mean, s.InFlight.Max), resultfiles.Num(tp.ReqPerSec, 2), resultfiles.Num(tp.InTokPerSec, 1),
			resultfiles.Num(tp.OutTokPerSec, 1), resultfiles.Num(tp.TotalTokPerSec, 1), chars)
	}
	return t
}

// goodputText is goodput as req/s and share of requests, saying when N/A means no latency limit.
func goodputText(r *resultfiles.StageReport) string {
	g := r.Summary.Goodput
	switch {
	case g.ReqPerSec.OK && g.Share.OK:
		return fmt.Sprintf("%s (%s)", resultfiles.Num(g.ReqPerSec.V, 2), pct(g.Share.V, true))
	case g.ReqPerSec.OK:
		return resultfiles.Num(g.ReqPerSec.V, 2)
	case len(r.SLO.Limits()) == 0:
		return "N/A (no latency SLO)"
	}
	return "N/A"
}

func (c columns) errorsTable(rows []runStage) table {
	t := table{title: "Goodput, errors and cache", header: c.leadHeader("goodput req/s (% of req)", "err%", "429", "cache hit%", "cache hit% by turn")}
	if c.traceReuse {
		t.header = append(t.header, "trace's block reuse%")
	}
	for _, rs := range rows {
		s := rs.st.Summary
		errPct := "N/A"
		if s.ErrorRate.OK {
			errPct = fmt.Sprintf("%.1f%%", 100*s.ErrorRate.V)
			if s.Censored {
				errPct += " " + censoredMark
			}
		}
		cache := "N/A (no usage)"
		if s.CacheHit.OK {
			cache = fmt.Sprintf("%s (cached reported %d/%d)", pct(s.CacheHit.V, true), s.CachedReported, s.Requests.Succeeded)
		} else if s.Requests.Succeeded == 0 {
			cache = "N/A"
		}
		cells := []string{goodputText(rs.st), errPct, fmt.Sprint(s.Requests.RateLimited), cache, cacheByTurn(s.CacheHitByTurn)}
		if c.traceReuse {
			reuse := "N/A"
			if r := rs.st.TraceBlockReuse; r != nil {
				reuse = pct(*r, true)
			}
			cells = append(cells, reuse)
		}
		t.add(c.lead(rs), cells...)
	}
	return t
}

// maxTurnCells is how many turns the cache-by-turn cell shows: the first ones and the last.
const maxTurnCells = 6

// cacheByTurn is the cache hit of each turn, numbered from 1 as people count turns ("t1 0.0% · t2
// 64.0%"); a long session shows its first turns, then "…" and its last.
func cacheByTurn(turns []metrics.TurnCacheHit) string {
	if len(turns) == 0 {
		return "N/A"
	}
	cell := func(t metrics.TurnCacheHit) string {
		return fmt.Sprintf("t%d %s", t.Turn+1, pct(t.CacheHit.V, t.CacheHit.OK))
	}
	var parts []string
	for i, t := range turns {
		if len(turns) > maxTurnCells && i == maxTurnCells-1 {
			parts = append(parts, "…", cell(turns[len(turns)-1]))
			break
		}
		parts = append(parts, cell(t))
	}
	return strings.Join(parts, " · ")
}

func (c columns) latencyTable(rows []runStage) table {
	t := table{title: "Latency (ms)", header: c.leadHeader("requests (ok)", c.statHeader("TTFT", metrics.SLOMetricTTFT))}
	if c.ttfo {
		t.header = append(t.header, c.statHeader("TTFO", metrics.SLOMetricTTFO))
	}
	t.header = append(t.header, c.statHeader("TPOT", metrics.SLOMetricTPOT), c.statHeader("ITL", metrics.SLOMetricITL),
		c.statHeader("E2E", metrics.SLOMetricE2E), "SLO")
	for _, rs := range rows {
		s := rs.st.Summary
		cells := []string{requestsCell(s), censored(s, c.statCell(metrics.SLOMetricTTFT, s.TTFT))}
		if c.ttfo {
			cells = append(cells, censored(s, c.statCell(metrics.SLOMetricTTFO, s.TTFO)))
		}
		// ITL pools gaps: its percentiles rest on the requests that streamed two tokens or more, TPOT's.
		cells = append(cells, censored(s, c.statCell(metrics.SLOMetricTPOT, s.TPOT)), censored(s, c.statCellOf(metrics.SLOMetricITL, s.ITL, s.TPOT.N)),
			censored(s, c.statCell(metrics.SLOMetricE2E, s.E2E)), sloText(rs.st))
		t.add(c.lead(rs), cells...)
	}
	return t
}

func (c columns) turnsTable(rows []runStage) table {
	t := table{title: "TTFT by turn and the network (ms)", header: c.leadHeader(c.statHeader("TTFT first turn", metrics.SLOMetricTTFT),
		c.statHeader("TTFT later turns", metrics.SLOMetricTTFT))}
	if c.server {
		t.header = append(t.header, "server TTFT p50/p95")
	}
	t.header = append(t.header, "RTT p50/p95")
	for _, rs := range rows {
		s := rs.st.Summary
		cells := []string{censored(s, c.statCell(metrics.SLOMetricTTFT, s.TTFTByTurn.First)), censored(s, c.statCell(metrics.SLOMetricTTFT, s.TTFTByTurn.Later))}
		if c.server {
			cells = append(cells, serverTTFT(rs.st.Server))
		}
		t.add(c.lead(rs), append(cells, rtt(rs.st.NetworkRTT))...)
	}
	return t
}

// openLoopTable puts latency from the send next to latency from the intended send (coordinated
// omission: a client that fell behind its schedule hides the wait in "from send"), with how late
// the client sent.
func (c columns) openLoopTable(rows []runStage) table {
	t := table{title: "Open loop: from send vs from the intended send (ms)", header: c.leadHeader(
		c.statHeader("TTFT", metrics.SLOMetricTTFT), c.statHeader("TTFT from intended", metrics.SLOMetricTTFT),
		c.statHeader("E2E", metrics.SLOMetricE2E), c.statHeader("E2E from intended", metrics.SLOMetricE2E), "send lag p50/p99/max")}
	if c.sendSplit {
		t.header = append(t.header, "send lag p99: slot wait / client")
	}
	if c.startLag {
		t.header = append(t.header, "start lag p50/p95/p99")
	}
	if c.replay {
		t.header = append(t.header, "replay")
	}
	for _, rs := range rows {
		s := rs.st.Summary
		cells := []string{censored(s, c.statCell(metrics.SLOMetricTTFT, s.TTFT)), censored(s, c.statCell(metrics.SLOMetricTTFT, s.TTFTFromIntended)),
			censored(s, c.statCell(metrics.SLOMetricE2E, s.E2E)), censored(s, c.statCell(metrics.SLOMetricE2E, s.E2EFromIntended)), sendLag(s.SendLag)}
		if c.sendSplit {
			cells = append(cells, sendSplit(s))
		}
		if c.startLag {
			cells = append(cells, lats(s.StartLag, 50, 95, 99))
		}
		if c.replay {
			cells = append(cells, replayText(s))
		}
		t.add(c.lead(rs), cells...)
	}
	return t
}

// sendLag is the send lag's p50/p99/max with two decimals: a client keeping pace lags by fractions of
// a millisecond.
func sendLag(d metrics.Dist) string {
	if !d.Known() {
		return "N/A"
	}
	return fmt.Sprintf("%.2f/%.2f/%.2f", d.P50, d.P99, d.Max)
}

// sendSplit is the send lag's p99 split: waiting for an in-flight slot (raise load.max_in_flight, or
// the server answers slowly) against the client's own work (a quieter or bigger machine).
func sendSplit(s *metrics.StageSummary) string {
	if s.SendLagSlot == nil || s.SendLagClient == nil {
		return "N/A"
	}
	return fmt.Sprintf("%.2f / %.2f", s.SendLagSlot.P99, s.SendLagClient.P99)
}

// replayText is a replay stage's verdict on its pace ("" for a stage that is not a replay).
func replayText(s *metrics.StageSummary) string {
	switch {
	case !s.ReplayValid.OK:
		return ""
	case s.ReplayValid.V:
		return "valid"
	}
	return "INVALID (see warning)"
}

// costTable is each stage's hourly cost, and beside its $/1M out the energy's when a stage's GPU
// telemetry priced it (gpuSection has the rest).
func (c columns) costTable(rows []runStage) table {
	t := table{title: "Cost", header: c.leadHeader("SLO", "out tok/s", "$/1M out")}
	if c.energy {
		t.header = append(t.header, "energy $/1M out")
	}
	t.header = append(t.header, "$/1K turns", "$/session")
	for _, rs := range rows {
		s := rs.st.Summary
		cells := []string{sloText(rs.st), resultfiles.Num(s.Throughput.OutTokPerSec, 1), costText(rs.st, s.Cost.USDPer1MOut, 3)}
		if c.energy {
			cells = append(cells, energyCostText(rs.st))
		}
		t.add(c.lead(rs), append(cells, costText(rs.st, s.Cost.USDPer1KTurns, 4), costText(rs.st, s.Cost.USDPerSession, 6))...)
	}
	return t
}

// batchTable is each batch stage's job (docs/scenario.md): its requests, the time from the first issue to the
// last response, the rates over that time, and what the job cost; a stage that is not a batch shows
// N/A.
func (c columns) batchTable(rows []runStage) table {
	t := table{title: "Batch job", header: c.leadHeader("requests (ok)", "completion s", "req/s", "out tok/s", "$/job", "SLO")}
	for _, rs := range rows {
		b := rs.st.Batch
		if b == nil {
			t.add(c.lead(rs), "N/A (not a batch)", "", "", "", "", sloText(rs.st))
			continue
		}
		t.add(c.lead(rs), fmt.Sprintf("%d (%d)", b.Requests, b.Succeeded), resultfiles.Num(b.CompletionS, 2), resultfiles.Num(b.ReqPerSec, 2),
			resultfiles.Num(b.OutTokPerSec, 1), costText(rs.st, b.CostPerJobUSD, 4), sloText(rs.st))
	}
	return t
}

// agentsTable shows agent sessions' tool calls and structured output (docs/scenario.md): tool calls and
// rounds per user turn, the share of calls whose arguments were not valid JSON, the time to the first
// tool-call token, TTFT of user turns against tool rounds, and the share of answers that met
// response_format.
func (c columns) agentsTable(rows []runStage) table {
	t := table{title: "Agents and structured output", header: c.leadHeader("tool calls/turn", "rounds/turn", "invalid args",
		"TTF tool call p50 ms", c.statHeader("TTFT user turn", metrics.SLOMetricTTFT), c.statHeader("TTFT tool round", metrics.SLOMetricTTFT),
		"structured valid")}
	opt := func(o metrics.Opt[float64], digits int) string {
		if !o.OK {
			return "N/A"
		}
		return resultfiles.Num(o.V, digits)
	}
	for _, rs := range rows {
		s := rs.st.Summary
		calls, rounds, invalid, ttfTool, user, round := "N/A", "N/A", "N/A", "N/A", "N/A", "N/A"
		if tl := s.Tools; tl != nil {
			calls, rounds = opt(tl.CallsPerTurn, 2), opt(tl.RoundsPerTurn, 2)
			invalid = pct(tl.InvalidArgumentsShare.V, tl.InvalidArgumentsShare.OK)
			if tl.TTFToolCall.Known() {
				ttfTool = lat(tl.TTFToolCall.P50)
			}
		}
		if sp := s.TTFTByRound; sp != nil {
			user, round = censored(s, c.statCell(metrics.SLOMetricTTFT, sp.UserTurn)), censored(s, c.statCell(metrics.SLOMetricTTFT, sp.ToolRound))
		} else if s.Tools != nil { // agent sessions without a tool round: every request was a user turn
			user = censored(s, c.statCell(metrics.SLOMetricTTFT, s.TTFT))
		}
		structured := "N/A"
		if st := s.Structured; st != nil {
			structured = fmt.Sprintf("%s (%d/%d)", pct(st.ShareValid.V, st.ShareValid.OK), st.Valid, st.Valid+st.Invalid)
		}
		t.add(c.lead(rs), calls, rounds, invalid, ttfTool, user, round, structured)
	}
	return t
}
