package engine

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSplitOutput: the server's reasoning count is taken as sent, up to the total; without it the
// server's total is split in the proportion of the client's counts; the parts are never negative
// and always add up to the total.
// Catches: answer = completion − a client re-count of the reasoning (negative when the client counts
// more reasoning than the server counted output, as llama.cpp's answers showed).
func TestSplitOutput(t *testing.T) {
	type split struct{ Reasoning, Answer int }
	for _, tc := range []struct {
		name                          string
		osl, serverReasoning          int
		hasServerReasoning            bool
		clientReasoning, clientAnswer int
		want                          split
	}{
		{"the server's count, as sent", 10, 7, true, 20, 5, split{7, 3}},
		{"the server counts all of it as reasoning", 10, 10, true, 3, 3, split{10, 0}},
		{"the server counts more reasoning than output: clamped to it, the answer 0", 10, 12, true, 3, 3, split{10, 0}},
		{"a negative reasoning count from a broken server is 0", 10, -3, true, 3, 3, split{0, 10}},
		{"the server's reasoning with no reasoning text streamed or sent", 520, 500, true, 0, 20, split{500, 20}},
		{"the client's counts agree with the server's", 10, 0, false, 7, 3, split{7, 3}},
		{"the client counts more reasoning than the server's whole output", 3, 0, false, 20, 1, split{3, 0}},
		{"split in proportion: 10 × 20/25 = 8", 10, 0, false, 20, 5, split{8, 2}},
		{"a half rounds to the reasoning: 2 × 3/4 = 1.5", 2, 0, false, 3, 1, split{2, 0}},
		{"no reasoning", 10, 0, false, 0, 9, split{0, 10}},
		{"nothing but reasoning", 10, 0, false, 4, 0, split{10, 0}},
		{"a negative total from a broken server stays 0", -1, 0, false, 2, 2, split{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, a := splitOutput(tc.osl, tc.serverReasoning, tc.hasServerReasoning, tc.clientReasoning, tc.clientAnswer)
			if diff := cmp.Diff(tc.want, split{r, a}); diff != "" {
				t.Fatalf("splitOutput(%d, %d, %v, %d, %d) (-want +got):\n%s", tc.osl, tc.serverReasoning, tc.hasServerReasoning, tc.clientReasoning, tc.clientAnswer, diff)
			}
		})
	}
}

