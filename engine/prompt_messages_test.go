package engine

import (
	"context"
	"path/filepath"
	"testing"
)

// TestRecordsCountTheMessagesSent: every successful request's record carries, beside its client
// token count, the number of messages its body sent (the system prompt, and every user and
// assistant message so far), the count a chat template's per-message tokens are fitted against.
func TestRecordsCountTheMessagesSent(t *testing.T) {
	base, cap := startMock(t, nil)
	_, dir, err := runScenario(t, context.Background(), scenarioYAML(base, shortSessions,
		"  mode: concurrency\n  stages:\n    - {concurrency: 2, warmup: 0s, duration: 800ms}"))
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]int{} // X-Request-ID → messages in the body
	cap.mu.Lock()
	for _, reqs := range cap.requests {
		for _, r := range reqs {
			sent[r.header.Get("X-Request-ID")] = len(r.body["messages"].([]any))
		}
	}
	cap.mu.Unlock()
	checked, multi := 0, 0
	for _, rec := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		if rec["error"] != nil {
			continue
		}
		id := rec["metadata"].(map[string]any)["x_request_id"].(string)
		m, ok := rec["metrics"].(map[string]any)["client_prompt_messages"].(map[string]any)
		if !ok {
			t.Fatalf("request %s: no client_prompt_messages in %v", id, rec["metrics"])
		}
		want, seen := sent[id]
		if got := integer(m["value"]); !seen || got != int64(want) || m["unit"] != "messages" {
			t.Errorf("request %s: client_prompt_messages %v; its body sent %d messages", id, m, want)
		}
		checked++
		if want > 2 {
			multi++
		}
	}
	if checked == 0 || multi == 0 {
		t.Fatalf("%d successful records, %d past the first turn: nothing to check", checked, multi)
	}
}
