package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reuseScenario is a synthetic chat whose one stage's pool holds pool sessions, with reuse as
// load.session_reuse ("" leaves it to its default).
func reuseScenario(pool int, reuse string) string {
	key := ""
	if reuse != "" {
		key = "\n  session_reuse: " + reuse
	}
	return fmt.Sprintf(`name: t
seed: 11
target: {base_url: mock, model: m}
personas: {count: 5, system_prompt_tokens: 20}
session: {turns: {min: 1, max: 4}, user_input_tokens: {min: 5, max: 40}, max_output_tokens: 8, think_time: 1s}
load:
  mode: concurrency%s
  stages:
    - {concurrency: 2, duration: 10s, sessions: %d}
`, key, pool)
}

// drawnSession is session i of the pool as the engine would send it: its plan and every turn with
// its text.
type drawnSession struct {
	ID      string
	Persona int
	Turns   []Turn
}

func drawSession(p *StagePool, i int) drawnSession {
	sp := p.Session(i)
	out := drawnSession{ID: sp.ID, Persona: sp.Persona}
	c := p.Cursor(i)
	for t, text, ok := c.Next(); ok; t, text, ok = c.Next() {
		t.User = text
		out.Turns = append(out.Turns, t)
	}
	return out
}

// TestSessionsPastThePoolAreDrawnFresh: by default a synthetic stage that needs more sessions than
// its pool draws session n from (seed, stage, n): the same session on every build, the one a larger
// pool would hold at n, with an id of its own and a first prompt no other session has.
func TestSessionsPastThePoolAreDrawnFresh(t *testing.T) {
	_, a := buildText(t, "a.yaml", reuseScenario(4, ""))
	_, b := buildText(t, "b.yaml", reuseScenario(4, ""))
	_, big := buildText(t, "big.yaml", reuseScenario(40, ""))
	pa, pb, pbig := &a.Stages[0], &b.Stages[0], &big.Stages[0]
	if pa.Reuse != ReuseFresh || !pa.DrawsPastPool() {
		t.Fatalf("default session_reuse %q (draws past the pool: %v), want fresh", pa.Reuse, pa.DrawsPastPool())
	}
	firstPrompts := map[string]int{}
	for i := range 40 {
		got := drawSession(pa, i)
		if want := drawSession(pb, i); !cmp.Equal(want, got) {
			t.Fatalf("session %d differs between two builds of one scenario:\n%s", i, cmp.Diff(want, got))
		}
		if want := drawSession(pbig, i); !cmp.Equal(want, got) {
			t.Fatalf("session %d past a pool of 4 is not the one a pool of 40 holds:\n%s", i, cmp.Diff(want, got))
		}
		if wantID := fmt.Sprintf("s01-%06d", i); got.ID != wantID {
			t.Errorf("session %d: id %q, want %q", i, got.ID, wantID)
		}
		if len(got.Turns) == 0 || got.Turns[0].User == "" {
			t.Fatalf("session %d has no first turn: %+v", i, got)
		}
		first := fmt.Sprint(got.Persona, "|", got.Turns[0].User)
		if j, seen := firstPrompts[first]; seen {
			t.Errorf("sessions %d and %d send the same first prompt", j, i)
		}
		firstPrompts[first] = i
	}
	if len(pa.Sessions) != 4 {
		t.Errorf("the pool grew to %d entries drawing past it, want 4", len(pa.Sessions))
	}
}

// TestSessionReuseIsInTheDatasetIdentity: the stage's sha256 names what it sends past its pool, so
// scenarios that differ only in load.session_reuse never share one; the file itself is the same.
func TestSessionReuseIsInTheDatasetIdentity(t *testing.T) {
	files, shas := map[string]string{}, map[string]string{}
	for _, reuse := range sessionReuses {
		_, w := buildText(t, reuse+".yaml", reuseScenario(4, reuse))
		p := &w.Stages[0]
		files[reuse], shas[reuse] = string(datasetOf(t, p)), p.SHA256
		if p.DrawsPastPool() != (reuse == "fresh") || p.NoncesRepeats() != (reuse == "wrap") {
			t.Errorf("%s: draws past the pool %v, nonce on repeats %v", reuse, p.DrawsPastPool(), p.NoncesRepeats())
		}
	}
	if files["fresh"] != files["wrap"] || files["wrap"] != files["wrap_identical"] {
		t.Error("dataset.jsonl differs with session_reuse; only its identity should")
	}
	if shas["fresh"] == shas["wrap"] || shas["wrap"] == shas["wrap_identical"] || shas["fresh"] == shas["wrap_identical"] {
		t.Errorf("two session_reuse rules share a sha256: %v", shas)
	}
}

