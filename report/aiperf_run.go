package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// The files of an AIPerf artifact directory that plload reads.
const (
	AIPerfRecordsFile = "profile_export.jsonl"
	AIPerfSummaryFile = "profile_export_aiperf.json"
)

// isAIPerfDir reports whether dir is an AIPerf artifact directory rather than a plload run: it has
// AIPerf's records file and no stage_NN/stage.json. A plload stage directory (its stage.json beside
// the same files) is not one.
func isAIPerfDir(dir string) bool {
	if stages, _ := filepath.Glob(filepath.Join(dir, "stage_*", "stage.json")); len(stages) > 0 {
		return false
	}
	if _, err := os.Stat(filepath.Join(dir, "stage.json")); err == nil {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, AIPerfRecordsFile))
	return err == nil
}

// ReadAIPerfRun makes one stage of an AIPerf artifact directory, computed from its records by the
// code that computes plload's stages (over AIPerf's window: metrics.SummarizeRecords). When the
// directory has AIPerf's own summary, the run's warnings name each number where the two disagree.
func ReadAIPerfRun(dir string) (Run, error) {
	records := filepath.Join(dir, AIPerfRecordsFile)
	rs, err := metrics.SummarizeRecords(records, metrics.StageInput{NeverStarted: -1,
		SLO:  metrics.SLOLimits{ErrorRateUnset: true},
		Cost: metrics.CostInputs{GPUCount: 1, ExpectedTurns: 1, Unpriced: true}}, false)
	if err != nil {
		return Run{}, err
	}
	name := filepath.Base(filepath.Clean(dir))
	st := &resultfiles.StageReport{SchemaVersion: resultfiles.SchemaVersion, Tool: "aiperf", Run: name, Stage: 1, Stages: 1, Mode: workload.ModeConcurrency,
		Warmup: "0s", Duration: time.Duration(rs.Window.Seconds * 1e9).Round(time.Millisecond).String(),
		// AIPerf's files do not say which dataset ran: runs read from them compare with each other,
		// and a plload run beside one warns that the workloads may differ.
		Source:  &resultfiles.SourceInfo{Kind: "AIPerf run", File: AIPerfRecordsFile, Format: "records layout " + rs.Layout},
		SLO:     metrics.SLOLimits{ErrorRateUnset: true},
		Cost:    resultfiles.CostInputs{CostInputs: metrics.CostInputs{GPUCount: 1, ExpectedTurns: 1, Unpriced: true}},
		Summary: rs.StageSummary, RecordsKept: true}
	run := Run{Dir: dir, Name: name, Stages: []*resultfiles.StageReport{st}, RecordsLayout: rs.Layout}
	if gpu, problem := aiperfGPU(dir, records, rs.StageSummary); problem != "" {
		run.Warnings = append(run.Warnings, problem)
	} else {
		st.GPU = gpu
	}
	summaryPath := filepath.Join(dir, AIPerfSummaryFile)
	summary, err := metrics.ReadAIPerfSummary(summaryPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return run, nil
	case err != nil:
		run.Warnings = append(run.Warnings, fmt.Sprintf("%s not read: %v", AIPerfSummaryFile, err))
		return run, nil
	}
	run.SummaryLayout = summary.Layout
	st.Concurrency = aiperfConcurrency(summaryPath)
	if d := summary.Disagreements(rs.StageSummary); len(d) > 0 {
		run.Warnings = append(run.Warnings, disagreementWarning(d))
	}
	return run, nil
}

// disagreementWarning is one line for all the numbers where AIPerf's summary and plload's
// recomputation differ: the first few, and how many more (they usually share one cause).
func disagreementWarning(d []string) string {
	const shown = 3
	list := strings.Join(d[:min(shown, len(d))], "; ")
	if len(d) > shown {
		list += fmt.Sprintf("; and %d more", len(d)-shown)
	}
	numbers := "numbers"
	if len(d) == 1 {
		numbers = "number"
	}
	return fmt.Sprintf("AIPerf's %s disagrees with plload's recomputation from %s (by more than %g relative) in %d %s: %s",
		AIPerfSummaryFile, AIPerfRecordsFile, metrics.SummaryAgreeTolerance, len(d), numbers, list)
}

// aiperfConcurrency is the concurrency AIPerf ran at, from its summary's input_config (0: not said).
func aiperfConcurrency(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var s struct {
		InputConfig struct {
			Loadgen struct {
				Concurrency float64 `json:"concurrency"`
			} `json:"loadgen"`
		} `json:"input_config"`
	}
	if json.Unmarshal(data, &s) != nil {
		return 0
	}
	return int(s.InputConfig.Loadgen.Concurrency)
}

// Source says where a run was read from, for the lines before the comparison: plload's stage.json
// files, or an AIPerf directory with the layouts of its records and summary.
func (r Run) Source() string {
	if r.RecordsLayout == "" {
		return "plload results (stage_NN/stage.json)"
	}
	s := fmt.Sprintf("AIPerf run: %s in the %s layout", AIPerfRecordsFile, r.RecordsLayout)
	if r.SummaryLayout != "" {
		s += fmt.Sprintf(", %s in the %s layout", AIPerfSummaryFile, r.SummaryLayout)
	}
	return s
}

// aiperfGPU is the GPU telemetry of an AIPerf run (its gpu_telemetry_export.jsonl, in either of
// AIPerf's layouts) over the records' window, as plload summarizes its own: nil without the file,
// and a warning for one that cannot be read.
func aiperfGPU(dir, records string, sum *metrics.StageSummary) (*metrics.GPUSummary, string) {
	f, err := os.Open(filepath.Join(dir, metrics.AIPerfGPUTelemetryFile))
	if err != nil {
		return nil, ""
	}
	defer f.Close()
	samples, err := metrics.ReadAIPerfGPUTelemetry(f)
	if err != nil {
		return nil, fmt.Sprintf("%s not read: %v", metrics.AIPerfGPUTelemetryFile, err)
	}
	work, _ := metrics.ReadWindowWork(records, sum.Window.WNs, sum.Window.EEffNs)
	gpu := metrics.SummarizeGPU(samples, metrics.GPUWindow{WNs: sum.Window.WNs, EEffNs: sum.Window.EEffNs, Work: work})
	sum.Warnings = append(sum.Warnings, gpu.Warnings...)
	return &gpu, ""
}
