package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sync/errgroup"
)

// TestSessionsAreDrawnAgainByteForByte: the pool keeps no synthetic turns or text; each session
// drawn again turn by turn (from several goroutines at once, as sessions start) has the dataset
// file's lengths, think times and text, byte for byte — plain chat, RAG documents with their
// questions, Korean — so a run that keeps only the seed sends exactly what the dataset says it sent.
func TestSessionsAreDrawnAgainByteForByte(t *testing.T) {
	for _, tc := range []struct{ name, session string }{
		{"chat", "session: {turns: {min: 1, max: 6}, user_input_tokens: {min: 1, max: 80}, max_output_tokens: {min: 4, max: 64}, think_time: {min: 1s, max: 9s}}"},
		{"rag", "session: {turns: 3, user_input_tokens: {min: 5, max: 30}, retrieved_tokens: {min: 1, max: 300}, max_output_tokens: 8, think_time: 1s}"},
		{"korean", "session: {turns: 3, user_input_tokens: {min: 5, max: 40}, max_output_tokens: 8, think_time: 1s, language: ko}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := fmt.Sprintf("name: t\nseed: 3\ntarget: {base_url: mock, model: m}\npersonas: {count: 2, system_prompt_tokens: 20}\n%s\nload:\n  mode: concurrency\n  stages:\n    - {concurrency: 20, duration: 1s}\n", tc.session)
			_, w := buildText(t, "t.yaml", text)
			pool := &w.Stages[0]
			var want [][]datasetTurn // every session's user turns as the dataset file holds them
			for line := range bytes.Lines(datasetOf(t, pool)) {
				var ds datasetSession
				if err := json.Unmarshal(line, &ds); err != nil {
					t.Fatal(err)
				}
				var user []datasetTurn
				for _, dt := range ds.Turns {
					if dt.Role == "user" {
						user = append(user, dt)
					}
				}
				want = append(want, user)
			}
			var eg errgroup.Group
			var docs, turns atomic.Int64
			for i := range pool.Sessions {
				eg.Go(func() error {
					sp := &pool.Sessions[i]
					if sp.Turns != nil || sp.PlannedTurns() != len(want[i]) {
						return fmt.Errorf("session %s: the pool keeps %d turns and plans %d; the dataset has %d", sp.ID, len(sp.Turns), sp.PlannedTurns(), len(want[i]))
					}
					cur := pool.Cursor(i)
					for k := 0; ; k++ {
						turn, text, ok := cur.Next()
						if !ok {
							if k != len(want[i]) {
								return fmt.Errorf("session %s ended after %d turns; the dataset has %d", sp.ID, k, len(want[i]))
							}
							return nil
						}
						if k >= len(want[i]) {
							return fmt.Errorf("session %s drew a turn %d; the dataset has %d", sp.ID, k+1, len(want[i]))
						}
						dt := want[i][k]
						if turn.User != "" {
							return fmt.Errorf("session %s turn %d kept its text in the turn", sp.ID, k)
						}
						if text != dt.Text {
							return fmt.Errorf("session %s turn %d drawn again as\n%q\nwant\n%q", sp.ID, k, text, dt.Text)
						}
						if int(turn.MaxOutputTokens) != dt.OutputLength || turn.ThinkBefore.Milliseconds() != dt.Delay {
							return fmt.Errorf("session %s turn %d drawn again with output %d, think %v; the dataset says %d, %d ms", sp.ID, k, turn.MaxOutputTokens, turn.ThinkBefore, dt.OutputLength, dt.Delay)
						}
						if strings.HasPrefix(text, "Reference document") || strings.HasPrefix(text, "참고") {
							docs.Add(1)
						}
						turns.Add(1)
					}
				})
			}
			if err := eg.Wait(); err != nil {
				t.Fatal(err)
			}
			if tc.name == "rag" && docs.Load() == 0 {
				t.Fatal("no turn had a retrieved document: the RAG case was not tested")
			}
			t.Logf("%d turns drawn again", turns.Load())
		})
	}
}

// BenchmarkTurnDrawnAgain: what drawing a synthetic session's next turn, its text included, costs
// the session that sends it (a 40-token question; and one with a 1,000-token document).
func BenchmarkTurnDrawnAgain(b *testing.B) {
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
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_, _, _ = pool.Cursor(i % len(pool.Sessions)).Next()
				i++
			}
		})
	}
}

// A pool from files holds every turn of every session for the whole run (session_pool_factor × the
// sessions running), and a dataset of long chats has many: a Turn that grows is memory every
// session pays (issue 19: 100,000 of them in 4 GiB); what most turns lack (a recorded answer) stays
// behind a pointer.
func TestTurnStaysSmall(t *testing.T) {
	if size := unsafe.Sizeof(Turn{}); size > 64 {
		t.Errorf("a Turn is %d bytes, more than 64: what most turns leave empty belongs behind a pointer", size)
	}
}
