package resultfiles

import "fmt"

// NamedRun is one run's stages under the name the lines call it by ("baseline", a directory's name).
type NamedRun struct {
	Name   string
	Stages []*StageReport
}

// WorkloadDiffs says where the same stage number ran a different dataset in different runs, or a
// workload from a different source (file, format or its sha256): then the runs did not measure the
// same workload, and their numbers do not compare directly.
func WorkloadDiffs(runs []NamedRun) []string {
	var out []string
	type seenStage struct{ run, sha, source string }
	first := map[int]seenStage{}
	for _, r := range runs {
		for _, s := range r.Stages {
			f, seen := first[s.Stage]
			source := sourceName(s.Source)
			switch {
			case !seen:
				first[s.Stage] = seenStage{r.Name, s.DatasetSHA256, source}
			case f.source != source:
				out = append(out, fmt.Sprintf("workload differs: stage %02d of %s came from %s, of %s from %s", s.Stage, f.run, f.source, r.Name, source))
			case f.sha != s.DatasetSHA256:
				out = append(out, fmt.Sprintf("workload differs: stage %02d of %s ran dataset %.12s…, of %s %.12s…", s.Stage, f.run, f.sha, r.Name, s.DatasetSHA256))
			}
		}
	}
	return out
}

// sourceName names a stage's source in a line: "synthetic", or its kind, file, format and sha256.
func sourceName(src *SourceInfo) string {
	if src == nil {
		return "the synthetic workload"
	}
	if src.SHA256 == "" { // an AIPerf run: its files do not say which dataset ran
		return fmt.Sprintf("%s %s (%s)", src.Kind, src.File, src.Format)
	}
	return fmt.Sprintf("%s %s (%s, sha256 %.12s…)", src.Kind, src.File, src.Format, src.SHA256)
}
