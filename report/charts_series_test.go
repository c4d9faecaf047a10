package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plload/plload/metrics"
)

// TestRollingMean: the centred 5-second mean of per-second counts, fewer seconds at the ends, NaN
// seconds skipped (and NaN where a window has no value).
func TestRollingMean(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		in, out []float64
	}{
		{"a steady 1 req/s read as 0s and 3s", []float64{0, 3, 0, 0, 3, 0, 0, 3}, []float64{1, 0.75, 1.2, 1.2, 0.6, 1.2, 1.5, 1}},
		{"NaNs skipped", []float64{nan, 2, nan, nan, nan, nan, nan}, []float64{2, 2, 2, 2, nan, nan, nan}},
		{"empty", []float64{}, []float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.out, rollingMean(tc.in, 5), cmpopts.EquateNaNs(), cmpopts.EquateApprox(0, 1e-12)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestTimeSeriesHasAnErrorsPanel: an outage — every request failing for seconds — shows in the time
// series as errors/s, beside the requests answered, with the rolling mean's legend.
func TestTimeSeriesHasAnErrorsPanel(t *testing.T) {
	_, stages := goldenStages(t)
	st := stages[0]
	recs := []*metrics.Record{rec(1.5, 100, 10, "a"), rec(2.5, 120, 10, "b")}
	for i := range 6 { // an outage: refused connections from 3 s
		r := rec(3+0.5*float64(i), 100, 10, "c")
		r.Error = &metrics.RecordError{Type: metrics.ErrTypeConnect, Message: "cannot connect"}
		recs = append(recs, r)
	}
	s := metrics.Series(recs, st.Summary)
	if s.ErrorsPerSec[3] != 2 || s.ErrorsPerSec[4] != 2 || s.ErrorsPerSec[5] != 2 || s.ReqPerSec[3] != 0 {
		t.Fatalf("errors/s %v, req/s %v", s.ErrorsPerSec, s.ReqPerSec)
	}
	dir := t.TempDir()
	if err := WriteStageCharts(dir, st, s); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "charts", "stage_01_timeseries.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"errors/s", "requests answered/s", "requests sent/s", "5 s rolling mean", "each second"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the time series lacks %q", want)
		}
	}
}

// TestHTMLStageTableAboveTheFold: report.html shows the stage tables right after the headline and
// its verdict, before any chart: the numbers are the first thing read.
func TestHTMLStageTableAboveTheFold(t *testing.T) {
	_, stages := goldenStages(t)
	page, err := HTML([]Run{{Name: "run", Stages: stages}}, "plload test", "")
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	verdict, table, chart := strings.Index(s, `class="verdict"`), strings.Index(s, "<table>"), strings.Index(s, "<svg")
	if verdict < 0 || table < 0 || chart < 0 || !(verdict < table && table < chart) {
		t.Errorf("verdict at %d, first table at %d, first chart at %d: want verdict, then the table, then the charts", verdict, table, chart)
	}
}
