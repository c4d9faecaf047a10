package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunADataset: a scenario naming an openai conversation file (relative to the scenario, which
// lies in another folder) runs on the mock; stage.json says where the workload came from (file,
// format, the file's sha256, lines used, options), report.md says so too, and the prompts' text
// appears in no report, log or terminal line.
func TestRunADataset(t *testing.T) {
	dir := t.TempDir()
	chats := `{"messages": [{"role": "system", "content": "You are CONFIDENTIAL-persona."}, {"role": "user", "content": "CONFIDENTIAL question one"}, {"role": "assistant", "content": "x"}, {"role": "user", "content": "CONFIDENTIAL question two"}]}
{"messages": [{"role": "user", "content": "CONFIDENTIAL single question"}]}
`
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	os.WriteFile(filepath.Join(dir, "data", "chats.jsonl"), []byte(chats), 0o644)
	scenario := filepath.Join(dir, "ds.yaml")
	os.WriteFile(scenario, []byte(`name: ds
seed: 1
target:
  base_url: mock
  mock: {ttft: 5ms, tps: 1000}
workload:
  dataset: {file: data/chats.jsonl, format: openai, output_tokens: 8}
session: {think_time: 10ms}
load:
  mode: concurrency
  stages:
    - {concurrency: 2, duration: 1s}
slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}
cost: {gpu_hourly_usd: 1}
`), 0o644)
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", scenario, "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "CONFIDENTIAL") {
		t.Fatalf("prompt text on the terminal:\n%s\n%s", stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "ds-*"))
	if len(dirs) != 1 {
		t.Fatalf("results: %v", dirs)
	}
	checkRunMatchesSchema(t, dirs[0])
	data, _ := os.ReadFile(filepath.Join(dirs[0], "stage_01", "stage.json"))
	var st struct {
		Source struct {
			Kind, File, Format, SHA256 string
			Lines                      int `json:"lines"`
			LinesUsed                  int `json:"lines_used"`
			Options                    map[string]any
		} `json:"source"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(chats))
	if st.Source.Kind != "dataset" || st.Source.File != "data/chats.jsonl" || st.Source.Format != "openai" || st.Source.SHA256 != hex.EncodeToString(sum[:]) ||
		st.Source.Lines != 2 || st.Source.LinesUsed != 2 || st.Source.Options["history"] != "live" {
		t.Fatalf("stage.json source: %+v", st.Source)
	}
	for _, f := range []string{"report.md", "report.json", "report.html", "stage_01/stage.json", "stage_01/run.log", "stage_01/profile_export.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(dirs[0], f))
		if strings.Contains(string(b), "CONFIDENTIAL") {
			t.Errorf("%s holds prompt text", f)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dirs[0], "report.md"))
	if !strings.Contains(string(md), "Source: dataset `data/chats.jsonl` (format openai, sha256 "+st.Source.SHA256) {
		t.Errorf("report.md does not say where the workload came from:\n%s", md)
	}
	// The resolved scenario runs again from another folder: the dataset's path is absolute there.
	code, stdout, stderr = plload(t, "validate", filepath.Join(dirs[0], "scenario.resolved.yaml"))
	if code != 0 {
		t.Fatalf("validate scenario.resolved.yaml: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
