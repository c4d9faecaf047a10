package fit

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/plload/plload/workload"
)

// Print writes the summary for a terminal: rates per second and per minute, the length quantiles
// with the lognormal beside them, sessions and prefix sharing. Only numbers: no text from the log.
func (s *Summary) Print(out io.Writer, sources []string) {
	fmt.Fprintf(out, "read %d requests from %s (format %s)", s.Requests, strings.Join(sources, ", "), strings.Join(s.Formats, ", "))
	if s.Skipped > 0 {
		fmt.Fprintf(out, "; %d failed requests without lengths skipped", s.Skipped)
	}
	fmt.Fprintf(out, "\n\narrivals over %.1f s:\n", s.SpanS)
	fmt.Fprintf(out, "  rate        mean %.4g req/s (%.4g /min), peak minute %.4g req/s (%.4g /min), peak/mean %.2f\n",
		s.RatePerS.Mean, 60*s.RatePerS.Mean, s.RatePerS.PeakMinute, 60*s.RatePerS.PeakMinute, s.PeakToMean)
	if s.FlatPeak() {
		why := fmt.Sprintf("the peak minute is within %.0f %% of the mean", 100*(workload.FlatPeakRatio-1))
		if s.SpanS < 60 {
			why = "the log is shorter than a minute, so its peak minute is its mean"
		}
		fmt.Fprintf(out, "              %s: the scenario has one stage for both (and one at peak +30 %%)\n", why)
	}
	shape := "burstier than Poisson"
	switch {
	case s.Poisson:
		shape = "Poisson (CV within 10 % of 1)"
	case s.InterarrivalCV < 1:
		shape = "more regular than Poisson"
	}
	fmt.Fprintf(out, "  burstiness  inter-arrival CV %.3f, gamma shape %.3f: %s\n", s.InterarrivalCV, s.GammaShape, shape)
	if h := s.Hourly; h != nil {
		lo, hi := slices.Min(h[:len(h)-1]), slices.Max(h) // the last hour is partial
		shown := h[:min(len(h), 48)]
		fmt.Fprintf(out, "  diurnal     requests per hour from the first: %s%s (busiest hour %d, quietest full hour %d)\n",
			strings.Trim(fmt.Sprint(shown), "[]"), map[bool]string{true: " …", false: ""}[len(h) > 48], hi, lo)
	}
	fmt.Fprintln(out)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "tokens\tp50\tp95\tp99\tmax\tlognormal p50/p95/p99\tfit error\tbetter")
	row := func(name string, q Quantiles, f Lognormal) {
		better := "empirical quantiles"
		if f.Good() {
			better = "lognormal"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.0f / %.0f / %.0f (mean %.0f, sigma %.3f)\t%.1f %%\t%s\n",
			name, num(q.P50), num(q.P95), num(q.P99), num(q.Max), f.P50, f.P95, f.P99, f.Mean, f.Sigma, 100*f.Err, better)
	}
	row("input", s.InputTokens, s.InputFit)
	row("output", s.OutputTokens, s.OutputFit)
	tw.Flush()

	if st := s.Sessions; st != nil {
		fmt.Fprintf(out, "\nsessions: %d, mean %.2f turns\n", st.Count, st.MeanTurns)
		fmt.Fprintf(out, "  turns       p50 %s, p95 %s, p99 %s, max %s%s\n", num(st.Turns.P50), num(st.Turns.P95), num(st.Turns.P99), num(st.Turns.Max), st.cutOffNote())
		fmt.Fprintf(out, "  think time  mean %.3g s, p50 %.3g s, p95 %.3g s, p99 %.3g s, max %.3g s (%s)\n",
			st.ThinkMean, st.ThinkTime.P50, st.ThinkTime.P95, st.ThinkTime.P99, st.ThinkTime.Max, thinkSource(st))
		fmt.Fprintf(out, "  first turn  prompt tokens p50 %s, p99 %s (later turns carry the history)\n", num(s.FirstInput.P50), num(s.FirstInput.P99))
		growth := make([]string, len(st.PromptByTurn))
		for i, v := range st.PromptByTurn {
			growth[i] = fmt.Sprintf("%d: %s", i+1, num(v))
		}
		fmt.Fprintf(out, "  history     prompt tokens p50 by turn: %s\n", strings.Join(growth, ", "))
	} else {
		fmt.Fprintln(out, "\nsessions: none (no session ids in the log)")
	}
	fmt.Fprint(out, s.Images.print())
	switch {
	case s.PrefixShare == nil:
		fmt.Fprintln(out, "prefix sharing: unknown (no hash_ids, no request text and no cached-token counts in the log)")
	case s.PrefixFrom == "cached_tokens":
		fmt.Fprintf(out, "prefix sharing: %.1f %% of prompt tokens were answered from the server's prefix cache (cached_tokens in %d records' usage)\n", 100**s.PrefixShare, s.CacheRecords)
	case s.PrefixFrom == "text":
		fmt.Fprintf(out, "prefix sharing: %.1f %% of prompt text (bytes) was in a prefix an earlier request had\n", 100**s.PrefixShare)
	default:
		fmt.Fprintf(out, "prefix sharing: %.1f %% of prompt blocks were seen in an earlier request (hash_ids)\n", 100**s.PrefixShare)
	}
	if sp := s.SharedPrefix; sp != nil {
		over := plural(sp.Heads, "distinct prefix", "distinct prefixes")
		if sp.Heads == 0 {
			over = "prefixes the records do not tell apart"
		}
		fmt.Fprintf(out, "  first turns share %.4g prompt tokens on average (%.1f %% of theirs) over %s: the scenario's personas carry it\n",
			sp.Tokens, 100*sp.Share, over)
	}
}

// cutOffNote says how many sessions the turn counts leave out as cut off by the log's end.
func (st *SessionStats) cutOffNote() string {
	switch {
	case st.CutOff == 0:
		return ""
	case st.AllCutOff:
		return " (every session was cut off by the log's end: a lower bound)"
	}
	return fmt.Sprintf(" (over %d sessions; %s cut off by the log's end, still able to have turns, left out)",
		st.Count-st.CutOff, plural(st.CutOff, "session", "sessions"))
}

// thinkSource says what the think-time gaps were measured between.
func thinkSource(st *SessionStats) string {
	switch st.GapsFromEnd {
	case st.Gaps:
		return "answer end to the next turn's start"
	case 0:
		return "start to next start: an upper bound, the log has no answer end"
	}
	return fmt.Sprintf("%d of %d gaps from an answer's end, the rest start to start", st.GapsFromEnd, st.Gaps)
}
