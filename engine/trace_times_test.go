package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTraceTurnTimesPaceTheSession: the turns of a multi-turn trace (qwen_bailian) are due at the
// trace's own times from the session's start — 0, 300 ms, 900 ms here — not after a think time on top
// of each answer; a turn whose previous answer is still streaming goes right after it.
func TestTraceTurnTimesPaceTheSession(t *testing.T) {
	trace := `{"chat_id": 1, "parent_chat_id": -1, "timestamp": 10.0, "input_length": 40, "output_length": 5, "type": "text", "turn": 1, "hash_ids": [1, 2, 3]}
{"chat_id": 2, "parent_chat_id": 1, "timestamp": 10.3, "input_length": 70, "output_length": 5, "type": "text", "turn": 2, "hash_ids": [1, 2, 3, 4, 5]}
{"chat_id": 3, "parent_chat_id": 2, "timestamp": 10.9, "input_length": 100, "output_length": 5, "type": "text", "turn": 3, "hash_ids": [1, 2, 3, 4, 5, 6, 7]}
`
	path := filepath.Join(t.TempDir(), "q.jsonl")
	os.WriteFile(path, []byte(trace), 0o644)
	base, _ := startMock(t, nil)
	text := scenarioYAML(base, "  think_time: 5s", "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 1500ms}")
	text = withSource(text, "workload:\n  trace: {file: "+path+", format: qwen_bailian}\n")
	_, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if len(recs) < 3 {
		t.Fatalf("%d requests: the session's turns did not follow the trace's times (a 5 s think time would allow 1)", len(recs))
	}
	var first int64
	for i, r := range recs[:3] {
		md := r["metadata"].(map[string]any)
		at := num(t, md["intended_start_ns"])
		if i == 0 {
			first = at
			continue
		}
		want := []time.Duration{0, 300 * time.Millisecond, 900 * time.Millisecond}[i]
		if got := time.Duration(at - first); got != want {
			t.Errorf("turn %d due %v after the first, want %v", i+1, got, want)
		}
	}
}
