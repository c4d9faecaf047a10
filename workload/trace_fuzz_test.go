package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadTrace: no file makes a trace reader panic; every error names the file; whatever reads
// gives requests that can be sent — lengths ≥ 1, text of exactly UserTokens tokens, times from the
// slice's start — and never counts more lines used than read.
func FuzzReadTrace(f *testing.F) {
	formats := []string{FormatMooncake, FormatAzure, FormatBurstGPT, FormatQwenBailian}
	for i, file := range []string{"mooncake.jsonl", "azure-2023.csv", "burstgpt.csv", "qwen-bailian.jsonl"} {
		data, err := os.ReadFile(filepath.Join(traceSamples, file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), data)
	}
	f.Add(uint8(1), []byte(azureLayout+"\n2024-05-10 00:00:00.001291+00:00,6050,666\n"))
	f.Add(uint8(0), []byte(`{"timestamp": 9, "input_length": 3, "output_length": 1, "hash_ids": [0, 0, 0]}`+"\n"+`{"timestamp": 1, "input_length": 1, "output_length": 1}`))
	f.Add(uint8(3), []byte(`{"chat_id": 2, "parent_chat_id": 1, "timestamp": 1, "input_length": 5, "output_length": 1}`+"\n"+
		`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 2, "input_length": 9, "output_length": 1, "hash_ids": [1]}`))
	g, err := NewTextGen("en", o200kForTest(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, format uint8, data []byte) {
		if hugeNumber(data) {
			t.Skip("a length of a million tokens or more is valid but takes the fuzzer seconds to write")
		}
		path := filepath.Join(t.TempDir(), "trace")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		spec := &TraceSpec{Format: formats[int(format)%len(formats)], MaxRequests: 5, BlockTokens: 1 + int(format)/4%64}
		src, err := traceScenario(1, "en").readTrace(path, spec)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if src.LinesUsed > src.Lines || src.LinesUsed < 1 || len(src.Sessions) == 0 {
			t.Fatalf("lines %d, used %d, sessions %d", src.Lines, src.LinesUsed, len(src.Sessions))
		}
		for _, ss := range src.Sessions {
			for _, tu := range ss.Turns {
				if tu.UserTokens < 1 || tu.OutputTokens < 1 || tu.AtMs < 0 || tu.User == "" {
					t.Fatalf("line %d: a request that cannot be sent: %d tokens, %d out, at %v ms", tu.Line, tu.UserTokens, tu.OutputTokens, tu.AtMs)
				}
				if tu.UserTokens <= 300 && g.Count(tu.User) != tu.UserTokens {
					t.Fatalf("line %d: text of %d tokens, want %d", tu.Line, g.Count(tu.User), tu.UserTokens)
				}
			}
		}
	})
}

// hugeNumber reports a run of six or more digits that is not a fraction (after a '.'), or an
// exponent (a digit, then e or E).
func hugeNumber(data []byte) bool {
	run := 0
	for i, c := range data {
		switch {
		case (c == 'e' || c == 'E') && i > 0 && data[i-1] >= '0' && data[i-1] <= '9':
			return true
		case c >= '0' && c <= '9':
			if run == 0 && i > 0 && data[i-1] == '.' {
				run = -1 << 30 // a fraction: any length
			}
			run++
			if run >= 6 {
				return true
			}
		default:
			run = 0
		}
	}
	return false
}
