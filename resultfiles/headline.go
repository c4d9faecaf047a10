package resultfiles

import (
	"fmt"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// HeadlineLine is the report's first line in Markdown: the cost at the best SLO-passing stage.
func HeadlineLine(stages []*StageReport) string { return "**Headline**: " + HeadlineText(stages) }

// HeadlineText is the headline in plain text (report.json), without its label: the cost at the
// complete, SLO-passing stage with the highest out tok/s; with no SLO set, that stage is the best
// throughput among the complete ones, named as such (nothing was judged, so nothing failed).
func HeadlineText(stages []*StageReport) string {
	sums := make([]*metrics.StageSummary, len(stages))
	set := false
	for i, r := range stages {
		sums[i] = r.Summary
		set = set || r.SLO.Set()
	}
	if batchHeadline := batchHeadline(stages); batchHeadline != "" {
		return batchHeadline
	}
	if len(stages) > 0 && workload.IsRetrieval(stages[0].Target.Endpoint) {
		return retrievalHeadline(stages, set)
	}
	best := metrics.Headline(sums)
	switch {
	case !set:
		return noSLOHeadline(stages)
	case best < 0:
		return noPassHeadline(sums)
	}
	r := stages[best]
	s := r.Summary
	if r.Cost.Unpriced {
		return fmt.Sprintf("stage %02d: out tok/s %.1f, SLO %s; no GPU price was given, so costs are N/A", r.Stage, s.Throughput.OutTokPerSec, s.SLO.Verdict)
	}
	return fmt.Sprintf("stage %02d: %s/1M out, %s/1K turns, %s/session (out tok/s %.1f, SLO %s)",
		r.Stage, Money(s.Cost.USDPer1MOut, 3), Money(s.Cost.USDPer1KTurns, 4), Money(s.Cost.USDPerSession, 6),
		s.Throughput.OutTokPerSec, s.SLO.Verdict)
}

// HeadlineIndex is the index of the stage a per-token headline names: the complete, SLO-passing
// stage with the highest out tok/s, or with no SLO set the best throughput (bestThroughput); −1 for
// a batch or retrieval run, whose headline is not per output token, or when no stage qualifies.
func HeadlineIndex(stages []*StageReport) int {
	if len(stages) == 0 || workload.IsRetrieval(stages[0].Target.Endpoint) {
		return -1
	}
	set := false
	sums := make([]*metrics.StageSummary, len(stages))
	for i, r := range stages {
		if r.Batch != nil || r.Summary == nil {
			return -1
		}
		sums[i] = r.Summary
		set = set || r.SLO.Set()
	}
	if set {
		return metrics.Headline(sums)
	}
	return bestThroughput(stages)
}

// noSLOHeadline names the best throughput when no SLO was set.
func noSLOHeadline(stages []*StageReport) string {
	const lead = "no SLO was set, so no stage is judged"
	best := bestThroughput(stages)
	if best < 0 {
		return lead + ", and no stage was measured (each was cut short, had no successful request, or was a replay that fell behind its trace)."
	}
	r := stages[best]
	s := r.Summary
	line := fmt.Sprintf("%s; best throughput: stage %02d (load %s), out tok/s %.1f", lead, r.Stage, r.LoadText(), s.Throughput.OutTokPerSec)
	if r.Cost.Unpriced {
		return line + "; no price set: cost N/A"
	}
	return line + fmt.Sprintf(", %s/1M out, %s/1K turns, %s/session", Money(s.Cost.USDPer1MOut, 3), Money(s.Cost.USDPer1KTurns, 4),
		Money(s.Cost.USDPerSession, 6))
}

// bestThroughput is the measured stage (metrics.Measured) with the highest out tok/s (ties: the
// lower stage number); −1 when there is none.
func bestThroughput(stages []*StageReport) int {
	best := -1
	for i, r := range stages {
		if !r.Summary.Measured() {
			continue
		}
		if best < 0 || r.Summary.Throughput.OutTokPerSec > stages[best].Summary.Throughput.OutTokPerSec {
			best = i
		}
	}
	return best
}

// ReplayWarnings are the lines, one per replay stage that did not keep its trace's pace, that say
// so: "stage 02: client could not keep the trace's pace: …". Such a stage's latencies are not the
// trace's (requests went out later, and bunched), so the terminal, report.md, `plload report` and
// the handoff all show them.
func ReplayWarnings(stages []*StageReport) []string {
	var out []string
	for _, r := range stages {
		if w := ReplayWarning(r.Summary); w != "" {
			out = append(out, fmt.Sprintf("stage %02d: %s", r.Stage, w))
		}
	}
	return out
}

// ReplayWarning is the stage's replay warning without its stage ("" when it kept pace or is not a
// replay).
func ReplayWarning(s *metrics.StageSummary) string {
	if s == nil || !s.ReplayValid.OK || s.ReplayValid.V {
		return ""
	}
	why := s.ReplayInvalidReason
	if why == "" {
		why = fmt.Sprintf("send lag p99 %.2f ms, max %.2f ms (a valid replay has p99 ≤ %g ms and no request over %g ms late)",
			s.SendLag.P99, s.SendLag.Max, metrics.ReplayLagP99LimitMs, metrics.ReplayLateLimitMs)
	}
	return "client could not keep the trace's pace: " + why
}

// noPassHeadline says why no stage is the headline, in the words of the stage tables: stages whose
// SLO PASS does not stand (a replay that fell behind its trace) are "not valid", stages cut short
// are "not complete", and stages that FAILed simply did not pass.
func noPassHeadline(sums []*metrics.StageSummary) string {
	lead := NoPass(sums)
	if strings.HasPrefix(lead, "no valid") {
		return lead + ", so there is no cost at the SLO" + unmeasuredNote(sums) + "."
	}
	return lead + ", so there is no cost at the SLO."
}

// NoPass says, in the stage tables' words, why no stage passed the SLO where none is the headline:
// "no valid stage passed the SLO" (a PASS that does not stand: a replay that fell behind its trace),
// "no complete stage passed the SLO" (a stage cut short), or "no stage passed the SLO".
func NoPass(sums []*metrics.StageSummary) string {
	lead := "no stage passed the SLO"
	for _, s := range sums {
		switch {
		case s != nil && s.Partial:
			lead = "no complete stage passed the SLO"
		case s != nil && s.SLO.Verdict == metrics.SLOPass && !s.Measured():
			return "no valid stage passed the SLO"
		}
	}
	return lead
}

// unmeasuredNote says why SLO-passing stages are not the headline: they fell behind their trace
// ("" when none did).
func unmeasuredNote(sums []*metrics.StageSummary) string {
	n := 0
	for _, s := range sums {
		if s != nil && s.SLO.Verdict == metrics.SLOPass && s.ReplayValid.OK && !s.ReplayValid.V {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d stage(s) met it as a replay that fell behind its trace: those numbers are not the trace's)", n)
}

// batchHeadline is the headline of a run of batch stages (docs/scenario.md): each job's completion time,
// requests/s, output tok/s and cost per job, with its SLO verdict; "" unless every stage is a batch.
func batchHeadline(stages []*StageReport) string {
	if len(stages) == 0 {
		return ""
	}
	parts := make([]string, len(stages))
	for i, r := range stages {
		b := r.Batch
		if b == nil {
			return ""
		}
		job := Money(b.CostPerJobUSD, 4) + "/job"
		if r.Cost.Unpriced {
			job = "no price set: cost per job N/A"
		}
		verdict := "SLO N/A (not set)"
		if r.SLO.Set() {
			verdict = "SLO " + r.Summary.SLO.Verdict
		}
		if b.Succeeded == 0 {
			parts[i] = fmt.Sprintf("stage %02d: batch of %d requests sent over %s s, none answered: the job did not complete, %s",
				r.Stage, b.Requests, Num(b.CompletionS, 2), verdict)
			continue
		}
		done := "completed in"
		if r.Partial || r.Engine.Aborted != "" {
			done = "stopped, not completed, after" // interrupted, or the target stopped answering
		}
		parts[i] = fmt.Sprintf("stage %02d: batch of %d requests %s %s s (%.2f req/s, out tok/s %.1f), %s, %s",
			r.Stage, b.Requests, done, Num(b.CompletionS, 2), b.ReqPerSec, b.OutTokPerSec, job, verdict)
		if b.Succeeded < b.Requests {
			parts[i] += fmt.Sprintf(" (%d failed)", b.Requests-b.Succeeded)
		}
	}
	return strings.Join(parts, "; ")
}

// StageList names stages as the final lines do: "stage 01", "stages 01, 03".
func StageList(ids []string) string {
	if len(ids) == 1 {
		return "stage " + ids[0]
	}
	return "stages " + strings.Join(ids, ", ")
}

// retrievalHeadline is an embeddings or rerank run's headline: its requests generate nothing, so
// its cost is per million input tokens and per thousand requests, at the SLO-passing (or, with no
// SLO, the measured) stage that read the most input tokens per second.
func retrievalHeadline(stages []*StageReport, sloSet bool) string {
	best := -1
	for i, r := range stages {
		s := r.Summary
		if !s.Measured() || sloSet && s.SLO.Verdict != metrics.SLOPass {
			continue
		}
		if best < 0 || s.Throughput.InTokPerSec > stages[best].Summary.Throughput.InTokPerSec {
			best = i
		}
	}
	if best < 0 {
		sums := make([]*metrics.StageSummary, len(stages))
		for i, r := range stages {
			sums[i] = r.Summary
		}
		return noPassHeadline(sums)
	}
	r := stages[best]
	s := r.Summary
	verdict := "SLO " + s.SLO.Verdict
	if !sloSet {
		verdict = "no SLO set"
	}
	line := fmt.Sprintf("stage %02d (%s): input tok/s %.1f, req/s %.2f, %s", r.Stage, r.Target.Endpoint, s.Throughput.InTokPerSec, s.Throughput.ReqPerSec, verdict)
	if r.Cost.Unpriced {
		return line + "; no GPU price was given, so costs are N/A"
	}
	return fmt.Sprintf("%s; %s/1M input tokens, %s/1K requests", line, Money(s.Cost.USDPer1MIn, 4), Money(s.Cost.USDPer1KTurns, 4))
}
