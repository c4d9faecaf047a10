package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// datasetScenario is a scenario over a dataset; dir holds the scenario, so relative files resolve there.
func datasetScenario(t *testing.T, dir, dataset string) (*Scenario, Issues) {
	t.Helper()
	text := fmt.Sprintf(`name: ds
seed: 7
target: {base_url: mock}
workload:
  dataset: %s
load:
  mode: concurrency
  stages:
    - {concurrency: 2, duration: 1s}
slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}
cost: {gpu_hourly_usd: 1}
`, dataset)
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path, LoadOptions{})
}

func copyTestdata(t *testing.T, dir, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "datasets", name))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, name), data, 0o644)
}

type turnView struct {
	User     string
	Max      int
	Recorded string
}

type sessionView struct {
	System string
	Turns  []turnView
}

func view(w *Workload, pool StagePool) []sessionView {
	var out []sessionView
	for _, sp := range pool.Sessions {
		v := sessionView{}
		if sp.Persona >= 0 {
			v.System = w.Personas[sp.Persona].SystemPrompt
		}
		for _, t := range sp.Turns {
			v.Turns = append(v.Turns, turnView{User: t.User, Max: int(t.MaxOutputTokens), Recorded: t.RecordedText()})
		}
		out = append(out, v)
	}
	return out
}

// TestDatasetsLoadEachFormat: the samples of each format give the file's system prompts and user
// turns, in order, and the output lengths the file or the options give.
func TestDatasetsLoadEachFormat(t *testing.T) {
	for _, tc := range []struct {
		file, spec string
		lines      int
		want       []sessionView
	}{
		{"prompts.jsonl", "{file: prompts.jsonl, format: prompts}", 5, []sessionView{
			{Turns: []turnView{{User: "Summarise the return policy for a customer who bought shoes 40 days ago.", Max: 120}}},
			{Turns: []turnView{{User: "Write a short haiku about a lighthouse in winter.", Max: 256}}},
			{Turns: []turnView{{User: "Translate to French: the meeting is moved to Thursday at 10.", Max: 256}}},
		}},
		{"openai-conversations.jsonl", "{file: openai-conversations.jsonl, format: openai, output_tokens: 64}", 2, []sessionView{
			{System: "You are Mira, a cheerful travel guide who answers briefly.", Turns: []turnView{
				{User: "I have two days in Lisbon. Where do I start?", Max: 64, Recorded: "(recorded answer, not replayed)"},
				{User: "And where should I eat on the first evening?", Max: 64}}},
			{Turns: []turnView{{User: "What is the capital of Australia?", Max: 64, Recorded: "Canberra."},
				{User: "Why not Sydney?", Max: 64, Recorded: "(recorded)"}, {User: "Give me one fun fact about it.", Max: 64}}},
		}},
		{"sharegpt.json", "{file: sharegpt.json, format: sharegpt}", 2, []sessionView{
			{Turns: []turnView{{User: "Explain what a prefix cache does in an LLM server.", Max: 256, Recorded: "(recorded)"},
				{User: "And when does it miss?", Max: 256, Recorded: "(recorded)"}}},
			{System: "You answer as a pirate.", Turns: []turnView{{User: "How do I boil an egg?", Max: 256, Recorded: "(recorded)"}}},
		}},
		{"aiperf-multi-turn.jsonl", "{file: aiperf-multi-turn.jsonl, format: aiperf}", 3, []sessionView{
			{Turns: []turnView{{User: "What is deep learning?", Max: 256}, {User: "Who are you?", Max: 256}}},
			{Turns: []turnView{{User: "What is machine learning?", Max: 256}, {User: "Can you give me an example?", Max: 256}}},
			{Turns: []turnView{{User: "Explain neural networks.", Max: 256}, {User: "How do they differ from traditional algorithms?", Max: 256},
				{User: "Which architecture for image classification?", Max: 256}}},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			copyTestdata(t, dir, tc.file)
			sc, issues := datasetScenario(t, dir, tc.spec)
			if err := issues.Err(); err != nil {
				t.Fatal(err)
			}
			src := sc.Source()
			if src.Lines != tc.lines || src.LinesUsed != len(src.Sessions) || len(src.SHA256) != 64 {
				t.Fatalf("lines %d (want %d), used %d, sha %q", src.Lines, tc.lines, src.LinesUsed, src.SHA256)
			}
			w, err := sc.Build()
			if err != nil {
				t.Fatal(err)
			}
			got := view(w, w.Stages[0])
			if len(got) > len(tc.want) {
				got = got[:len(tc.want)]
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("sessions (-want +got):\n%s", d)
			}
		})
	}
}

