package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
)

// TestReleasedTextIsWrittenAgainByteForByte: the pool keeps no synthetic text, and UserText gives
// every turn the bytes its dataset file holds — plain chat, RAG documents with their questions,
// Korean — so a run that keeps only seeds sends exactly what the dataset says it sent.
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
			var want []string // every user turn's text as the dataset file holds it
			for line := range bytes.Lines(pool.Dataset) {
				var ds datasetSession
				if err := json.Unmarshal(line, &ds); err != nil {
					t.Fatal(err)
				}
				for _, dt := range ds.Turns {
					if dt.Role == "user" {
						want = append(want, dt.Text)
					}
				}
			}
			i, docs := 0, 0
			for _, sp := range pool.Sessions {
				for k := range sp.Turns {
					turn := &sp.Turns[k]
					if turn.User != "" {
						t.Fatalf("session %s turn %d kept its text in the pool", sp.ID, k)
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
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = pool.UserText(&pool.Sessions[i%len(pool.Sessions)].Turns[0])
				i++
			}
		})
	}
}

// A stage's pool holds every turn of every session for the whole run (session_pool_factor × the
// sessions running): 150 turns per running session in a 50-turn chat. A Turn that grows is memory
// every thinking session pays (issue 19: 100,000 of them in 4 GiB); what most turns lack (a recorded
// answer) stays behind a pointer.
func TestTurnStaysSmall(t *testing.T) {
	if size := unsafe.Sizeof(Turn{}); size > 112 {
		t.Errorf("a Turn is %d bytes, more than 112: what most turns leave empty belongs behind a pointer", size)
	}
}

// TestDroppedTurnsAreDrawnAgain: after DropTurns, every session's turns are drawn again exactly as
// built — lengths, think times, seeds — and their text written from those seeds is the dataset's,
// for chat and RAG sessions, from several goroutines at once.
func TestDroppedTurnsAreDrawnAgain(t *testing.T) {
	for _, session := range []string{
		"session: {turns: {min: 1, max: 8}, user_input_tokens: {min: 1, max: 60}, max_output_tokens: {min: 4, max: 64}, think_time: {min: 1s, max: 9s}}",
		"session: {turns: 3, user_input_tokens: {min: 5, max: 30}, retrieved_tokens: {min: 1, max: 200}, max_output_tokens: 8, think_time: 1s}",
	} {
		text := fmt.Sprintf("name: t\nseed: 11\ntarget: {base_url: mock, model: m}\npersonas: {count: 3, system_prompt_tokens: 20}\n%s\nload:\n  mode: concurrency\n  stages:\n    - {concurrency: 30, duration: 1s}\n", session)
		sc, issues := Parse("t.yaml", []byte(text), LoadOptions{})
		if issues.Err() != nil {
			t.Fatal(issues.Err())
		}
		w, err := sc.Build()
		if err != nil {
			t.Fatal(err)
		}
		pool := &w.Stages[0]
		built := make([][]Turn, len(pool.Sessions))
		for i, sp := range pool.Sessions {
			built[i] = sp.Turns
		}
		pool.DropTurns()
		var eg errgroup.Group
		for i := range pool.Sessions {
			eg.Go(func() error {
				sp := &pool.Sessions[i]
				if sp.Turns != nil || sp.PlannedTurns() != len(built[i]) {
					return fmt.Errorf("session %d: %d turns kept, %d planned; want none kept, %d planned", i, len(sp.Turns), sp.PlannedTurns(), len(built[i]))
				}
				again := pool.Turns(i)
				if diff := cmp.Diff(built[i], again, cmp.AllowUnexported(Turn{}, textSeed{}, rand.PCG{})); diff != "" {
					return fmt.Errorf("session %d drawn again differs (-built +again):\n%s", i, diff)
				}
				return nil
			})
		}
		if err := eg.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}
