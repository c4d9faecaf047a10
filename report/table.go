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

// columns decides the optional columns from the stages shown together.
type columns struct{ ttfo, startLag, run, server bool }

func columnsFor(rows []*StageReport, withRun bool) columns {
	c := columns{run: withRun}
	for _, r := range rows {
		c.ttfo = c.ttfo || r.Summary.ReasoningSeen
		c.startLag = c.startLag || r.Mode == "arrival_rate"
		c.server = c.server || (r.Server != nil && r.Server.Samples > 0)
	}
	return c
}

func (c columns) header() []string {
	h := []string{}
	if c.run {
		h = append(h, "run")
	}
	h = append(h, "stage", "load", "active sess", "req/s", "out tok/s", "goodput/s", "TTFT p50/p95/p99")
	if c.server {
		h = append(h, "server TTFT p50/p95")
	}
	h = append(h, "RTT p50/p95")
	if c.ttfo {
		h = append(h, "TTFO p50/p95")
	}
	h = append(h, "ITL p50/p95", "E2E p95", "err%", "429", "cache hit%", "SLO", "$/1M out", "$/1K turns", "$/session")
	if c.startLag {
		h = append(h, "start lag p50/p95/p99")
	}
	return h
}

func (c columns) row(r *StageReport, runName string) []string {
	s := r.Summary
	stage := fmt.Sprintf("%02d", r.Stage)
	if r.Partial {
		stage += " (partial)"
	}
	var cells []string
	if c.run {
		cells = append(cells, runName)
	}
	errPct := "N/A"
	if s.ErrorRate.OK {
		errPct = fmt.Sprintf("%.1f%%", 100*s.ErrorRate.V)
		if s.Censored {
			errPct += " †"
		}
	}
	cache := "N/A (no usage)"
	if s.CacheHit.OK {
		cache = fmt.Sprintf("%.1f%% (cached reported %d/%d)", 100*s.CacheHit.V, s.CachedReported, s.Requests.Succeeded)
	} else if s.Requests.Succeeded == 0 {
		cache = "N/A"
	}
	cells = append(cells, stage, loadOf(r),
		fmt.Sprintf("%.1f (%d–%d)", s.Active.Mean, s.Active.Min, s.Active.Max),
		num(s.Throughput.ReqPerSec, 2), num(s.Throughput.OutTokPerSec, 1), num(s.Throughput.GoodputPerSec, 2),
		lats(s.TTFT, 50, 95, 99))
	if c.server {
		cells = append(cells, serverTTFT(r.Server))
	}
	cells = append(cells, rtt(r.NetworkRTT))
	if c.ttfo {
		cells = append(cells, lats(s.TTFO, 50, 95))
	}
	cells = append(cells, lats(s.ITL, 50, 95), lats(s.E2E, 95), errPct, fmt.Sprint(s.Requests.RateLimited), cache,
		s.SLO.Verdict, money(s.Cost.USDPer1MOut, 3), money(s.Cost.USDPer1KTurns, 4), money(s.Cost.USDPerSession, 6))
	if c.startLag {
		cells = append(cells, lats(s.StartLag, 50, 95, 99))
	}
	return cells
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

// StageTable is the Markdown table of one run's stages.
func StageTable(stages []*StageReport) string {
	c := columnsFor(stages, false)
	var rows [][]string
	for _, r := range stages {
		rows = append(rows, c.row(r, ""))
	}
	return markdownTable(c.header(), rows)
}

// HeadlineLine is the report's first line: the cost at the best SLO-passing stage.
func HeadlineLine(stages []*StageReport) string {
	sums := make([]*metrics.StageSummary, len(stages))
	for i, r := range stages {
		sums[i] = r.Summary
	}
	best := metrics.Headline(sums)
	if best < 0 {
		return "**Headline**: no complete stage passed the SLO, so there is no cost at the SLO."
	}
	r := stages[best]
	s := r.Summary
	return fmt.Sprintf("**Headline**: stage %02d: %s/1M out, %s/1K turns, %s/session (out tok/s %.1f, SLO %s)",
		r.Stage, money(s.Cost.USDPer1MOut, 3), money(s.Cost.USDPer1KTurns, 4), money(s.Cost.USDPerSession, 6),
		s.Throughput.OutTokPerSec, s.SLO.Verdict)
}
