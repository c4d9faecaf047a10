package engine

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/plload/plload/mock"
)

// TestRecordMathAgainstTheMock runs short stages against the real mock on loopback and checks, on
// every successful record, the per-request numbers readStream derives from the token times (docs/records.md,
// as AIPerf computes them):
//   - TTFT is the first token of any kind, reasoning included: the first visible answer token (TTFO)
//     comes exactly the first `reasoning` gaps later, and TTFT + Σ gaps is the latency.
//   - the mean ITL is (latency − TTFT) ÷ (OSL − 1): OSL tokens have OSL − 1 gaps between them.
//
// Catches: TTFT taken from the first non-reasoning token; ITL divided by OSL.
func TestRecordMathAgainstTheMock(t *testing.T) {
	cases := []struct {
		name      string
		reasoning int
		noUsage   bool // OSL then comes from the client's count of token events
	}{
		{"content only", 0, false},
		{"three reasoning tokens first", 3, false},
		{"reasoning, no usage from the server", 3, true},
	}
	session := `  turns: {min: 1, max: 2}
  user_input_tokens: {min: 5, max: 10}
  max_output_tokens: {min: 5, max: 9}
  think_time: {min: 1ms, max: 5ms}`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := startMock(t, func(c *mock.Config) {
				// 4 ms between tokens: a TTFT that skipped the reasoning tokens would be off by the
				// gaps before the answer, far more than the 1e-6 ms the checks allow for rounding.
				c.TPS, c.ReasoningTokens, c.NoUsage = 250, tc.reasoning, tc.noUsage
				c.EOSMinFraction = 1
			})
			_, dir, err := runScenario(t, context.Background(), scenarioYAML(base, session,
				"  mode: concurrency\n  stages:\n    - {concurrency: 2, warmup: 100ms, duration: 400ms}"))
			if err != nil {
				t.Fatal(err)
			}
			recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
			checked := 0
			for i, r := range recs {
				if r["error"] != nil {
					t.Fatalf("record %d failed: %v", i, r["error"])
				}
				ms := r["metrics"].(map[string]any)
				get := func(tag string) float64 {
					m, ok := ms[tag].(map[string]any)
					if !ok {
						t.Fatalf("record %d has no %s: %v", i, tag, ms)
					}
					return float(m["value"])
				}
				var gaps []float64
				for _, g := range ms["inter_chunk_latency"].(map[string]any)["value"].([]any) {
					gaps = append(gaps, float(g))
				}
				ttft, lat, osl, itl := get("time_to_first_token"), get("request_latency"), get("output_sequence_length"), get("inter_token_latency")
				if int(osl) != len(gaps)+1 || osl < 5 {
					t.Fatalf("record %d: OSL %v with %d gaps (the mock streams one token a chunk, 5 to 9 of them)", i, osl, len(gaps))
				}
				sum := 0.0
				for _, g := range gaps {
					sum += g
				}
				if math.Abs(ttft+sum-lat) > 1e-6 {
					t.Fatalf("record %d: TTFT %v + gaps %v ≠ latency %v", i, ttft, sum, lat)
				}
				if want := (lat - ttft) / (osl - 1); math.Abs(itl-want) > 1e-9*want {
					t.Fatalf("record %d: ITL %v, want (latency − TTFT) ÷ (OSL − 1) = (%v − %v) ÷ %v = %v", i, itl, lat, ttft, osl-1, want)
				}
				ttfo := get("time_to_first_output_token")
				if tc.reasoning == 0 {
					if ttfo != ttft {
						t.Fatalf("record %d: no reasoning, yet TTFO %v ≠ TTFT %v", i, ttfo, ttft)
					}
					checked++
					continue
				}
				if got := get("reasoning_token_count"); int(got) != tc.reasoning {
					t.Fatalf("record %d: %v reasoning tokens, the mock sent %d", i, got, tc.reasoning)
				}
				before := 0.0 // the gaps up to the first answer token
				for _, g := range gaps[:tc.reasoning] {
					before += g
				}
				// Exact, not timed: both sides come from the same token timestamps.
				if math.Abs(ttft+before-ttfo) > 1e-6 {
					t.Fatalf("record %d: TTFT %v, TTFO %v: the answer must start %d gaps (%v ms) after the first reasoning token", i, ttft, ttfo, tc.reasoning, before)
				}
				checked++
			}
			if checked < 10 {
				t.Fatalf("only %d records checked", checked)
			}
		})
	}
}
