package engine

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNonceDefeatsUnintendedCacheHits: workload.nonce puts a unique string at the start of every
// request (true) or right after its system prompt (after_system). On the mock, whose prefix cache is
// real: without a nonce, shared personas and history hit the cache; with one at the start, nothing
// does; after the system prompt, only the shared system prompts do.
func TestNonceDefeatsUnintendedCacheHits(t *testing.T) {
	nonce := regexp.MustCompile(`^\[[0-9a-f]{8}\] `)
	hit := map[string]float64{}
	for _, at := range []string{"", "true", "after_system"} {
		base, cap := startMock(t, nil)
		session := "  turns: 3\n  user_input_tokens: 20\n  max_output_tokens: 8\n  think_time: 5ms"
		text := scenarioYAML(base, session, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 800ms}")
		text = strings.Replace(text, "  system_prompt_tokens: {min: 20, max: 60}", "  system_prompt_tokens: 200", 1)
		if at != "" {
			text += "workload: {nonce: " + at + "}\n"
		}
		res, dir, err := runScenario(t, context.Background(), text)
		if err != nil || res[0].Errors != 0 {
			t.Fatalf("nonce %q: %v %+v", at, err, res)
		}
		var prompt, cached float64
		for _, r := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
			m := r["metrics"].(map[string]any)
			prompt += float64(num(t, m["usage_prompt_tokens"].(map[string]any)["value"]))
			if c, ok := m["usage_prompt_cache_read_tokens"].(map[string]any); ok {
				cached += float64(num(t, c["value"]))
			}
		}
		hit[at] = cached / prompt
		cap.mu.Lock()
		for _, reqs := range cap.requests {
			for _, rq := range reqs {
				msgs := rq.body["messages"].([]any)
				sys, user := msgs[0].(map[string]any)["content"].(string), msgs[1].(map[string]any)["content"].(string)
				if got := [2]bool{nonce.MatchString(sys), nonce.MatchString(user)}; got != map[string][2]bool{"": {}, "true": {true, false}, "after_system": {false, true}}[at] {
					t.Fatalf("nonce %q: nonce on (system, first user) = %v", at, got)
				}
			}
		}
		cap.mu.Unlock()
	}
	t.Logf("cache hit: none %.3f, at the start %.3f, after the system prompt %.3f", hit[""], hit["true"], hit["after_system"])
	if hit["true"] != 0 || !(hit["after_system"] > 0 && hit["after_system"] < hit[""]) {
		t.Fatalf("cache hit without a nonce %.3f, with one at the start %.3f (want 0), after the system prompt %.3f (want between)", hit[""], hit["true"], hit["after_system"])
	}
}