// TestAIPerfDelayIsThinkTime: AIPerf's per-turn delay is the pause before the turn.
func TestAIPerfDelayIsThinkTime(t *testing.T) {
	dir := t.TempDir()
	copyTestdata(t, dir, "aiperf-multi-turn.jsonl")
	sc, issues := datasetScenario(t, dir, "{file: aiperf-multi-turn.jsonl, format: aiperf}")
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, _ := sc.Build()
	if got := w.Stages[0].Sessions[0].Turns[1].ThinkBefore.Milliseconds(); got != 1000 {
		t.Fatalf("think before turn 2: %d ms, want the file's 1000", got)
	}
}

// TestDatasetOptions: max_turns cuts, max_input_tokens cuts a conversation before its first request
// past it, min_input_tokens leaves short ones out (with a warning), shuffle is seeded, and a
// distribution of output tokens is drawn per turn.
func TestDatasetOptions(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, `{"messages": [{"role": "user", "content": "question %d one"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "question %d two is a longer one with more words in it"}, {"role": "user", "content": "three"}]}`+"\n", i, i)
	}
	os.WriteFile(filepath.Join(dir, "c.jsonl"), []byte(b.String()), 0o644)
	load := func(spec string) (*Scenario, *Workload) {
		t.Helper()
		sc, issues := datasetScenario(t, dir, spec)
		if err := issues.Err(); err != nil {
			t.Fatal(err)
		}
		w, err := sc.Build()
		if err != nil {
			t.Fatal(err)
		}
		return sc, w
	}
	_, w := load("{file: c.jsonl, format: openai, max_turns: 1}")
	if n := len(w.Stages[0].Sessions[0].Turns); n != 1 {
		t.Fatalf("max_turns 1 gave %d turns", n)
	}
	_, w = load("{file: c.jsonl, format: openai, max_input_tokens: 8}")
	if n := len(w.Stages[0].Sessions[0].Turns); n != 1 {
		t.Fatalf("max_input_tokens 8 gave %d turns (the second request is over it)", n)
	}
	_, issues := datasetScenario(t, dir, "{file: c.jsonl, format: openai, min_input_tokens: 1000}")
	if !strings.Contains(fmt.Sprint(issues), "none of its 40 lines gives a request within the filters") {
		t.Fatalf("every conversation under min_input_tokens: %v", issues)
	}
	_, seq := load("{file: c.jsonl, format: openai}")
	_, shuf := load("{file: c.jsonl, format: openai, order: shuffle}")
	_, shuf2 := load("{file: c.jsonl, format: openai, order: shuffle}")
	first := func(w *Workload) string { return w.Stages[0].Sessions[0].Turns[0].User }
	if first(seq) != "question 0 one" || !cmp.Equal(view(shuf, shuf.Stages[0]), view(shuf2, shuf2.Stages[0])) {
		t.Fatalf("order: sequential %q, shuffled %q and %q", first(seq), first(shuf), first(shuf2))
	}
	if cmp.Equal(view(seq, seq.Stages[0]), view(shuf, shuf.Stages[0])) {
		t.Fatal("shuffle kept the file's order")
	}
	_, w = load("{file: c.jsonl, format: openai, output_tokens: {min: 10, max: 20}}")
	seen := map[int]bool{}
	for _, sp := range w.Stages[0].Sessions {
		for _, tu := range sp.Turns {
			if tu.MaxOutputTokens < 10 || tu.MaxOutputTokens > 20 {
				t.Fatalf("output tokens %d outside 10–20", tu.MaxOutputTokens)
			}
			seen[int(tu.MaxOutputTokens)] = true
		}
	}
	if len(seen) < 3 {
		t.Fatalf("output tokens not drawn per turn: %v", seen)
	}
}

