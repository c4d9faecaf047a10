package resultfiles

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// TestReplayFields: a replay stage carries its time scale and cap (no rate, no arrival), and reads
// "replay ×0.5 ≤ 1000".
func TestReplayFields(t *testing.T) {
	r := &StageReport{Mode: workload.ModeReplay, Stage: 1}
	openLoopFields(r, workload.LoadPlan{Mode: workload.ModeReplay, MaxInFlight: 1000, TimeScale: 0.5, Arrival: "poisson"}, workload.Stage{})
	if diff := cmp.Diff(&StageReport{Mode: workload.ModeReplay, Stage: 1, MaxInFlight: 1000, TimeScale: 0.5}, r); diff != "" {
		t.Errorf("replay fields (-want +got):\n%s", diff)
	}
	if got := r.LoadText(); got != "replay ×0.5 ≤ 1000" {
		t.Errorf("load %q", got)
	}
	r.Name = "trace day 1"
	if got := r.LoadText(); got != "trace day 1: replay ×0.5 ≤ 1000" {
		t.Errorf("load %q", got)
	}
}

// TestNoPassHeadlineNamesTheCause: when no stage is the headline, it says why in the tables' words —
// stages that FAILed did not pass, a stage cut short is not complete, a replay that fell behind is
// not valid even though its table says PASS.
func TestNoPassHeadlineNamesTheCause(t *testing.T) {
	mk := func(verdict string, partial, replayBehind bool) *metrics.StageSummary {
		s := &metrics.StageSummary{Partial: partial}
		s.Throughput.Requests = 10
		s.SLO.Verdict = verdict
		if replayBehind {
			s.ReplayValid = metrics.Some(false)
		}
		return s
	}
	for _, c := range []struct {
		name string
		sums []*metrics.StageSummary
		want string
	}{
		{"every stage failed", []*metrics.StageSummary{mk(metrics.SLOFail, false, false)}, "no stage passed the SLO, so there is no cost at the SLO."},
		{"one cut short", []*metrics.StageSummary{mk(metrics.SLOFail, false, false), mk(metrics.SLOPass, true, false)}, "no complete stage passed the SLO, so there is no cost at the SLO."},
		{"a replay that fell behind", []*metrics.StageSummary{mk(metrics.SLOPass, false, true)}, "no valid stage passed the SLO, so there is no cost at the SLO (1 stage(s) met it as a replay that fell behind its trace: those numbers are not the trace's)."},
	} {
		if got := noPassHeadline(c.sums); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestCacheAgainstTrace: a replay's cache hit is set beside its trace's own block reuse; a hit more
// than 5 points short names the likely reason, with the server's cache size when known.
func TestCacheAgainstTrace(t *testing.T) {
	reuse, size := 0.17, 500000
	st := &StageReport{Stage: 1, Summary: &metrics.StageSummary{CacheHit: metrics.Some(0.04)}, TraceBlockReuse: &reuse, ServerCacheTokens: &size}
	line, short := st.CacheAgainstTrace()
	if want := "cache hit 4.0 % against the trace's block reuse 17.0 %: the server's prefix cache (500000 tokens) is likely smaller than the trace's working set"; !short || !strings.HasPrefix(line, want) {
		t.Errorf("%q (short %v), want it to start %q", line, short, want)
	}
	st.Summary.CacheHit = metrics.Some(0.15)
	if line, short := st.CacheAgainstTrace(); short || line != "cache hit 15.0 % against the trace's block reuse 17.0 %" {
		t.Errorf("within 5 points: %q (short %v)", line, short)
	}
	st.TraceBlockReuse = nil
	if line, _ := st.CacheAgainstTrace(); line != "" {
		t.Errorf("no trace: %q", line)
	}
}
