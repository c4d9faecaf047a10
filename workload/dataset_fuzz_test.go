package workload

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadDataset: any bytes, in any dataset format, give sessions or an error — never a panic — and
// every session read has a user turn with text.
func FuzzReadDataset(f *testing.F) {
	for _, name := range []string{"prompts.jsonl", "openai-conversations.jsonl", "sharegpt.json", "aiperf-multi-turn.jsonl"} {
		data, err := os.ReadFile(filepath.Join("testdata", "datasets", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}`))
	f.Add([]byte(`{"turns": [{"texts": ["a", "b"], "delay": 1e3}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "d")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{FormatPrompts, FormatOpenAI, FormatShareGPT, FormatAIPerf} {
			sessions, _, err := readDataset(path, format)
			if err != nil {
				continue
			}
			for _, rs := range sessions {
				if checkHasUser(rs, "") != nil {
					t.Fatalf("%s: a session without a user turn was read: %+v", format, rs)
				}
			}
		}
	})
}
