package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// conversations is an openai-format file: the first has a system prompt; assistant texts are recorded.
var conversations = []struct {
	system   string
	users    []string
	recorded []string
}{
	{"You are Mira, a travel guide.", []string{"Two days in Lisbon: where do I start?", "Where do I eat?", "And a day trip?"}, []string{"Alfama.", "Bairro Alto."}},
	{"", []string{"What is the capital of Australia?", "Why not Sydney?"}, []string{"Canberra.", "A compromise."}},
	{"You answer as a pirate.", []string{"How do I boil an egg?"}, nil},
}

func writeConversations(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, c := range conversations {
		var msgs []string
		if c.system != "" {
			msgs = append(msgs, fmt.Sprintf(`{"role": "system", "content": %q}`, c.system))
		}
		for i, u := range c.users {
			msgs = append(msgs, fmt.Sprintf(`{"role": "user", "content": %q}`, u))
			if i < len(c.recorded) {
				msgs = append(msgs, fmt.Sprintf(`{"role": "assistant", "content": %q}`, c.recorded[i]))
			}
		}
		fmt.Fprintf(&b, `{"messages": [%s]}`+"\n", strings.Join(msgs, ", "))
	}
	path := filepath.Join(t.TempDir(), "chats.jsonl")
	os.WriteFile(path, []byte(b.String()), 0o644)
	return path
}

// TestOpenAIConversationsReplay: replaying an openai conversation file sends exactly the file's user
// turns, in order, each after the system prompt (when the file has one) and the whole history — with
// history: live the server's own answers, with history: recorded the file's.
func TestOpenAIConversationsReplay(t *testing.T) {
	for _, history := range []string{"live", "recorded"} {
		t.Run(history, func(t *testing.T) {
			base, cap := startMock(t, nil)
			text := scenarioYAML(base, "  think_time: 5ms", "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 1200ms}")
			text = withSource(text, fmt.Sprintf("workload:\n  dataset: {file: %s, format: openai, output_tokens: 5, history: %s}\n", writeConversations(t), history))
			res, _, err := runScenario(t, context.Background(), text)
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Errors != 0 || res[0].Sessions < 3 {
				t.Fatalf("%+v", res[0])
			}
			cap.mu.Lock()
			defer cap.mu.Unlock()
			checked, tagged := map[int]bool{}, 0
			for _, reqs := range cap.requests {
				// A session that repeats a conversation (the file is shorter than the stage) carries
				// its own nonce before the first user message (load.session_reuse: wrap); the rest is
				// the file's, byte for byte.
				for k, rq := range reqs {
					if untagRepeat(rq.body) && k == 0 {
						tagged++
					}
				}
				first := reqs[0].body["messages"].([]any)
				conv := -1
				for i, c := range conversations {
					if last := first[len(first)-1].(map[string]any); last["content"] == c.users[0] {
						conv = i
					}
				}
				if conv < 0 {
					t.Fatalf("a session's first request is none of the file's conversations: %v", first)
				}
				c := conversations[conv]
				if len(reqs) > len(c.users) {
					t.Fatalf("conversation %d: %d requests for %d user turns", conv, len(reqs), len(c.users))
				}
				for k, rq := range reqs {
					var want []string
					if c.system != "" {
						want = append(want, "system: "+c.system)
					}
					for j := 0; j <= k; j++ {
						want = append(want, "user: "+c.users[j])
						if j < k {
							answer := reqs[j].answer // what the server streamed back
							if history == "recorded" {
								answer = c.recorded[j]
							}
							want = append(want, "assistant: "+answer)
						}
					}
					var got []string
					for _, m := range rq.body["messages"].([]any) {
						mm := m.(map[string]any)
						got = append(got, fmt.Sprint(mm["role"], ": ", mm["content"]))
					}
					if strings.Join(got, "\n") != strings.Join(want, "\n") {
						t.Fatalf("conversation %d request %d sent\n%s\nwant\n%s", conv, k, strings.Join(got, "\n"), strings.Join(want, "\n"))
					}
				}
				if len(reqs) == len(c.users) {
					checked[conv] = true
				}
			}
			if len(checked) != len(conversations) {
				t.Fatalf("conversations replayed in full: %v of %d", checked, len(conversations))
			}
			if tagged != res[0].Reused || tagged == 0 {
				t.Errorf("%d sessions began with a repeat's nonce; %d repeated a conversation (want the same, > 0)", tagged, res[0].Reused)
			}
		})
	}
}

