package fit

import (
	"math"
	"os"
	"strings"
	"testing"
)

// FuzzRead: any input is read or refused with an error naming the file, never a panic; what is read
// summarizes to finite numbers.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"request-log.jsonl", "mooncake.jsonl", "qwen-bailian.jsonl", "azure-2023.csv", "burstgpt.csv", "profile_export.jsonl"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add("{\"timestamp\": 1e308, \"prompt_tokens\": 1, \"completion_tokens\": 1}\n{\"timestamp\": -1e308, \"prompt_tokens\": 1, \"completion_tokens\": 1}\n")
	f.Fuzz(func(t *testing.T, data string) {
		l := NewLog()
		if err := l.Read("fuzz.log", strings.NewReader(data), ""); err != nil {
			if !strings.Contains(err.Error(), "fuzz.log") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		s, err := Summarize(l)
		if err != nil {
			return
		}
		_ = Scenario(s, ScenarioOptions{Sources: []string{"fuzz.log"}})
		for name, v := range map[string]float64{"rate": s.RatePerS.Mean, "cv": s.InterarrivalCV, "p99": s.InputTokens.P99} {
			if math.IsNaN(v) {
				t.Fatalf("%s is NaN", name)
			}
		}
	})
}
