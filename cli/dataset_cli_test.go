package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

// TestValidateWarnsOfADryDatasetPool: `validate` of a dataset scenario whose stages start more
// sessions than the file has conversations (scenarios/dataset-chat.yaml: 6 conversations, about 8
// and 17 sessions) warns of each such stage, the second one saying the earlier stage sent them all;
// a file with conversations to spare, and a synthetic scenario with session_reuse fresh (which draws
// new sessions past its pool) however long its stage, do not.
func TestValidateWarnsOfADryDatasetPool(t *testing.T) {
	dir := t.TempDir()
	var many strings.Builder
	for i := range 400 {
		fmt.Fprintf(&many, `{"messages": [{"role": "user", "content": "question number %d"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "many.jsonl"), []byte(many.String()), 0o644)
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(text), 0o644)
		return path
	}
	ample := write("ample.yaml", `name: ample
seed: 1
target: {base_url: mock, mock: {ttft: 200ms, tps: 40}}
workload: {dataset: {file: many.jsonl, format: openai}}
load:
  mode: concurrency
  stages: [{concurrency: 2, warmup: 2s, duration: 8s}]
slo: {e2e: {p95: 10s}}
cost: {gpu_hourly_usd: 1}
`)
	fresh := write("fresh.yaml", `name: fresh
seed: 1
target: {base_url: mock, mock: {ttft: 200ms, tps: 40}}
personas: {count: 2, system_prompt_tokens: 20}
session: {turns: 2, user_input_tokens: 10, max_output_tokens: 8, think_time: 0s}
load:
  mode: concurrency
  session_reuse: fresh
  stages: [{concurrency: 2, duration: 600s, sessions: 2}]
slo: {e2e: {p95: 10s}}
cost: {gpu_hourly_usd: 1}
`)
	for _, tc := range []struct {
		name, path string
		want       []string // each in the output; none: "no warnings"
	}{
		{"dataset-chat", "scenarios/dataset-chat.yaml", []string{
			"load.stages[0]: the pool of 6 sessions is likely to run dry (about 8 sessions will start",
			"data/chats.jsonl has 6 conversations): conversations will be sent again (load.session_reuse: wrap)",
			"load.stages[1]: the pool of 6 sessions is likely to run dry",
			"has 6 conversations, 0 of them not sent by an earlier stage"}},
		{"dataset with conversations to spare", ample, nil},
		{"synthetic fresh", fresh, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := plload(t, "validate", tc.path)
			out := stdout + stderr
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, out)
			}
			if len(tc.want) == 0 {
				if strings.Contains(out, "likely to run dry") || !strings.Contains(out, "no warnings") {
					t.Errorf("want no warnings:\n%s", out)
				}
				return
			}
			if strings.Contains(out, "no warnings") {
				t.Errorf("said no warnings:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
