package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/workload"
)

// firstPrompts runs text against the real mock and returns the stage's result and every session's
// first request's messages, as the mock received them, by conversation id (from the records).
func firstPrompts(t *testing.T, text string) (StageResult, map[string]string) {
	t.Helper()
	base, cap := startMock(t, nil)
	text = strings.Replace(text, "BASE", base, 1)
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	conversation := map[string]string{} // by x_correlation_id
	for _, r := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		m := r["metadata"].(map[string]any)
		conversation[m["x_correlation_id"].(string)] = m["conversation_id"].(string)
	}
	cap.mu.Lock()
	defer cap.mu.Unlock()
	out := map[string]string{}
	for corr, reqs := range cap.requests {
		id, ok := conversation[corr]
		if !ok {
			t.Fatalf("the mock saw session %s, which no record names", corr)
		}
		raw, _ := json.Marshal(reqs[0].body["messages"])
		out[id] = string(raw)
	}
	return res[0], out
}

// TestSessionsPastThePoolAreNeverResent: a closed loop of c = 2 with its default pool of 3c sessions
// runs through many more sessions than that: the stage ends after 20 one-turn requests, not after a
// time, so it passes the pool three times over however busy the machine is. By default (load.session_reuse: fresh) no two sessions
// send the same first prompt, none is counted as a reuse, and the same scenario run twice sends the
// same sessions under the same ids; with wrap the repeats carry a nonce and are still unique; only
// wrap_identical resends a prompt byte for byte, as it says.
func TestSessionsPastThePoolAreNeverResent(t *testing.T) {
	session := "  turns: 1\n  user_input_tokens: {min: 5, max: 30}\n  max_output_tokens: 4\n  think_time: 0s"
	for _, tc := range []struct {
		reuse      string
		reused     bool // sessions counted as repeats
		duplicates bool // two first prompts byte-identical
	}{
		{"", false, false},
		{"wrap", true, false},
		{"wrap_identical", true, true},
	} {
		t.Run("reuse="+tc.reuse, func(t *testing.T) {
			load := "  mode: concurrency\n  stages:\n    - {concurrency: 2, requests: 20}"
			if tc.reuse != "" {
				load = "  mode: concurrency\n  session_reuse: " + tc.reuse + "\n  stages:\n    - {concurrency: 2, requests: 20}"
			}
			text := scenarioYAML("BASE", session, load)
			res, prompts := firstPrompts(t, text)
			if res.Sessions < 20 || res.Errors != 0 {
				t.Fatalf("the stage started %d sessions (%d errors); the test needs more than its pool of 6", res.Sessions, res.Errors)
			}
			if (res.Reused > 0) != tc.reused {
				t.Errorf("%d of %d sessions counted as repeats", res.Reused, res.Sessions)
			}
			seen := map[string]string{}
			duplicates := 0
			for id, p := range prompts {
				if other, dup := seen[p]; dup {
					duplicates++
					if !tc.duplicates {
						t.Errorf("sessions %s and %s sent byte-identical first prompts", other, id)
					}
				}
				seen[p] = id
			}
			if tc.duplicates && duplicates == 0 {
				t.Error("wrap_identical resent no prompt byte for byte")
			}
			if tc.reuse != "" {
				return
			}
			// Reproducible: a second run sends each session it shares with the first (by id, past
			// the pool too) byte for byte as the first did. Each run sends 20 sessions; which 20 can
			// differ by one or two at the end (a slot draws its next session before the budget says
			// whether it may send), so the runs share at least 18, and 12 of those past the pool.
			_, again := firstPrompts(t, text)
			common, past := 0, 0
			for id, p := range again {
				if first, ok := prompts[id]; ok {
					common++
					if id > "s01-000005" { // ordinals 0 to 5 are the pool's
						past++
					}
					if first != p {
						t.Errorf("session %s differs between two runs:\n%s\n%s", id, first, p)
					}
				}
			}
			if common < 18 || past < 12 {
				t.Errorf("the two runs share %d sessions, %d of them past the pool; want at least 18 and 12", common, past)
			}
		})
	}
}

// TestShardDrawsPastThePoolInItsClass: with session_reuse fresh a shard's sessions past the pool are
// drawn for its own ordinals (Index + n·Count), none a reuse, each the session the pool's rule draws
// for that ordinal.
func TestShardDrawsPastThePoolInItsClass(t *testing.T) {
	text := scenarioYAML("http://127.0.0.1:1/v1", shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 3, duration: 1s, sessions: 4}")
	sc, issues := workload.Parse("t.yaml", []byte(text), workload.LoadOptions{Getenv: testEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := &w.Stages[0]
	s := &stageRun{cfg: &Config{Shard: workload.Shard{Index: 1, Count: 3}}, pool: pool}
	var got []string
	for range 5 {
		p := s.nextSession()
		if p.reused || p.index != p.ordinal {
			t.Fatalf("%+v: a session drawn past the pool is its ordinal's, never a reuse", p)
		}
		if want := pool.Session(p.ordinal); !cmp.Equal(want, *p.plan, cmp.AllowUnexported(workload.SessionPlan{})) {
			t.Fatalf("ordinal %d: plan %+v, the pool's rule draws %+v", p.ordinal, *p.plan, want)
		}
		got = append(got, p.conversationID())
	}
	want := []string{"s01-000001", "s01-000004", "s01-000007", "s01-000010", "s01-000013"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conversation ids (-want +got):\n%s", diff)
	}
}
