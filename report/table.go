package report

import (
	"fmt"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// Row formatting shared by the terminal, report.md and the comparison table.

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

// runStage is one row of the tables: a stage, and the run it belongs to when several are shown.
type runStage struct {
	run string
	st  *resultfiles.StageReport
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

// sloText is the verdict, saying when N/A means that no limit was set.
func sloText(r *resultfiles.StageReport) string {
	if !r.SLO.Set() {
		return "N/A (not set)"
	}
	return r.Summary.SLO.Verdict
}

// costText is a cost, saying when N/A means that no price was given.
func costText(r *resultfiles.StageReport, v *float64, digits int) string {
	if r.Cost.Unpriced {
		return "N/A (no price)"
	}
	return resultfiles.Money(v, digits)
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
	tables := columnsFor(rows, withRun).tables(rows)
	for i, t := range tables {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(t.title + ":\n\n" + markdownTable(t.header, t.rows))
	}
	b.WriteString(tableFootnotes(tables))
	b.WriteString(absorbSection(rows, withRun))
	return b.String()
}

// tableFootnotes say what the tables' marks mean, under them, when a cell has one: the SLO's
// statistic in bold, percentiles of too few requests, a stage censored by cancelled requests.
func tableFootnotes(tables []table) string {
	bold, few, cut := false, false, false
	for _, t := range tables {
		for _, row := range t.rows {
			for _, cell := range row {
				bold = bold || strings.Contains(cell, "**")
				few = few || strings.Contains(cell, " "+fewMark)
				cut = cut || strings.HasSuffix(cell, " "+censoredMark)
			}
		}
	}
	var b strings.Builder
	if bold {
		b.WriteString("\nIn bold: the statistic the SLO limits.\n")
	}
	if few {
		fmt.Fprintf(&b, "\n%s: the percentiles rest on fewer than %d requests (of so few, p95 and p99 are the largest one or two values, not a tail): lengthen the stage or raise its load to measure them.\n", fewMark, fewRequests)
	}
	if cut {
		fmt.Fprintf(&b, "\n%s: some of the stage's requests were cancelled before they finished (the drain at its end, or an interrupt); err%% counts those the drain cut as errors, and the latency percentiles leave them all out, so they are lower bounds: the slowest requests are the ones missing.\n", censoredMark)
	}
	return b.String()
}

// absorbSection lists the time to absorb of every stage that has one, under the stage tables ("" when
// none has).
func absorbSection(rows []runStage, withRun bool) string {
	var b strings.Builder
	for _, rs := range rows {
		if text := resultfiles.AbsorbText(rs.st); text != "" {
			b.WriteString("- " + stageLabel(rs, withRun) + ": " + text + "\n")
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\nTime to absorb (the SLO's latency limits judged per window from t0, by request start):\n\n" + b.String()
}

// StageTable is one run's stage tables in Markdown (throughput and errors, latency, cost), as the
// terminal and report.md show them.
func StageTable(stages []*resultfiles.StageReport) string {
	return stageTables(rowsOf([]Run{{Stages: stages}}), false)
}
