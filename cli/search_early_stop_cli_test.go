package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/search"
)

// TestSearchProbeStopsEarly: a probe whose SLO failure is already certain is ended by the engine's
// StopWhen (search.EarlyStop, wired in search/prober's probe) long before its 20 s window is over. On the
// embedded mock (TTFT 50 ms) against a 5 ms limit, one probe at 1 session:
//   - a max limit fails on the window's first request: the probe stops within about a second;
//   - a p95 limit can fail only after a quarter of the window (5 s) and 30 samples: it stops then.
//
// Each case checks the probe's reason in stdout and search.json ("stopped early, the load could no
// longer pass: …"), the stage's run.log ("stage stopped early"), its stage.json (the configured 20s
// duration, a measured window far shorter, marked partial), and that the whole command ended well
// before the 20 s a probe run to its end would take. Without the StopWhen wiring the probe runs its
// full 20 s and fails on its records alone ("ttft max is …"), so every one of these fails.
func TestSearchProbeStopsEarly(t *testing.T) {
	const duration = 20 * time.Second
	for _, tc := range []struct {
		name, slo  string
		reason     string        // in the probe's reason after "stopped early, the load could no longer pass: "
		maxWindow  time.Duration // the measured window is at most this
		maxCommand time.Duration // the whole command ends within this
	}{
		{"max limit", "{ttft: {max: 5ms}}", "ttft max cannot be met: a request of the window took longer than 5.00 ms", 2 * time.Second, 8 * time.Second},
		{"p95 limit", "{ttft: {p95: 5ms}}", "ttft p95 cannot be met: ", 10 * time.Second, 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := fmt.Sprintf(`name: early
seed: 3
target: {base_url: mock, mock: {ttft: 50ms, tps: 200}, timeout: 10s}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
session: {turns: 1, user_input_tokens: {min: 5, max: 15}, max_output_tokens: {min: 5, max: 10}, think_time: 0s}
load:
  mode: concurrency
  drain_timeout: 10s
  session_pool_factor: 100
  stages:
    - {concurrency: 1, warmup: 200ms, duration: %s}
slo: %s
cost: {gpu_hourly_usd: 1}
`, duration, tc.slo)
			path := filepath.Join(t.TempDir(), "early.yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			start := time.Now()
			code, stdout, stderr := plload(t, "search", path, "--start", "1", "--max", "1", "--repeats", "1", "--out", out)
			took := time.Since(start)
			t.Logf("the command took %s", took.Round(time.Millisecond))
			if code == 1 && strings.Contains(stderr, "the client was") {
				t.Skipf("the client was strained, so the probe was judged invalid: this machine is too busy for the test\n%s\n%s", stdout, stderr)
			}
			dirs, _ := filepath.Glob(filepath.Join(out, "early-*"))
			if code != 1 || len(dirs) != 1 || !strings.Contains(stderr, "no probe met the SLO") {
				t.Fatalf("exit %d (want 1, no probe met the SLO), results %v\n%s\n%s", code, dirs, stdout, stderr)
			}
			dir := dirs[0]
			if took > tc.maxCommand {
				t.Errorf("the command took %s, want < %s: the %s probe was not stopped early", took, tc.maxCommand, duration)
			}
			want := "stopped early, the load could no longer pass: " + tc.reason
			if !strings.Contains(stdout, "probe 01 (stage 01): 1 session — fail: ") || !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks the probe's line with %q:\n%s", want, stdout)
			}

			// search.json: one probe, failed, its reason says it was stopped early and why.
			data, err := os.ReadFile(filepath.Join(dir, "search.json"))
			if err != nil {
				t.Fatal(err)
			}
			var sf resultfiles.Search
			if err := json.Unmarshal(data, &sf); err != nil {
				t.Fatal(err)
			}
			if len(sf.Probes) != 1 || sf.Best != nil {
				t.Fatalf("search.json: best %v, probes %+v; want one failed probe", sf.Best, sf.Probes)
			}
			if p := sf.Probes[0]; p.Value != 1 || p.Stage != 1 || search.Verdict(p.Verdict) != search.Fail || !strings.Contains(p.Reason, want) {
				t.Errorf("search.json probe %+v; want 1 session, stage 1, fail with %q", p, want)
			}

			// run.log: the engine ended the stage on StopWhen's word.
			log, err := os.ReadFile(filepath.Join(dir, "stage_01", "run.log"))
			if err != nil || !strings.Contains(string(log), `msg="stage stopped early" stage=1 reason="`+strings.TrimSuffix(tc.reason, " ")) {
				t.Errorf("stage_01/run.log has no \"stage stopped early\" line with %q (%v):\n%s", tc.reason, err, log)
			}

			// stage.json: the configured 20 s, a measured window far shorter.
			var st struct {
				Duration string `json:"duration"`
				Partial  bool   `json:"partial"`
				Summary  struct {
					Window struct {
						Seconds float64 `json:"seconds"`
					} `json:"window"`
					Requests struct {
						InWindow int `json:"in_window"`
					} `json:"requests"`
				} `json:"summary"`
			}
			data, err = os.ReadFile(filepath.Join(dir, "stage_01", "stage.json"))
			if err == nil {
				err = json.Unmarshal(data, &st)
			}
			if err != nil {
				t.Fatal(err)
			}
			window := time.Duration(st.Summary.Window.Seconds * float64(time.Second))
			t.Logf("stage.json: duration %s, measured window %s, %d requests in it, partial %v", st.Duration, window.Round(time.Millisecond), st.Summary.Requests.InWindow, st.Partial)
			if st.Duration != duration.String() {
				t.Errorf("stage.json duration %q, want the configured %s", st.Duration, duration)
			}
			if window <= 0 || window > tc.maxWindow || st.Summary.Requests.InWindow < 1 {
				t.Errorf("stage.json window %s with %d requests; want a window in (0, %s] of the configured %s", window, st.Summary.Requests.InWindow, tc.maxWindow, duration)
			}
			if !st.Partial {
				t.Errorf("stage.json: a stage whose window was cut short is not marked partial")
			}
		})
	}
}