// TestRecordedToolCallsReplayVerbatim: with history: recorded, an agent's recorded tool calls and
// tool results go back to the server exactly as the file has them, before the next user message.
func TestRecordedToolCallsReplayVerbatim(t *testing.T) {
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Lisbon\"}"}}]}`
	result := `{"role":"tool","tool_call_id":"call_1","content":"18 C, sunny"}`
	answer := `{"role":"assistant","content":"It is 18 C and sunny."}`
	line := `{"messages": [{"role": "user", "content": "Weather in Lisbon?"}, ` + call + `, ` + result + `, ` + answer + `, {"role": "user", "content": "And tomorrow?"}]}` + "\n"
	path := filepath.Join(t.TempDir(), "agent.jsonl")
	os.WriteFile(path, []byte(line), 0o644)
	base, cap := startMock(t, nil)
	text := scenarioYAML(base, "  think_time: 5ms", "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 400ms}")
	text = withSource(text, "workload:\n  dataset: {file: "+path+", format: openai, output_tokens: 5, history: recorded}\n")
	if _, _, err := runScenario(t, context.Background(), text); err != nil {
		t.Fatal(err)
	}
	cap.mu.Lock()
	defer cap.mu.Unlock()
	for _, reqs := range cap.requests {
		if len(reqs) < 2 {
			continue
		}
		untagRepeat(reqs[1].body)
		raw, _ := json.Marshal(reqs[1].body["messages"])
		want := `[{"content":"Weather in Lisbon?","role":"user"},` + canonical(t, call) + `,` + canonical(t, result) + `,` + canonical(t, answer) + `,{"content":"And tomorrow?","role":"user"}]`
		if string(raw) != want {
			t.Fatalf("turn 2 sent\n%s\nwant\n%s", raw, want)
		}
		return
	}
	t.Fatal("no session reached its second turn")
}

// repeatTag is the nonce a session that repeats a conversation carries before its first user message.
var repeatTag = regexp.MustCompile(`^\[s\d{2}-\d{6}\] `)

// untagRepeat removes a repeat's nonce from the captured body's messages; true when there was one.
// Only the first user message may carry it.
func untagRepeat(body map[string]any) bool {
	for _, m := range body["messages"].([]any) {
		mm := m.(map[string]any)
		if mm["role"] != "user" {
			continue
		}
		text, _ := mm["content"].(string)
		tag := repeatTag.FindString(text)
		mm["content"] = strings.TrimPrefix(text, tag)
		return tag != ""
	}
	return false
}

// canonical re-encodes JSON with sorted keys, as the captured body is.
func canonical(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestReusedSessionsKeepTheirOwnIDs: when the pool runs dry, each replay of an entry is a session of
// its own: a conversation id of its own (numbered by the run's ordinal), and metadata.dataset_session
// and the session line naming the entry it replays (docs/deployment.md), so per-session figures never merge two
// instances.
func TestReusedSessionsKeepTheirOwnIDs(t *testing.T) {
	base, _ := startMock(t, nil)
	text := scenarioYAML(base, "  think_time: 5ms", "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 800ms}")
	text = withSource(text, fmt.Sprintf("workload:\n  dataset: {file: %s, format: openai, output_tokens: 5}\n", writeConversations(t)))
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Errors != 0 || res[0].Reused == 0 {
		t.Fatalf("want a stage that reuses its 3 conversations without errors: %+v", res[0])
	}
	stage := filepath.Join(dir, "stage_01")
	recs := readRecords(t, filepath.Join(stage, "profile_export.jsonl"))
	checkAllRecords(t, recs)
	entryOf := map[string]int64{} // conversation id → dataset entry, from the records
	for _, r := range recs {
		md := r["metadata"].(map[string]any)
		id := md["conversation_id"].(string)
		var ordinal int64
		if _, err := fmt.Sscanf(id, "s01-%d", &ordinal); err != nil {
			t.Fatalf("conversation id %q: %v", id, err)
		}
		want := ordinal // an entry's first play is its own id; a replay's id is its ordinal
		if ordinal >= int64(len(conversations)) {
			want = ordinal % int64(len(conversations))
			if !isInt(md["dataset_session"]) || integer(md["dataset_session"]) != want {
				t.Fatalf("%s turn %v replays entry %d, but metadata.dataset_session = %v", id, md["turn_index"], want, md["dataset_session"])
			}
		} else if _, ok := md["dataset_session"]; ok {
			t.Fatalf("%s is its entry's first play, but has dataset_session %v", id, md["dataset_session"])
		}
		entryOf[id] = want
	}
	seen := map[string]bool{}
	reused := 0
	for _, s := range readSessions(t, filepath.Join(stage, "sessions.jsonl")) {
		id := s["conversation_id"].(string)
		if seen[id] {
			t.Fatalf("conversation id %s is used by two sessions", id)
		}
		seen[id] = true
		if s["reused"] == true {
			reused++
			if e, ok := entryOf[id]; ok && integer(s["dataset_session"]) != e {
				t.Fatalf("session %s: dataset_session %v, its records say %d", id, s["dataset_session"], e)
			}
		}
	}
	if reused != res[0].Reused {
		t.Fatalf("%d sessions marked reused, the stage counted %d", reused, res[0].Reused)
	}
}
