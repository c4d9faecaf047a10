package resultfiles

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plload/plload/metrics"
)

// BrokenBy is how SLOBroken names what stages broke: stage by stage, or once for the repeats of one
// load.
type BrokenBy int

const (
	// BrokenPerStage names each stage that failed its SLO: "stage 02 broke ITL p95 122 ms > 50 ms"
	// ("stage 02 failed it" when its verdict is FAIL but no broken limit is on record), and, where its
	// client was strained, that its latencies may read longer than the server's, naming the strain's
	// largest cause. What plload run, gate and search say of a run's stages.
	BrokenPerStage BrokenBy = iota
	// BrokenPerLoad names each distinct set of broken limits once, without stage numbers: the stages
	// are repeats of one load (plload matrix), which ask the same question again, so "stage 01 broke X;
	// stage 01 broke X" would say nothing more than "X".
	BrokenPerLoad
)

// SLOBroken says what the stages broke of their SLO, in the stage tables' words, joined by "; ": the
// one wording every final line that explains "no stage met the SLO" uses. Stages that did not fail
// it (no FAIL verdict, no broken limit) are left out; "" when none did.
func SLOBroken(stages []*StageReport, by BrokenBy) string {
	var out []string
	for _, st := range stages {
		limits := st.Summary.SLO.Broken()
		if limits == "" && st.Summary.SLO.Verdict != metrics.SLOFail {
			continue
		}
		if by == BrokenPerLoad {
			if limits != "" && !slices.Contains(out, limits) {
				out = append(out, limits)
			}
			continue
		}
		text := fmt.Sprintf("stage %02d failed it", st.Stage)
		if limits != "" {
			text = fmt.Sprintf("stage %02d broke %s", st.Stage, limits)
		}
		if cause := st.Injector.Cause(); cause != "" {
			text += fmt.Sprintf(" (its client was strained: %s; its latencies may read longer than the server's, never shorter)", cause)
		}
		out = append(out, text)
	}
	return strings.Join(out, "; ")
}
