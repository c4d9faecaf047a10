package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// `plload report DIR --by model` (docs/scenario.md): a stage whose sessions asked for several models
// (target.models) is summarized again per model, from its own records, in the stage's own window,
// with the same stage code, SLO and price — so each model has its own tables, verdict and cost.

// ModelSplit is one stage split by model: a stage report per model (Name says which), or Note when
// the stage cannot be split.
type ModelSplit struct {
	Stage  *resultfiles.StageReport
	Models []*resultfiles.StageReport
	Note   string // why there is no split ("" when Models is set)
}

// SplitByModel re-summarizes the stage's stage_NN/profile_export.jsonl under runDir once per model
// its records name, in the stage's window (t0, warmup, duration and any interrupt from stage.json).
func SplitByModel(runDir string, st *resultfiles.StageReport) (ModelSplit, error) {
	out := ModelSplit{Stage: st}
	path := filepath.Join(runDir, fmt.Sprintf("stage_%02d", st.Stage), AIPerfRecordsFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		out.Note = "no records to split (profile_export.jsonl was not kept: output.record_requests)"
		return out, nil
	} else if err != nil {
		return out, err
	}
	var models []string
	err = metrics.ReadRecords(f, func(r *metrics.Record) error {
		if r.Model != "" && !slices.Contains(models, r.Model) {
			models = append(models, r.Model)
		}
		return nil
	})
	f.Close()
	if err != nil {
		return out, fmt.Errorf("%s: %w", path, err)
	}
	if len(models) == 0 {
		out.Note = "no model metadata in its records (one model: target.models did not mix several)"
		return out, nil
	}
	slices.Sort(models)
	w := st.Summary.Window
	in := metrics.StageInput{T0Ns: metrics.Some(w.T0Ns), Warmup: time.Duration(w.WNs - w.T0Ns), Duration: time.Duration(w.ENs - w.WNs),
		NeverStarted: -1, SLO: st.SLO, Cost: st.Cost.CostInputs, Replay: workload.ModeOf(st.Mode).TraceClock, Batch: st.Batch != nil}
	if st.Partial {
		in.InterruptNs = metrics.Some(w.EEffNs)
	}
	if in.Duration <= 0 { // a window with nothing in it: SummarizeFile would run it to the last request
		in.Duration = 1
	}
	for _, m := range models {
		in.Keep = func(r *metrics.Record) bool { return r.Model == m }
		sum, err := metrics.SummarizeFile(path, in, false)
		if err != nil {
			return out, err
		}
		per := *st
		per.Summary, per.Batch, per.Server = sum, sum.Batch, nil
		per.Name = "model " + m
		if st.Name != "" {
			per.Name += ", " + st.Name
		}
		out.Models = append(out.Models, &per)
	}
	return out, nil
}

// ByModelText is `plload report --by model` for one run: each stage's tables per model, or why the
// stage has none.
func ByModelText(runDir string, stages []*resultfiles.StageReport) (string, error) {
	var b strings.Builder
	for _, st := range stages {
		split, err := SplitByModel(runDir, st)
		if err != nil {
			return "", fmt.Errorf("stage %02d: %w", st.Stage, err)
		}
		fmt.Fprintf(&b, "\n## Stage %02d by model\n\n", st.Stage)
		if split.Note != "" {
			b.WriteString("Stage " + fmt.Sprintf("%02d", st.Stage) + ": " + split.Note + ".\n")
			continue
		}
		b.WriteString(StageTable(split.Models))
		// The models shared the GPUs: a model's cost columns price the whole deployment against
		// that model's traffic alone, an upper bound, not its share of the bill.
		b.WriteString("\nCost by model charges the whole deployment (gpu_hourly_usd × gpu_count) to each model's own traffic: an upper bound for each, not a split of the bill; the stage's own cost is in the table without --by model.\n")
		var warnings []string
		for _, m := range split.Models {
			for _, w := range m.Summary.Warnings {
				warnings = append(warnings, fmt.Sprintf("- %s: %s\n", m.Name, w))
			}
		}
		if len(warnings) > 0 {
			b.WriteString("\nWarnings:\n\n" + strings.Join(warnings, ""))
		}
	}
	return b.String(), nil
}