// TestBadDatasetsAreRefusedAtTheirLine: a bad line is an error naming the file and line and what is
// accepted, and never quotes the file's text.
func TestBadDatasetsAreRefusedAtTheirLine(t *testing.T) {
	for _, tc := range []struct {
		format, content, want string
	}{
		{"prompts", "{\"prompt\": \"SECRET ok\"}\n{\"prompt\": \"SECRET\", \"output_tokens\": -3}\n", "line 2: output length \"-3\""},
		{"prompts", "{\"prompt\": \"SECRET ok\"}\n\nnot json SECRET\n", "line 3: not a JSON object"},
		{"prompts", "{\"note\": \"SECRET\"}\n", "line 1: \"prompt\" (or \"text\") is missing"},
		{"openai", "{\"messages\": [{\"role\": \"assistant\", \"content\": \"SECRET\"}]}\n", "line 1: no user message"},
		{"openai", "{\"messages\": [{\"role\": \"robot\", \"content\": \"SECRET\"}]}\n", "line 1: messages[0].role \"robot\""},
		{"aiperf", "{\"session_id\": \"a\", \"turns\": [{\"delay\": 5}]}\n", "line 1: turns[0] has no \"text\""},
		{"sharegpt", "[{\"conversations\": [{\"from\": \"human\", \"value\": \"SECRET\"}]}, {\"conversations\": [{\"from\": \"alien\", \"value\": \"SECRET\"}]}]", "item 2: conversations[0].from \"alien\""},
		{"sharegpt", "{\"SECRET\": 1}", "not a JSON array"},
		{"prompts", "", "none of its 0 lines"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "d.data"), []byte(tc.content), 0o644)
		_, issues := datasetScenario(t, dir, "{file: d.data, format: "+tc.format+"}")
		msg := fmt.Sprint(issues.Err())
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "workload.dataset.file") || !strings.Contains(msg, "d.data") {
			t.Errorf("%s %q: %s (want %q)", tc.format, tc.content, msg, tc.want)
		}
		if strings.Contains(msg, "SECRET") {
			t.Errorf("the error quotes the file's text: %s", msg)
		}
	}
}

// TestDatasetScenarioRules: a workload block needs one source, a known format, and no recorded
// history for prompts; personas and session lengths are then not required.
func TestDatasetScenarioRules(t *testing.T) {
	dir := t.TempDir()
	copyTestdata(t, dir, "prompts.jsonl")
	for spec, want := range map[string]string{
		"{file: prompts.jsonl, format: csv}":                        "workload.dataset.format: found \"csv\"",
		"{format: prompts}":                                         "workload.dataset.file: required but missing",
		"{file: prompts.jsonl, format: prompts, history: recorded}": "a prompts file has no recorded answers",
		"{file: nope.jsonl, format: prompts}":                       "cannot read the dataset",
		"{file: prompts.jsonl, format: prompts, order: random}":     "workload.dataset.order: found \"random\"",
	} {
		_, issues := datasetScenario(t, dir, spec)
		if msg := fmt.Sprint(issues.Err()); !strings.Contains(msg, want) {
			t.Errorf("%s: %s (want %q)", spec, msg, want)
		}
	}
	if _, issues := datasetScenario(t, dir, "{file: prompts.jsonl, format: prompts}"); issues.Err() != nil {
		t.Fatalf("no personas or session block needed: %v", issues.Err())
	}
}

