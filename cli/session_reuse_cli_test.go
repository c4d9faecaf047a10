package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDatasetRepeatsAreAStageWarning: a dataset of two conversations runs through many more
// sessions on the mock, so it starts over again and again. stage.json and report.md carry the
// dataset-reuse warning with the repeats' share of the sessions started and the cache hit of
// their requests beside the new ones'. By default (wrap) each repeat carries a nonce after the
// system prompt, and the warning says so, so the mock's prefix cache answers a repeat's persona
// only; wrap_identical sends repeats byte for byte, the warning says that no nonce kept them off the
// cache, and the mock answers their whole prompt from it.
func TestDatasetRepeatsAreAStageWarning(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("tell me more about the harbour and its old boats ", 12)
	chats := fmt.Sprintf(`{"messages": [{"role": "system", "content": "You are a patient guide to the old harbour."}, {"role": "user", "content": "first: %s"}]}
{"messages": [{"role": "system", "content": "You are a patient guide to the old harbour."}, {"role": "user", "content": "second: %s"}]}
`, long, long)
	os.WriteFile(filepath.Join(dir, "chats.jsonl"), []byte(chats), 0o644)
	hits := map[string]float64{}
	for _, tc := range []struct {
		reuse string // load.session_reuse ("": the default, wrap)
		nonce string // what the warning says of the nonce
	}{
		{"", "each repeat carried a nonce of its own after the system prompt"},
		{"wrap_identical", "no nonce kept a repeat off the cache"},
	} {
		t.Run("reuse="+tc.reuse, func(t *testing.T) {
			key := ""
			if tc.reuse != "" {
				key = "\n  session_reuse: " + tc.reuse
			}
			scenario := filepath.Join(dir, "ds.yaml")
			os.WriteFile(scenario, []byte(`name: ds
seed: 1
target:
  base_url: mock
  mock: {ttft: 5ms, tps: 1000}
workload:
  dataset: {file: chats.jsonl, format: openai, output_tokens: 4}
load:
  mode: concurrency`+key+`
  stages:
    - {concurrency: 2, duration: 800ms}
slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}
cost: {gpu_hourly_usd: 1}
`), 0o644)
			out := t.TempDir()
			if code, stdout, stderr := plload(t, "run", scenario, "--out", out, "--quiet"); code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			run := onlyRun(t, out)
			checkRunMatchesSchema(t, run)
			st := readStages(t, run)[0]
			if st.Engine.Reused < 2 || st.Engine.Reused >= st.Engine.Sessions {
				t.Fatalf("%d of %d sessions repeated a conversation; the test needs most, not all", st.Engine.Reused, st.Engine.Sessions)
			}
			c := st.Summary.ReuseCache
			if c == nil || !c.Reused.CacheHit.OK || !c.Fresh.CacheHit.OK {
				t.Fatalf("stage.json has no cache hit of the repeats and the new sessions: %+v", c)
			}
			hits[tc.reuse] = c.Reused.CacheHit.V
			share := fmt.Sprintf("%d of %d sessions started (%.1f %%) repeated a conversation", st.Engine.Reused, st.Engine.Sessions,
				100*float64(st.Engine.Reused)/float64(st.Engine.Sessions))
			cache := fmt.Sprintf("cache hit %.1f %% on the repeats' %d requests, %.1f %% on the others' %d",
				100*c.Reused.CacheHit.V, c.Reused.Requests, 100*c.Fresh.CacheHit.V, c.Fresh.Requests)
			warning := ""
			for _, w := range st.Summary.Warnings {
				if strings.HasPrefix(w, "dataset reuse: ") {
					warning = w
				}
			}
			for _, want := range []string{share, cache, tc.nonce} {
				if !strings.Contains(warning, want) {
					t.Errorf("the stage's reuse warning lacks %q:\n%s", want, warning)
				}
			}
			report, _ := os.ReadFile(filepath.Join(run, "report.md"))
			if !strings.Contains(string(report), share) {
				t.Errorf("report.md lacks the reuse warning %q", share)
			}
		})
	}
	// The nonce after the persona keeps a repeat's question off the cache; byte for byte, the
	// mock's cache answers it too.
	if hits[""] >= hits["wrap_identical"] {
		t.Errorf("cache hit of repeats: %.3f with the nonce, %.3f byte for byte; want the nonce's lower", hits[""], hits["wrap_identical"])
	}
}
