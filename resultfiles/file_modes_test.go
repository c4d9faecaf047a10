package resultfiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/plload/plload/metrics"
)

// TestStageFilesAreWorldReadable: every file a stage writes — stage.json, AIPerf's summaries and
// vllm_bench_result.json — is mode 0644, as results meant to be shared are (a temporary file is
// created 0600, and the vLLM file once kept it).
func TestStageFilesAreWorldReadable(t *testing.T) {
	dir := t.TempDir()
	st := &StageReport{SchemaVersion: SchemaVersion, Tool: "plload test", Run: "modes", Stage: 1, Stages: 1,
		Summary: &metrics.StageSummary{}}
	if err := st.Write(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		seen[e.Name()] = true
		if perm := info.Mode().Perm(); perm != 0o644 {
			t.Errorf("%s: mode %v, want -rw-r--r--", e.Name(), info.Mode())
		}
	}
	for _, name := range []string{"stage.json", VLLMResult} {
		if !seen[name] {
			t.Errorf("%s not written (wrote %v)", name, seen)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "profile_export.jsonl")); err == nil {
		t.Error("no records were given: none should appear")
	}
}
