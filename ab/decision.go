package ab

import (
	"fmt"
	"math"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// Doubt says why a "worse" verdict of B cannot stand on one stage's numbers (empty: it stands).
// NotMeasured: the stage was cut short, or a side's replay fell behind its trace: none of its
// verdicts stand. Strained: the client was strained while it measured B; it reads latencies longer
// and throughput lower than the server's, never the other way, so it can fake B worse (a strained A
// can only hide it), though not a higher error rate, which counts the server's answers.
type Doubt struct {
	NotMeasured, Strained string
	// LateMs is how much longer the strain can have made B's latencies read (+Inf: no bound, the
	// client's own CPU was full): a latency row whose whole interval of B − A lies above it stands.
	LateMs float64
}

// strainPeriodMs is how long a runnable thread may wait for a CPU at a time, taken as the Linux
// scheduler's period on a 2-core machine (as plload search takes it): a client whose threads waited
// for a CPU, or paused for GC, is allowed that lateness per event, since the wait is not measured
// per event.
const strainPeriodMs = 12

// Doubts are the stages' doubts, by stage number.
type Doubts map[int]Doubt

// Decision is what an A/B says for a gate: the rows where B is worse and the numbers stand, the rows
// where B read worse on numbers that cannot vouch for it, and how many rows B is better on.
type Decision struct {
	Worse, Undecided []string
	Better           int
}

// Decide reads the comparison's rows against the stages' doubts.
func Decide(r resultfiles.AB, doubts Doubts) Decision {
	var d Decision
	for _, m := range r.Metrics {
		switch m.Verdict {
		case Better:
			d.Better++
			continue
		case Worse:
		default:
			continue
		}
		row := fmt.Sprintf("stage %02d %s %s → %s (B − A %s, 95 %% interval %s)", m.Stage, m.Name, num(m.A.V, m.A.OK), num(m.B.V, m.B.OK), signed(m.Diff.V, m.Diff.OK), interval(m.CI))
		switch doubt := doubts[m.Stage]; {
		case doubt.NotMeasured != "":
			d.Undecided = append(d.Undecided, row+": "+doubt.NotMeasured)
		case doubt.Strained != "" && m.Name != "error_rate" && !(m.BetterWhen == "lower" && m.CI != nil && m.CI[0] > doubt.LateMs):
			d.Undecided = append(d.Undecided, row+": "+doubt.Strained)
		default:
			d.Worse = append(d.Worse, row)
		}
	}
	return d
}

// Line is the A/B's last line: B's verdict in one sentence, naming the first worse row and its
// numbers, or why a worse reading does not stand.
func (d Decision) Line(a, b string) string {
	more := func(rows []string) string {
		if len(rows) > 1 {
			return fmt.Sprintf("; and %d more", len(rows)-1)
		}
		return ""
	}
	switch {
	case len(d.Worse) > 0:
		return fmt.Sprintf("A/B: %s (B) is worse than %s (A): %s%s", b, a, d.Worse[0], more(d.Worse))
	case len(d.Undecided) > 0:
		return fmt.Sprintf("A/B: undecided: %s (B) read worse than %s (A), but not on numbers that stand: %s%s", b, a, d.Undecided[0], more(d.Undecided))
	case d.Better > 0:
		return fmt.Sprintf("A/B: %s (B) is no worse than %s (A) on any metric, and better on %d", b, a, d.Better)
	}
	return fmt.Sprintf("A/B: no significant difference between %s (B) and %s (A) on any metric", b, a)
}

// StageDoubt is a stage's doubt from both sides' stage reports (sa A's, sb B's; b names B): cut short
// or a replay that fell behind on either side, in the stage tables' words; B's client strained, named
// by its largest cause.
func StageDoubt(sa, sb *resultfiles.StageReport, b string) Doubt {
	var d Doubt
	switch {
	case sa.Summary.Partial || sb.Summary.Partial:
		d.NotMeasured = fmt.Sprintf("stage %02d is partial (cut short)", sb.Stage)
	case resultfiles.ReplayWarning(sa.Summary) != "" || resultfiles.ReplayWarning(sb.Summary) != "":
		d.NotMeasured = fmt.Sprintf("stage %02d is not a valid replay on a side, so its latencies are not the trace's", sb.Stage)
	}
	h := sb.Injector
	if cause := h.Cause(); cause != "" {
		d.LateMs = metrics.InjectorLateEvents * max(h.TimestampLagMs(), strainPeriodMs)
		if w := h.Warnings(); len(w) == 1 && h.TimestampLagMs() > metrics.InjectorSchedWarnMs {
			d.LateMs = metrics.InjectorLateEvents * h.TimestampLagMs() // a measured lateness, alone
		}
		if (metrics.InjectorHealth{CPUPercent: h.CPUPercent, Cores: h.Cores}).Warnings() != nil {
			d.LateMs = math.Inf(1) // the client's CPU was full: it may have measured itself
		}
		d.Strained = fmt.Sprintf("the client was strained while it measured %s (%s), which reads its latencies longer, by up to %s ms here, and its throughput lower", b, cause, num(d.LateMs, true))
	}
	return d
}
