package report

import (
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
)

// TestLatencyCellsNeverChangeWithTheSLO: a latency cell is mean/median/p90/p95/p99 with or without an
// SLO, and whichever statistic the SLO limits (in bold; a limit on the max adds max after them, in
// bold, so the value judged is in the table); ‡ marks
// a cell of fewer than 20 requests and nothing else, and the footnotes appear only with their marks.
func TestLatencyCellsNeverChangeWithTheSLO(t *testing.T) {
	d := metrics.Dist{N: 20, Mean: 110, P50: 100, P90: 150, P95: 170, P99: 190, Max: 200}
	for _, tc := range []struct {
		name    string
		limited map[string]bool
		n       int
		want    string
	}{
		{"no SLO", nil, 20, "110/100/150/170/190"},
		{"ttft p95", map[string]bool{metrics.SLOStatP95: true}, 20, "110/100/150/**170**/190"},
		{"ttft p90 and p99", map[string]bool{metrics.SLOStatP90: true, metrics.SLOStatP99: true}, 20, "110/100/**150**/170/**190**"},
		{"ttft max: a max after the five", map[string]bool{metrics.SLOStatMax: true}, 20, "110/100/150/170/190/**200**"},
		{"19 requests", nil, 19, "110/100/150/170/190 ‡"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := columns{limited: map[string]map[string]bool{metrics.SLOMetricTTFT: tc.limited}, withMax: tc.limited[metrics.SLOStatMax]}
			d := d
			d.N = tc.n
			if got := c.statCell(metrics.SLOMetricTTFT, d); got != tc.want {
				t.Errorf("cell %q, want %q", got, tc.want)
			}
			header := "TTFT mean/median/p90/p95/p99"
			if c.withMax {
				header += "/max"
			}
			if got := c.statHeader("TTFT", metrics.SLOMetricTTFT); got != header {
				t.Errorf("header %q, want %q", got, header)
			}
		})
	}
	if got := tableFootnotes([]table{{rows: [][]string{{"01", "c=2", "110/100/150/170/190"}}}}); got != "" {
		t.Errorf("footnotes without a mark: %q", got)
	}
	got := tableFootnotes([]table{{rows: [][]string{{"01", "c=2", "110/100/150/**170**/190 ‡"}}}})
	if !strings.Contains(got, "In bold: the statistic the SLO limits.") || !strings.Contains(got, "‡: the percentiles rest on fewer than 20 requests") {
		t.Errorf("footnotes: %q", got)
	}
}