// TestSessionReuseChecks: a value outside the three, and fresh with a dataset (whose conversations
// cannot be drawn anew), are errors on load.session_reuse; a dataset wraps by default, and a wrap
// pool likely to run dry warns while a fresh one does not.
func TestSessionReuseChecks(t *testing.T) {
	dir := t.TempDir()
	copyTestdata(t, dir, "openai-conversations.jsonl")
	dataset := func(reuse string) string {
		text := strings.Replace(reuseScenario(4, reuse), "personas: {count: 5, system_prompt_tokens: 20}\n",
			"workload: {dataset: {file: openai-conversations.jsonl, format: openai}}\n", 1)
		return strings.Replace(text, "session: {turns: {min: 1, max: 4}, user_input_tokens: {min: 5, max: 40}, max_output_tokens: 8, think_time: 1s}\n", "", 1)
	}
	for _, tc := range []struct {
		name, text string
		errors     string // "" : valid
		warns      bool   // the dry-pool warning
		reuse      SessionReuse
	}{
		{"synthetic default", reuseScenario(4, ""), "", false, ReuseFresh},
		{"synthetic wrap", reuseScenario(4, "wrap"), "", true, ReuseWrap},
		{"synthetic identical", reuseScenario(4, "wrap_identical"), "", true, ReuseWrapIdentical},
		{"unknown value", reuseScenario(4, "again"), `load.session_reuse: found "again"; accepted: fresh, wrap, wrap_identical`, false, ""},
		{"dataset default", dataset(""), "", true, ReuseWrap}, // 2 conversations for about 8 sessions
		{"dataset fresh", dataset("fresh"), "load.session_reuse: fresh draws new synthetic sessions, and this workload's conversations are its file's", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			s, issues := Load(path, LoadOptions{})
			err := issues.Err()
			switch {
			case tc.errors == "" && err != nil:
				t.Fatalf("valid scenario refused: %v", err)
			case tc.errors != "" && (err == nil || !strings.Contains(err.Error(), tc.errors)):
				t.Fatalf("want an error containing %q, got %v", tc.errors, err)
			case tc.errors != "":
				return
			}
			if s.Load.SessionReuse != tc.reuse {
				t.Errorf("session_reuse %q, want %q", s.Load.SessionReuse, tc.reuse)
			}
			if warned := strings.Contains(fmt.Sprint(issues), "likely to run dry"); warned != tc.warns {
				t.Errorf("dry-pool warning %v, want %v: %v", warned, tc.warns, issues)
			}
		})
	}
}

// TestFileRepeatsAreMarked: a file shorter than the sessions its stages take starts over, each stage
// going on where the last stopped; the pool entries past the file's end repeat conversations the
// run already sent, and FirstRepeat says where they begin.
func TestFileRepeatsAreMarked(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, `{"messages": [{"role": "user", "content": "question %d"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "c.jsonl"), []byte(b.String()), 0o644)
	text := `name: t
seed: 1
target: {base_url: mock}
workload: {dataset: {file: c.jsonl, format: openai}}
load:
  mode: concurrency
  stages:
    - {concurrency: 1, duration: 1s, sessions: 2}
    - {concurrency: 1, duration: 1s, sessions: 4}
    - {concurrency: 1, duration: 1s}
`
	path := filepath.Join(dir, "s.yaml")
	os.WriteFile(path, []byte(text), 0o644)
	_, w := loadAndBuild(t, path)
	var got []int
	for i := range w.Stages {
		got = append(got, w.Stages[i].FirstRepeat())
	}
	// Stage 1 sends conversations 0 and 1; stage 2 sends 2, then 0, 1, 2 again; stage 3 the whole
	// file, all sent before.
	if diff := cmp.Diff([]int{2, 1, 0}, got); diff != "" {
		t.Errorf("first repeating entry by stage (-want +got):\n%s", diff)
	}
	if w.Stages[0].DrawsPastPool() {
		t.Error("a pool from a file draws sessions past its end")
	}
}
