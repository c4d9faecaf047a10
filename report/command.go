package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/plload/plload/metrics"
)

// CompareOptions are plload report's over results directories: what to print and write.
type CompareOptions struct {
	// Dirs are plload results directories or AIPerf artifact directories, compared in this order.
	Dirs []string
	// By splits every stage by "model" too ("": no split).
	By string
	// Charts redraws each run's charts; HTML, Chart and Handoff are files to write ("": none).
	Charts               bool
	HTML, Chart, Handoff string
	// Tool names plload in the HTML page.
	Tool string
	Out  io.Writer
}

// Compare is plload report DIR...: it reads the runs, prints their comparison (and each stage by
// model when asked), and writes the charts, HTML page, overlay chart and work order asked for. Every
// error is the input's or a file it could not write, and says which.
func Compare(opt CompareOptions) error {
	out := opt.Out
	if len(opt.Dirs) == 0 {
		return fmt.Errorf("report: expected one or more results directories; usage: plload report DIR [DIR...]")
	}
	if by := opt.By; by != "" && by != "model" {
		return fmt.Errorf("report --by %q: accepted: model", by)
	}
	if err := checkNotStageDirs(opt.Dirs); err != nil {
		return err
	}
	runs, err := LoadRuns(opt.Dirs)
	if err != nil {
		return fmt.Errorf("report: %v", err)
	}
	for _, r := range runs {
		if r.RecordsLayout != "" { // say what was read where it was not plload's own stage.json
			fmt.Fprintf(out, "%s: %s\n", r.Name, r.Source())
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(out, "warning: %s: %s\n", r.Name, w)
		}
	}
	fmt.Fprint(out, Comparison(runs))
	if opt.By == "model" {
		for _, r := range runs {
			fmt.Fprintf(out, "\n# %s by model\n", r.Name)
			if r.RecordsLayout != "" {
				fmt.Fprintln(out, "\nAn AIPerf artifact directory: its records carry no model metadata to split by.")
				continue
			}
			text, err := ByModelText(r.Dir, r.Stages)
			if err != nil {
				return fmt.Errorf("report --by model: %s: %v", r.Dir, err)
			}
			fmt.Fprint(out, text)
		}
	}
	if opt.Charts {
		for _, r := range runs {
			if err := WriteCharts(r.Dir, []Run{r}); err != nil {
				return fmt.Errorf("report --charts: %s: %w", r.Dir, err)
			}
			for _, st := range r.Stages {
				if err := StageChartsFromRecords(r.Dir, st); err != nil {
					return fmt.Errorf("report --charts: %s stage %d: %w", r.Dir, st.Stage, err)
				}
			}
			fmt.Fprintf(out, "charts written to %s\n", filepath.Join(absPath(r.Dir), "charts"))
		}
	}
	if file := opt.HTML; file != "" {
		page, err := HTML(runs, opt.Tool, "")
		if err != nil {
			return fmt.Errorf("report --html: %w", err)
		}
		if err := metrics.WriteFileAtomic(file, page); err != nil {
			return fmt.Errorf("report --html: %v", err)
		}
		fmt.Fprintf(out, "HTML report written to %s\n", absPath(file))
	}
	if file := opt.Chart; file != "" {
		if err := WriteOverlay(file, runs); err != nil {
			return fmt.Errorf("report --chart: %v", err)
		}
		fmt.Fprintf(out, "chart written to %s\n", absPath(file))
	}
	if file := opt.Handoff; file != "" {
		text := Handoff(runs, scenarioFileOf(runs[len(runs)-1].Dir))
		if err := metrics.WriteFileAtomic(file, []byte(text)); err != nil {
			return fmt.Errorf("report --handoff: %v", err)
		}
		fmt.Fprintf(out, "\nwork order written to %s\n", absPath(file))
	}
	return nil
}

// checkNotStageDirs refuses a path that is no directory, and a stage directory (stage_NN, its stage.json beside AIPerf's files) given
// for a run: it is neither a results directory nor an AIPerf one, and saying only "no
// stage_NN/stage.json" there sent users looking for a file that is in it.
func checkNotStageDirs(dirs []string) error {
	for _, d := range dirs {
		const takes = "(no stage_NN/stage.json to read): plload report takes plload results directories and AIPerf artifact directories (--records FILE for one records file)"
		if info, err := os.Stat(d); err != nil {
			return fmt.Errorf("report: %s: no such directory %s", d, takes)
		} else if !info.IsDir() {
			return fmt.Errorf("report: %s: a file, not a directory %s", d, takes)
		}
		if _, err := os.Stat(filepath.Join(d, "stage.json")); err != nil {
			continue
		}
		if stages, _ := filepath.Glob(filepath.Join(d, "stage_*", "stage.json")); len(stages) > 0 {
			continue
		}
		return fmt.Errorf("report: %s is one stage of a plload run (it has stage.json): give the run's directory, %s", d, filepath.Dir(filepath.Clean(d)))
	}
	return nil
}

// scenarioFileOf reads the scenario path a run recorded in its report.json, if it still exists.
func scenarioFileOf(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return ""
	}
	var r struct {
		ScenarioFile string `json:"scenario_file"`
	}
	if json.Unmarshal(data, &r) != nil || r.ScenarioFile == "" {
		return ""
	}
	if _, err := os.Stat(r.ScenarioFile); err != nil {
		return ""
	}
	return r.ScenarioFile
}

// absPath is p made absolute, or p itself when it cannot be.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
