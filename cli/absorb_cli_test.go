package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAbsorbFromTheCommandLine: the scenario's mock keys reach the embedded mock (one slot that
// becomes eight a set time after its first request), --window reaches slo.window, and the rising
// stage's stage.json says when the overload was absorbed — after the slots grew, not before.
func TestAbsorbFromTheCommandLine(t *testing.T) {
	if testing.Short() {
		t.Skip("a 7 s run")
	}
	scenario := filepath.Join(t.TempDir(), "absorb.yaml")
	os.WriteFile(scenario, []byte(`name: absorb
seed: 1
target: {base_url: mock, model: m, mock: {ttft: 50ms, tps: 400, max_concurrency: 1, scale_max_concurrency: 8, scale_after: 3s}}
personas: {count: 1, system_prompt_tokens: 10}
session: {turns: 1, user_input_tokens: 10, max_output_tokens: 8, think_time: 0s}
slo: {ttft: {p95: 150ms}}
load:
  mode: concurrency
  stages:
    - {concurrency: 1, duration: 1s, warmup: 0s}
    - {concurrency: 6, duration: 6s, warmup: 0s}
`), 0o644)
	out := t.TempDir()
	code, stdout, stderr := plload(t, "run", scenario, "--window", "1s", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "absorb-*"))
	if len(dirs) != 1 {
		t.Fatalf("results directories %v", dirs)
	}
	resolved, _ := os.ReadFile(filepath.Join(dirs[0], "scenario.resolved.yaml"))
	if !strings.Contains(string(resolved), "window: 1s") {
		t.Errorf("--window 1s is not in scenario.resolved.yaml:\n%s", resolved)
	}
	var st struct {
		Summary struct {
			Absorb *struct {
				WindowS         float64  `json:"window_s"`
				FirstViolationS *float64 `json:"first_violation_s"`
				AbsorbedS       *float64 `json:"absorbed_s"`
			} `json:"absorb"`
		} `json:"summary"`
	}
	data, err := os.ReadFile(filepath.Join(dirs[0], "stage_02", "stage.json"))
	if err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("stage_02/stage.json: %v", err)
	}
	a := st.Summary.Absorb
	t.Logf("absorb: %+v; terminal:\n%s", a, stdout)
	// Stage 2 starts about 1 s after the mock's first request, so its slots grow about 2 s into it;
	// the queue of six sessions on one slot then drains within a window.
	if a == nil || a.WindowS != 1 || a.FirstViolationS == nil || a.AbsorbedS == nil || *a.AbsorbedS < 1 || *a.AbsorbedS > 4 {
		t.Fatalf("stage 2 absorb %+v: want window 1 s, a violation, and absorbed between 1 and 4 s", a)
	}
	if !strings.Contains(stdout, "absorbed") {
		t.Errorf("the terminal does not say when the stage absorbed its load:\n%s", stdout)
	}
}
