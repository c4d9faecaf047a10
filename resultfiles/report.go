package resultfiles

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// Report is report.json: the run and all its stages.
type Report struct {
	SchemaVersion int       `json:"schema_version"`
	Tool          string    `json:"tool"`
	Run           string    `json:"run"`
	ScenarioFile  string    `json:"scenario_file"`
	Command       string    `json:"command"`
	Seed          uint64    `json:"seed"`
	Started       time.Time `json:"started"`
	Finished      time.Time `json:"finished"`
	Interrupted   bool      `json:"interrupted"`
	// HeadlineText is the headline in plain text; Headline the same line in Markdown, as report.md
	// and the terminal show it.
	HeadlineText  string         `json:"headline"`
	Headline      string         `json:"-"`
	HeadlineStage *int           `json:"headline_stage"` // null: none
	Stages        []*StageReport `json:"stages"`
	// Shard is this process's part of a sharded run; absent when the run is not sharded.
	Shard *ShardInfo `json:"shard,omitempty"`
	// Tokenizer is what every length plload chose was counted in (docs/tokenizers.md).
	Tokenizer *TokenizerInfo `json:"tokenizer,omitempty"`
}

// Meta is what the report says about how the run was made.
type Meta struct {
	Tool, ScenarioFile, Command string
	Started, Finished           time.Time
	Interrupted                 bool
	Shard                       *ShardInfo // nil: not sharded
}

// New assembles a run's report from its stage reports.
func New(sc *workload.Scenario, stages []*StageReport, m Meta) *Report {
	r := &Report{SchemaVersion: SchemaVersion, Tool: m.Tool, Run: sc.Name, ScenarioFile: m.ScenarioFile,
		Command: m.Command, Seed: sc.Seed, Started: m.Started, Finished: m.Finished, Interrupted: m.Interrupted,
		Stages: stages, Headline: HeadlineLine(stages), HeadlineText: HeadlineText(stages), Shard: m.Shard,
		Tokenizer: tokenizerInfo(sc)}
	if r.Stages == nil {
		r.Stages = []*StageReport{} // [] in JSON, never null
	}
	sums := make([]*metrics.StageSummary, len(stages))
	for i, s := range stages {
		sums[i] = s.Summary
	}
	if best := metrics.Headline(sums); best >= 0 {
		r.HeadlineStage = &stages[best].Stage
	}
	return r
}

// Write writes report.json into dir (atomically). The files people read beside it (report.md,
// report.html, charts) are the renderer's: see Renderer.
func (r *Report) Write(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "report.json"), append(data, '\n'))
}

// Renderer writes the files people read about a run (report.md, report.html and its charts) into
// dir, beside the report.json that Report.Write wrote. The packages that run or merge runs are
// handed one by the command rather than importing the renderer (package report), so they do not
// link its charts and Markdown.
type Renderer func(dir string, sc *workload.Scenario, r *Report) error

// Warnings lists every stage's warnings, prefixed with the stage: first the replays that could not
// keep their trace's pace (ReplayWarnings), then each stage's own.
func (r *Report) Warnings() []string {
	out := ReplayWarnings(r.Stages)
	for _, s := range r.Stages {
		for _, w := range s.Summary.Warnings {
			if line := fmt.Sprintf("stage %02d: %s", s.Stage, w); !slices.Contains(out, line) {
				out = append(out, line)
			}
		}
	}
	return out
}

// SLOText lists every limit the scenario sets, "TTFT p95 ≤ 500ms, TPOT p99 ≤ 50ms, error rate ≤
// 1%" (the turn-1 keys as TTFT p95 and ITL p95), in the order stages are judged by them; "" when
// it sets none.
func SLOText(slo workload.SLO) string {
	var parts []string
	for _, l := range slo.LatencyLimits() {
		parts = append(parts, fmt.Sprintf("%s %s ≤ %s", strings.ToUpper(l.Metric), l.Stat, workload.Duration(l.Limit)))
	}
	if v, ok := slo.ErrorRateLimit(); ok {
		parts = append(parts, fmt.Sprintf("error rate ≤ %s%%", strconv.FormatFloat(math.Round(v*1e8)/1e6, 'g', -1, 64))) // as the tables show it
	}
	return strings.Join(parts, ", ")
}
