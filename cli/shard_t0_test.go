package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/plload/plload/resultfiles"
)

// TestMergedT0IsTheFirstIssue: with a coordinator every shard's stage.json says t0 = the barrier's
// instant (its schedule's origin), but a closed-loop run's t0 is its first request's issue (docs/measurement.md):
// the merged t0 is the earliest issue over the shards after clock correction, as one process has —
// so the merged stage is the single run's, window and numbers, even with the shards' windows put
// 40 ms before their first sends.
func TestMergedT0IsTheFirstIssue(t *testing.T) {
	src := mergeSource(t)
	single, err := resultfiles.ReadRun(src)
	if err != nil {
		t.Fatal(err)
	}
	offsets := []int64{0, 3_500_000_000, -1_250_000_000}
	dirs := splitRun(t, src, len(offsets), offsets)
	barrierLead := int64(40 * time.Millisecond)
	for _, d := range dirs {
		for k := range single {
			path := filepath.Join(d, fmt.Sprintf("stage_%02d", k+1), "stage.json")
			st := readJSONMap(t, path)
			window := st["summary"].(map[string]any)["window"].(map[string]any)
			t0 := mustInt(t, window["t0_ns"])
			// The barrier's instant: every shard the same on the coordinator's clock, before any send.
			barrier := mustInt(t, singleT0(single[k])) - barrierLead - offsetOf(t, st)
			for _, key := range []string{"t0_ns", "w_ns", "e_ns", "e_eff_ns"} {
				window[key] = json.Number(fmt.Sprint(mustInt(t, window[key]) - t0 + barrier))
			}
			writeJSONMap(t, path, st)
		}
	}
	out := filepath.Join(t.TempDir(), "merged")
	if code, stdout, stderr := plload(t, append(append([]string{"merge"}, dirs...), "--out", out)...); code != 0 {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	merged, err := resultfiles.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	for k := range single {
		if got, want := merged[k].Summary.Window.T0Ns, single[k].Summary.Window.T0Ns; got != want {
			t.Errorf("stage %d: merged t0 %d, want the first issue %d (%+.3f ms off; the barrier was %d ms before it)", k+1, got, want,
				float64(got-want)/1e6, barrierLead/1e6)
		}
		compareMergedStage(t, single[k], merged[k])
	}
}

func singleT0(st *resultfiles.StageReport) json.Number {
	return json.Number(fmt.Sprint(st.Summary.Window.T0Ns))
}

func offsetOf(t *testing.T, st map[string]any) int64 {
	t.Helper()
	return mustInt(t, st["shard"].(map[string]any)["clock_offset_ns"])
}
