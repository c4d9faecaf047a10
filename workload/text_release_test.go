package workload

import (
	"fmt"
	"testing"
)

// TestReleasedTextIsWrittenAgainByteForByte: after ReleaseText, UserText gives every turn the bytes
// the pool (and its dataset file) had — plain chat, RAG documents with their questions, Korean — so
// a run that keeps only seeds sends exactly what a run that kept the text would.
func TestReleasedTextIsWrittenAgainByteForByte(t *testing.T) {
	for _, tc := range []struct{ name, session string }{
		{"chat", "session: {turns: {min: 1, max: 6}, user_input_tokens: {min: 1, max: 80}, max_output_tokens: 8, think_time: 1s}"},
		{"rag", "session: {turns: 3, user_input_tokens: {min: 5, max: 30}, retrieved_tokens: {min: 1, max: 300}, max_output_tokens: 8, think_time: 1s}"},
		{"korean", "session: {turns: 3, user_input_tokens: {min: 5, max: 40}, max_output_tokens: 8, think_time: 1s, language: ko}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := fmt.Sprintf("name: t\nseed: 3\ntarget: {base_url: mock, model: m}\npersonas: {count: 2, system_prompt_tokens: 20}\n%s\nload:\n  mode: concurrency\n  stages:\n    - {concurrency: 20, duration: 1s}\n", tc.session)
			sc, issues := Parse("t.yaml", []byte(text), LoadOptions{})
			if issues.Err() != nil {
				t.Fatal(issues.Err())
			}
			w, err := sc.Build()
			if err != nil {
				t.Fatal(err)
			}
			pool := &w.Stages[0]
			var want []string
			for _, sp := range pool.Sessions {
				for _, turn := range sp.Turns {
					want = append(want, turn.User)
				}
			}
			pool.ReleaseText()
			i, docs := 0, 0
			for _, sp := range pool.Sessions {
				for k := range sp.Turns {
					turn := &sp.Turns[k]
					if turn.User != "" && want[i] != "" {
						t.Fatalf("session %s turn %d kept its text after ReleaseText", sp.ID, k)
					}
					if got := pool.UserText(turn); got != want[i] {
						t.Fatalf("session %s turn %d written again as\n%q\nwant\n%q", sp.ID, k, got, want[i])
					}
					if turn.seed.docTokens > 0 {
						docs++
					}
					i++
				}
			}
			if tc.name == "rag" && docs == 0 {
				t.Fatal("no turn had a retrieved document: the RAG case was not tested")
			}
			t.Logf("%d turns written again", i)
		})
	}
}

// BenchmarkUserTextWrittenAgain: what writing a released turn's text again costs the session that
// sends it (a 40-token question; and one with a 1,000-token document).
func BenchmarkUserTextWrittenAgain(b *testing.B) {
	for _, tc := range []struct{ name, session string }{
		{"question_40", "session: {turns: 1, user_input_tokens: 40, max_output_tokens: 8, think_time: 1s}"},
		{"rag_1000", "session: {turns: 1, user_input_tokens: 40, retrieved_tokens: 1000, max_output_tokens: 8, think_time: 1s}"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			text := fmt.Sprintf("name: t\nseed: 3\ntarget: {base_url: mock, model: m}\npersonas: {count: 2, system_prompt_tokens: 20}\n%s\nload:\n  mode: concurrency\n  stages:\n    - {concurrency: 64, duration: 1s}\n", tc.session)
			sc, _ := Parse("t.yaml", []byte(text), LoadOptions{})
			w, err := sc.Build()
			if err != nil {
				b.Fatal(err)
			}
			pool := &w.Stages[0]
			pool.ReleaseText()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = pool.UserText(&pool.Sessions[i%len(pool.Sessions)].Turns[0])
				i++
			}
		})
	}
}