// TestNonceValues: workload.nonce is true, after_system or false, and round-trips through the
// resolved scenario.
func TestNonceValues(t *testing.T) {
	base := "name: n\ntarget: {base_url: mock}\npersonas: {count: 1, system_prompt_tokens: 10}\nsession: {turns: 1, user_input_tokens: 5, max_output_tokens: 5, think_time: 0s}\nload: {mode: concurrency, stages: [{concurrency: 1, duration: 1s}]}\nslo: {ttft_p95: 1s, itl_p95: 1s, error_rate_max: 0.1}\ncost: {gpu_hourly_usd: 1}\n"
	for value, want := range map[string]Nonce{"true": NonceStart, "after_system": NonceAfterSystem, "false": ""} {
		sc, issues := Parse("n.yaml", []byte(base+"workload: {nonce: "+value+"}\n"), LoadOptions{})
		if err := issues.Err(); err != nil || sc.NonceAt() != want {
			t.Fatalf("nonce %s: %v, %q", value, err, sc.NonceAt())
		}
		resolved, err := sc.ResolvedYAML()
		if err != nil {
			t.Fatal(err)
		}
		again, issues := Parse("r.yaml", resolved, LoadOptions{})
		if err := issues.Err(); err != nil || again.NonceAt() != want {
			t.Fatalf("nonce %s after resolving: %v, %q\n%s", value, err, again.NonceAt(), resolved)
		}
	}
	_, issues := Parse("n.yaml", []byte(base+"workload: {nonce: sometimes}\n"), LoadOptions{})
	if msg := fmt.Sprint(issues.Err()); !strings.Contains(msg, "n.yaml:8:19: workload.nonce: found \"sometimes\"") || !strings.Contains(msg, "after_system") {
		t.Fatalf("a bad nonce: %s", msg)
	}
}

// TestLargeDatasets: 100k-line files of every dataset format load, every line used, in order.
func TestLargeDatasets(t *testing.T) {
	if testing.Short() {
		t.Skip("100k-line files: not in -short")
	}
	const n = 100_000
	dir := t.TempDir()
	files := map[string]func(i int) string{
		FormatPrompts: func(i int) string {
			return fmt.Sprintf(`{"prompt": "request %d: summarise the order", "output_tokens": %d}`, i, 1+i%100)
		},
		FormatOpenAI: func(i int) string {
			return fmt.Sprintf(`{"messages": [{"role": "system", "content": "You are agent %d."}, {"role": "user", "content": "question %d"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "and then?"}]}`, i%50, i)
		},
		FormatAIPerf: func(i int) string {
			return fmt.Sprintf(`{"session_id": "s%d", "turns": [{"text": "question %d", "delay": 0}, {"text": "more", "delay": 500}]}`, i, i)
		},
	}
	for format, line := range files {
		var b strings.Builder
		for i := range n {
			b.WriteString(line(i))
			b.WriteByte('\n')
		}
		os.WriteFile(filepath.Join(dir, format+".data"), []byte(b.String()), 0o644)
	}
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id": "c%d", "conversations": [{"from": "human", "value": "question %d"}, {"from": "gpt", "value": "a"}]}`, i, i)
	}
	b.WriteString("]")
	os.WriteFile(filepath.Join(dir, FormatShareGPT+".data"), []byte(b.String()), 0o644)
	for _, format := range []string{FormatPrompts, FormatOpenAI, FormatShareGPT, FormatAIPerf} {
		start := time.Now()
		sc, issues := datasetScenario(t, dir, "{file: "+format+".data, format: "+format+"}")
		if err := issues.Err(); err != nil {
			t.Fatal(err)
		}
		src := sc.Source()
		t.Logf("%s: %d lines in %v", format, src.Lines, time.Since(start).Round(time.Millisecond))
		if src.Lines != n || src.LinesUsed != n || !strings.Contains(src.Sessions[n-1].Turns[0].User, fmt.Sprint(n-1)) {
			t.Fatalf("%s: %d lines, %d used, last %q", format, src.Lines, src.LinesUsed, src.Sessions[n-1].Turns[0].User)
		}
	}
}
