package matrix

import (
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// TestAbortedIn: a part stops the matrix when the engine stopped a stage as unreachable, or when its
// last stage got no answer and its failures could not connect; a stage that got answers, or whose
// failures were answers (a 5xx outage), does not.
func TestAbortedIn(t *testing.T) {
	stage := func(n, succeeded int, aborted string, outages ...resultfiles.Outage) *resultfiles.StageReport {
		st := &resultfiles.StageReport{Stage: n, Summary: &metrics.StageSummary{}, Engine: resultfiles.EngineCounts{Aborted: aborted, Outages: outages}}
		st.Summary.Requests.Succeeded = succeeded
		return st
	}
	refused := resultfiles.Outage{Kind: "refused", Requests: 7, FirstMessage: "connection refused"}
	for _, c := range []struct {
		name   string
		stages []*resultfiles.StageReport
		want   string
	}{
		{"no run", nil, ""},
		{"answers", []*resultfiles.StageReport{stage(1, 5, "")}, ""},
		{"engine stopped it", []*resultfiles.StageReport{stage(1, 5, "target unreachable"), stage(2, 9, "")}, "target unreachable"},
		{"last stage refused", []*resultfiles.StageReport{stage(1, 5, ""), stage(2, 0, "", refused)},
			"the target stopped answering: no request of stage 02 succeeded (refused × 7, first: connection refused)"},
		{"earlier stage refused only", []*resultfiles.StageReport{stage(1, 0, "", refused), stage(2, 3, "")}, ""},
		{"5xx is an answer", []*resultfiles.StageReport{stage(1, 0, "", resultfiles.Outage{Kind: "5xx", Requests: 4})}, ""},
	} {
		o := Outcome{Runs: []Run{{Dir: "r", Stages: c.stages}}}
		if got := abortedIn(o); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
