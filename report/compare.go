package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/plload/plload/resultfiles"
)

// Run is one results directory's stages, for comparison.
type Run struct {
	Dir    string
	Name   string // the directory's base name
	Stages []*resultfiles.StageReport
	// RecordsLayout is the layout of an AIPerf directory's records (metrics.LayoutEarly, Layout03,
	// LayoutCurrent) and SummaryLayout that of its profile_export_aiperf.json (empty: none); both
	// are empty for a plload results directory.
	RecordsLayout, SummaryLayout string
	// Warnings are about reading this run: where AIPerf's own summary disagrees with plload's
	// recomputation from the records.
	Warnings []string
}

// LoadRuns reads stage.json of every stage of each directory; an AIPerf artifact directory (its
// profile_export.jsonl, no stage_NN/) is computed from its records as a one-stage run.
func LoadRuns(dirs []string) ([]Run, error) {
	var runs []Run
	for _, d := range dirs {
		if isAIPerfDir(d) {
			r, err := ReadAIPerfRun(d)
			if err != nil {
				return nil, err
			}
			runs = append(runs, r)
			continue
		}
		stages, err := resultfiles.ReadRun(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, Run{Dir: d, Name: filepath.Base(filepath.Clean(d)), Stages: stages})
	}
	return runs, nil
}

// WorkloadWarnings says where the same stage number ran a different workload in different runs
// (resultfiles.WorkloadDiffs).
func WorkloadWarnings(runs []Run) []string {
	named := make([]resultfiles.NamedRun, len(runs))
	for i, r := range runs {
		named[i] = resultfiles.NamedRun{Name: r.Name, Stages: r.Stages}
	}
	return resultfiles.WorkloadDiffs(named)
}

// Comparison is the text `plload report` prints: warnings (workloads that differ, replays that lost
// their trace's pace), each run's headline, one table of all stages.
func Comparison(runs []Run) string {
	var b strings.Builder
	for _, w := range WorkloadWarnings(runs) {
		b.WriteString("warning: " + w + "\n")
	}
	for _, r := range runs {
		for _, w := range resultfiles.ReplayWarnings(r.Stages) {
			b.WriteString("warning: " + r.Name + ": " + w + "\n")
		}
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	for _, r := range runs {
		fmt.Fprintf(&b, "%s: %s\n", r.Name, resultfiles.HeadlineLine(r.Stages))
	}
	b.WriteString("\n" + stageTables(rowsOf(runs), len(runs) > 1))
	b.WriteString(turnsSection(rowsOf(runs), len(runs) > 1))
	return b.String()
}
