package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/plload/plload/metrics"
)

// Row formatting shared by the terminal, report.md and the comparison table.

func num(v float64, digits int) string {
	if math.IsNaN(v) {
		return "N/A"
	}
	return fmt.Sprintf("%.*f", digits, v)
}

// lat formats latencies: whole ms from 100 ms up, one decimal below.
func lat(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func lats(d metrics.Dist, ps ...float64) string {
	if !d.Known() {
		return "N/A"
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		switch p {
		case 50:
			parts[i] = lat(d.P50)
		case 90:
			parts[i] = lat(d.P90)
		case 95:
			parts[i] = lat(d.P95)
		case 99:
			parts[i] = lat(d.P99)
		}
	}
	return strings.Join(parts, "/")
}

func serverTTFT(s *metrics.ServerSummary) string {
	if s == nil || !s.TTFTP50Ms.OK {
		return "N/A"
	}
	p95 := "N/A"
	if s.TTFTP95Ms.OK {
		p95 = lat(s.TTFTP95Ms.V)
	}
	return lat(s.TTFTP50Ms.V) + "/" + p95
}

// rtt formats the network round trip to two decimals: on loopback it is a fraction of a millisecond.
func rtt(d metrics.Dist) string {
	if !d.Known() {
		return "N/A"
	}
	return fmt.Sprintf("%.2f/%.2f", d.P50, d.P95)
}

func money(v *float64, digits int) string {
	if v == nil {
		return "N/A"
	}
	return fmt.Sprintf("$%.*f", digits, *v)
}

func loadOf(r *StageReport) string {
	if r.Mode == "arrival_rate" {
		return fmt.Sprintf("%g/s (max %d)", r.SessionsPerSec, r.MaxConcurrency)
	}
	if r.Concurrency == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%d", r.Concurrency)
}

// runStage is one row of the tables: a stage, and the run it belongs to when several are shown.
type runStage struct {
	run string
	st  *StageReport
}

// rowsOf lists the stages of runs in order.
func rowsOf(runs []Run) []runStage {
	var out []runStage
	for _, r := range runs {
		for _, s := range r.Stages {
			out = append(out, runStage{r.Name, s})
		}
	}
	return out
}

// columns decides the optional columns from the stages shown together.
type columns struct{ ttfo, startLag, run, server bool }

func columnsFor(rows []runStage, withRun bool) columns {
	c := columns{run: withRun}
	for _, rs := range rows {
		r := rs.st
		c.ttfo = c.ttfo || r.Summary.ReasoningSeen
		c.startLag = c.startLag || r.Mode == "arrival_rate"
		c.server = c.server || (r.Server != nil && r.Server.Samples > 0)
	}
	return c
}

// table is one Markdown table with its title.
type table struct {
	title  string
	header []string
	rows   [][]string
}

// lead is the cells every table starts with, so each row reads on its own: the run (when several),
// the stage and its load.
func (c columns) lead(rs runStage) []string {
	stage := fmt.Sprintf("%02d", rs.st.Stage)
	if rs.st.Partial {
		stage += " (partial)"
	}
	if c.run {
		return []string{rs.run, stage, loadOf(rs.st)}
	}
	return []string{stage, loadOf(rs.st)}
}

func (c columns) leadHeader() []string {
	if c.run {
		return []string{"run", "stage", "load"}
	}
	return []string{"stage", "load"}
}

// tables splits the stage columns into three tables that each fit a laptop screen: throughput and
// errors, latency, cost (one table of all of them was 18 columns wide and scrolled the cost away).
func (c columns) tables(rows []runStage) []table {
	tp := table{title: "Throughput and errors", header: append(c.leadHeader(), "active sess", "req/s", "out tok/s", "goodput/s", "err%", "429", "cache hit%")}
	la := table{title: "Latency (ms)", header: append(c.leadHeader(), "TTFT p50/p95/p99")}
	if c.server {
		la.header = append(la.header, "server TTFT p50/p95")
	}
	la.header = append(la.header, "RTT p50/p95")
	if c.ttfo {
		la.header = append(la.header, "TTFO p50/p95")
	}
	la.header = append(la.header, "ITL p50/p95", "E2E p95")
	if c.startLag {
		la.header = append(la.header, "start lag p50/p95/p99")
	}
	la.header = append(la.header, "SLO")
	co := table{title: "Cost", header: append(c.leadHeader(), "SLO", "out tok/s", "$/1M out", "$/1K turns", "$/session")}
	for _, rs := range rows {
		s := rs.st.Summary
		errPct := "N/A"
		if s.ErrorRate.OK {
			errPct = fmt.Sprintf("%.1f%%", 100*s.ErrorRate.V)
			if s.Censored {
				errPct += " †"
			}
		}
		cache := "N/A (no usage)"
		if s.CacheHit.OK {
			cache = fmt.Sprintf("%s (cached reported %d/%d)", pct(s.CacheHit.V, true), s.CachedReported, s.Requests.Succeeded)
		} else if s.Requests.Succeeded == 0 {
			cache = "N/A"
		}
		tp.rows = append(tp.rows, append(c.lead(rs), fmt.Sprintf("%.1f (%d–%d)", s.Active.Mean, s.Active.Min, s.Active.Max),
			num(s.Throughput.ReqPerSec, 2), num(s.Throughput.OutTokPerSec, 1), num(s.Throughput.GoodputPerSec, 2),
			errPct, fmt.Sprint(s.Requests.RateLimited), cache))
		lr := append(c.lead(rs), lats(s.TTFT, 50, 95, 99))
		if c.server {
			lr = append(lr, serverTTFT(rs.st.Server))
		}
		lr = append(lr, rtt(rs.st.NetworkRTT))
		if c.ttfo {
			lr = append(lr, lats(s.TTFO, 50, 95))
		}
		lr = append(lr, lats(s.ITL, 50, 95), lats(s.E2E, 95))
		if c.startLag {
			lr = append(lr, lats(s.StartLag, 50, 95, 99))
		}
		la.rows = append(la.rows, append(lr, sloText(rs.st)))
		co.rows = append(co.rows, append(c.lead(rs), sloText(rs.st), num(s.Throughput.OutTokPerSec, 1),
			costText(rs.st, s.Cost.USDPer1MOut, 3), costText(rs.st, s.Cost.USDPer1KTurns, 4), costText(rs.st, s.Cost.USDPerSession, 6)))
	}
	return []table{tp, la, co}
}

// sloText is the verdict, saying when N/A means that no limit was set.
func sloText(r *StageReport) string {
	if !r.SLO.Set() {
		return "N/A (not set)"
	}
	return r.Summary.SLO.Verdict
}

// costText is a cost, saying when N/A means that no price was given.
func costText(r *StageReport, v *float64, digits int) string {
	if r.Cost.Unpriced {
		return "N/A (no price)"
	}
	return money(v, digits)
}

// mdCell makes text safe in a Markdown table cell: a | would end the cell, a newline the row.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// mdCode shows outside text (a server's message) verbatim as inline code, which Markdown does not
// interpret, safe in a table cell.
func mdCode(s string) string {
	s = mdCell(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// markdownTable renders rows as a Markdown table.
func markdownTable(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// stageTables renders the stage tables of rows as Markdown, each under its title.
func stageTables(rows []runStage, withRun bool) string {
	var b strings.Builder
	for i, t := range columnsFor(rows, withRun).tables(rows) {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(t.title + ":\n\n" + markdownTable(t.header, t.rows))
	}
	return b.String()
}

// StageTable is one run's stage tables in Markdown (throughput and errors, latency, cost), as the
// terminal and report.md show them.
func StageTable(stages []*StageReport) string {
	return stageTables(rowsOf([]Run{{Stages: stages}}), false)
}

// HeadlineLine is the report's first line in Markdown: the cost at the best SLO-passing stage.
func HeadlineLine(stages []*StageReport) string { return "**Headline**: " + HeadlineText(stages) }

// HeadlineText is the headline in plain text (report.json), without its label.
func HeadlineText(stages []*StageReport) string {
	sums := make([]*metrics.StageSummary, len(stages))
	for i, r := range stages {
		sums[i] = r.Summary
	}
	best := metrics.Headline(sums)
	set := false
	for _, r := range stages {
		set = set || r.SLO.Set()
	}
	switch {
	case !set:
		return "no SLO was set, so no stage is judged and there is no cost at the SLO."
	case best < 0:
		return "no complete stage passed the SLO, so there is no cost at the SLO."
	}
	r := stages[best]
	s := r.Summary
	if r.Cost.Unpriced {
		return fmt.Sprintf("stage %02d: out tok/s %.1f, SLO %s; no GPU price was given, so costs are N/A", r.Stage, s.Throughput.OutTokPerSec, s.SLO.Verdict)
	}
	return fmt.Sprintf("stage %02d: %s/1M out, %s/1K turns, %s/session (out tok/s %.1f, SLO %s)",
		r.Stage, money(s.Cost.USDPer1MOut, 3), money(s.Cost.USDPer1KTurns, 4), money(s.Cost.USDPerSession, 6),
		s.Throughput.OutTokPerSec, s.SLO.Verdict)
}