// TestReasoningCountsNeverNegative: answers with reasoning whose usage has completion_tokens but no
// reasoning_tokens (llama.cpp's), and fewer completion tokens than the client counts in the
// reasoning, get output_token_count ≥ 0 with reasoning + output = output_sequence_length, streamed
// or not; a server's reasoning_tokens is taken as sent, up to completion_tokens, and is recorded
// even where the answer carried no reasoning text (an o-series model's), the same way streamed or
// not.
// Catches: output_token_count = osl − R with no reasoning_token_count when not streamed, and osl
// with none when streamed.
func TestReasoningCountsNeverNegative(t *testing.T) {
	const absent = -2 // the field is not in the record
	// About 40 tokens of reasoning in any tokenizer, against a server that says it made 10.
	reasoning := strings.Repeat("considering the question carefully, ", 8)
	type counts struct{ Reasoning, Output, OSL int64 }
	for _, tc := range []struct {
		name     string
		streamed bool
		body     string
		want     counts
	}{
		{"not streamed, no reasoning_tokens", false,
			`{"choices":[{"message":{"role":"assistant","content":"Yes.","reasoning_content":"` + reasoning + `"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":12,"completion_tokens":10,"total_tokens":22}}`,
			// 10 split as the client's counts: nearly all reasoning, never a negative answer.
			counts{-1, -1, 10}},
		{"not streamed, with reasoning_tokens", false,
			`{"choices":[{"message":{"role":"assistant","content":"Yes.","reasoning_content":"` + reasoning + `"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":12,"completion_tokens":10,"total_tokens":22,"completion_tokens_details":{"reasoning_tokens":8}}}`,
			counts{8, 2, 10}},
		{"not streamed, no reasoning text, reasoning_tokens 500", false,
			`{"choices":[{"message":{"role":"assistant","content":"Yes, it is."},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":12,"completion_tokens":504,"total_tokens":516,"completion_tokens_details":{"reasoning_tokens":500}}}`,
			counts{500, 4, 504}},
		{"not streamed, reasoning_tokens past completion_tokens: clamped", false,
			`{"choices":[{"message":{"role":"assistant","content":"Yes.","reasoning_content":"` + reasoning + `"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":12,"completion_tokens":10,"total_tokens":22,"completion_tokens_details":{"reasoning_tokens":12}}}`,
			counts{10, 0, 10}},
		{"not streamed, no reasoning, reasoning_tokens 0", false,
			`{"choices":[{"message":{"role":"assistant","content":"Yes."},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14,"completion_tokens_details":{"reasoning_tokens":0}}}`,
			counts{absent, 2, 2}},
		{"streamed, no reasoning text, reasoning_tokens 500", true,
			"data: {\"choices\":[{\"delta\":{\"content\":\"Yes\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"content\":\".\"},\"finish_reason\":\"stop\"}]}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":502,\"total_tokens\":514,\"completion_tokens_details\":{\"reasoning_tokens\":500}}}\n\n" +
				"data: [DONE]\n\n",
			counts{500, 2, 502}},
		{"streamed, reasoning_tokens past completion_tokens: clamped", true,
			"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"a\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"content\":\"Yes.\"},\"finish_reason\":\"stop\"}]}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,\"total_tokens\":14,\"completion_tokens_details\":{\"reasoning_tokens\":5}}}\n\n" +
				"data: [DONE]\n\n",
			counts{2, 0, 2}},
		{"streamed, no reasoning, reasoning_tokens 0", true,
			"data: {\"choices\":[{\"delta\":{\"content\":\"Yes\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"content\":\".\"},\"finish_reason\":\"stop\"}]}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,\"total_tokens\":14,\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\n\n" +
				"data: [DONE]\n\n",
			counts{absent, 2, 2}},
		{"streamed, 3 reasoning events and 1 answer event, 2 completion tokens", true,
			"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"a\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"b\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"c\"}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"content\":\"Yes.\"},\"finish_reason\":\"stop\"}]}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,\"total_tokens\":14}}\n\n" +
				"data: [DONE]\n\n",
			// 2 × 3/4 = 1.5 rounds to 2 reasoning tokens; the old count was 2 − 3 = −1.
			counts{2, 0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := faultServer(t, func(w http.ResponseWriter) {
				if tc.streamed {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				w.Write([]byte(tc.body))
			})
			text := scenarioYAML(base, "  turns: {dist: constant, value: 1}\n  user_input_tokens: {min: 5, max: 10}\n  max_output_tokens: {min: 10, max: 20}",
				"  mode: batch\n  max_in_flight: 2\n  stages:\n    - {requests: 3}")
			text = strings.Replace(text, "slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}", "slo: {error_rate_max: 0.01}", 1)
			if !tc.streamed {
				text = strings.Replace(text, "  model: m\n", "  model: m\n  stream: false\n", 1)
			}
			res, dir, err := runScenario(t, context.Background(), text)
			if err != nil || res[0].Errors != 0 {
				t.Fatalf("run: %v, %d errors", err, res[0].Errors)
			}
			recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
			if len(recs) != 3 {
				t.Fatalf("%d records, want 3", len(recs))
			}
			for _, r := range recs {
				m := r["metrics"].(map[string]any)
				value := func(k string) int64 {
					v, _ := m[k].(map[string]any)
					if v == nil {
						return absent
					}
					return integer(v["value"])
				}
				got := counts{value("reasoning_token_count"), value("output_token_count"), value("output_sequence_length")}
				reasoning := max(got.Reasoning, 0) // an absent count is none
				if got.Output < 0 || got.OSL < 0 || reasoning+got.Output != got.OSL {
					t.Fatalf("counts %+v: a negative count, or parts that do not add up to the total", got)
				}
				want := tc.want
				if want.Reasoning == -1 { // the client's tokenizer decides the split: only its bounds are known
					if got.Reasoning+got.Output != 10 || got.Reasoning < 8 || got.OSL != 10 {
						t.Fatalf("counts %+v: want 10 split with at least 8 reasoning", got)
					}
					continue
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("counts (-want +got):\n%s", diff)
				}
			}
		})
	}
}
