package report

import (
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// turnsStage is a stage whose turns had the given mean request bytes, with a cache hit and a TTFT
// per turn.
func turnsStage(bytes ...float64) *resultfiles.StageReport {
	sum := &metrics.StageSummary{}
	for i, b := range bytes {
		sum.ByTurn = append(sum.ByTurn, metrics.TurnNumbers{Turn: i, Requests: 3, TTFTMeanMs: metrics.Some(100 + float64(i)), RequestBytesMean: metrics.Some(b)})
		sum.CacheHitByTurn = append(sum.CacheHitByTurn, metrics.TurnCacheHit{Turn: i, Requests: 3, CacheHit: metrics.Some(0.5 + 0.1*float64(i))})
	}
	return &resultfiles.StageReport{Stage: 1, Summary: sum}
}

// `plload report A B` shows the two runs turn by turn side by side: each turn's cache hit, mean
// TTFT and mean bytes sent, one column per run under each; a single run's report.md has the same
// section with one column each; stages of one turn, or without request_bytes, have none.
func TestTurnsSideBySide(t *testing.T) {
	runs := []Run{
		{Name: "client", Stages: []*resultfiles.StageReport{turnsStage(4000, 6000, 8000)}},
		{Name: "server", Stages: []*resultfiles.StageReport{turnsStage(4000, 1500, 1600)}},
	}
	text := Comparison(runs)
	for _, want := range []string{
		"## By turn",
		"| turn | cache hit client | cache hit server | TTFT mean (ms) client | TTFT mean (ms) server | bytes sent mean client | bytes sent mean server |",
		"| 1 | 50.0% | 50.0% | 100 | 100 | 4000 B | 4000 B |",
		"| 2 | 60.0% | 60.0% | 101 | 101 | 6000 B | 1500 B |",
		"| 3 | 70.0% | 70.0% | 102 | 102 | 8000 B | 1600 B |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, text)
		}
	}
	one := sections(rowsOf(runs[:1]), false, nil)
	if !strings.Contains(one, "| turn | cache hit | TTFT mean (ms) | bytes sent mean |") || !strings.Contains(one, "| 3 | 70.0% | 102 | 8000 B |") {
		t.Errorf("one run's sections:\n%s", one)
	}
	for name, st := range map[string]*resultfiles.StageReport{"one turn": turnsStage(4000), "no by_turn": {Stage: 1, Summary: &metrics.StageSummary{}}} {
		if got := turnsSection(rowsOf([]Run{{Name: "x", Stages: []*resultfiles.StageReport{st}}}), false); got != "" {
			t.Errorf("%s: %s", name, got)
		}
	}
	// Runs that differ in target.history say which held the conversation in every column's name.
	a, b := turnsStage(4000, 6000), turnsStage(4000, 1500)
	a.Target.History, b.Target.History = "client", "server"
	named := Comparison([]Run{{Name: "run-a", Stages: []*resultfiles.StageReport{a}}, {Name: "run-b", Stages: []*resultfiles.StageReport{b}}})
	if !strings.Contains(named, "| turn | cache hit run-a (history client) | cache hit run-b (history server) |") {
		t.Errorf("the columns do not name each run's history:\n%s", named)
	}
	if got := bytesText(123456); got != "123.5 kB" {
		t.Errorf("bytesText(123456) = %s", got)
	}
}
