package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plload/plload/metrics"
)

// turnsSection is "By turn": for each stage number, turn by turn, the cache hit, the mean TTFT and
// the mean request size (bytes sent) of every run shown, side by side — the comparison of a
// conversation held by the client against one held by the server (target.history, docs/apis.md):
// the same turns, what each sent and what the server made of it. Empty unless a stage has two
// turns or more with by_turn (records that carry request_bytes).
func turnsSection(rows []runStage, withRun bool) string {
	var numbers []int
	byNumber := map[int][]runStage{}
	for _, rs := range rows {
		if len(rs.st.Summary.ByTurn) < 2 {
			continue
		}
		n := rs.st.Stage
		if _, seen := byNumber[n]; !seen {
			numbers = append(numbers, n)
		}
		byNumber[n] = append(byNumber[n], rs)
	}
	if len(numbers) == 0 {
		return ""
	}
	slices.Sort(numbers)
	var b strings.Builder
	b.WriteString("\n## By turn\n\n")
	b.WriteString("Turn by turn (1 is a session's first), over the successful requests in the window, tool rounds included: the cache hit (the server's cached ÷ prompt tokens), the mean TTFT and the mean request body sent (request_bytes).\n")
	for _, n := range numbers {
		stages := byNumber[n]
		// Runs that differ in who held the conversation say so: that is the comparison this is for.
		histories := map[string]bool{}
		for _, rs := range stages {
			histories[rs.st.Target.History] = true
		}
		label := func(metric string, rs runStage) string {
			if withRun {
				name := rs.run
				if len(histories) > 1 && rs.st.Target.History != "" {
					name += " (history " + rs.st.Target.History + ")"
				}
				return metric + " " + mdCell(name)
			}
			return metric
		}
		header := []string{"turn"}
		for _, metric := range []string{"cache hit", "TTFT mean (ms)", "bytes sent mean"} {
			for _, rs := range stages {
				header = append(header, label(metric, rs))
			}
		}
		turns := map[int]bool{}
		for _, rs := range stages {
			for _, t := range rs.st.Summary.ByTurn {
				turns[t.Turn] = true
			}
		}
		order := make([]int, 0, len(turns))
		for t := range turns {
			order = append(order, t)
		}
		slices.Sort(order)
		fmt.Fprintf(&b, "\n### Stage %02d\n\n", n)
		b.WriteString("| " + strings.Join(header, " | ") + " |\n")
		b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
		for _, turn := range order {
			cells := []string{fmt.Sprint(turn + 1)}
			for _, cell := range []func(runStage) string{
				func(rs runStage) string { return turnCacheHit(rs.st.Summary.CacheHitByTurn, turn) },
				func(rs runStage) string {
					return turnValue(rs.st.Summary.ByTurn, turn, func(t metrics.TurnNumbers) metrics.Opt[float64] { return t.TTFTMeanMs }, lat)
				},
				func(rs runStage) string {
					return turnValue(rs.st.Summary.ByTurn, turn, func(t metrics.TurnNumbers) metrics.Opt[float64] { return t.RequestBytesMean }, bytesText)
				},
			} {
				for _, rs := range stages {
					cells = append(cells, cell(rs))
				}
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
	}
	return b.String()
}

// turnCacheHit is turn's cache hit, or N/A.
func turnCacheHit(turns []metrics.TurnCacheHit, turn int) string {
	for _, t := range turns {
		if t.Turn == turn {
			return pct(t.CacheHit.V, t.CacheHit.OK)
		}
	}
	return "N/A"
}

// turnValue is one number of turn's entry, formatted, or N/A.
func turnValue(turns []metrics.TurnNumbers, turn int, get func(metrics.TurnNumbers) metrics.Opt[float64], format func(float64) string) string {
	for _, t := range turns {
		if t.Turn == turn {
			if v := get(t); v.OK {
				return format(v.V)
			}
		}
	}
	return "N/A"
}

// bytesText is a size in bytes, whole below 10 kB, in kB (1000 bytes) to one decimal above.
func bytesText(v float64) string {
	if v < 10_000 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.1f kB", v/1000)
}
