package workload

import (
	"strings"
	"testing"
)

const embeddingsScenario = `name: emb
target:
  base_url: http://127.0.0.1:1/v1
  model: m
  endpoint: embeddings
embeddings:
  inputs: {min: 2, max: 4}
  input_tokens: {min: 20, max: 40}
load:
  mode: concurrency
  stages:
    - {concurrency: 2, duration: 2s}
`

const rerankScenario = `name: rr
target:
  base_url: http://127.0.0.1:1/v1
  model: m
  endpoint: rerank
rerank:
  query_tokens: 12
  documents: 5
  document_tokens: {min: 30, max: 60}
  top_n: 2
load:
  mode: concurrency
  stages:
    - {concurrency: 2, duration: 2s}
`

const ragScenario = `name: rag
target:
  base_url: http://127.0.0.1:1/v1
  model: chat-model
personas:
  count: 2
  system_prompt_tokens: 50
session:
  turns: 2
  user_input_tokens: 15
  max_output_tokens: 8
  think_time: 0s
  rag:
    candidates: 6
    document_tokens: {min: 40, max: 80}
    top_k: 2
    embed: {model: emb-model}
    rerank: {base_url: "http://127.0.0.1:2/v1", model: rr-model}
load:
  mode: concurrency
  stages:
    - {concurrency: 2, duration: 2s}
`

// Every embeddings request has its drawn inputs at their exact lengths, a rerank request its
// query, documents and top_n; neither stage has personas, and each session is one request.
func TestRetrievalStagesDraw(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(t *testing.T, rt *RetrievalTurn)
	}{
		{"embeddings", embeddingsScenario, func(t *testing.T, rt *RetrievalTurn) {
			if n := len(rt.Inputs); n < 2 || n > 4 || rt.Query != "" || rt.TopN != 0 {
				t.Errorf("%d inputs, query %q, top_n %d", n, rt.Query, rt.TopN)
			}
		}},
		{"rerank", rerankScenario, func(t *testing.T, rt *RetrievalTurn) {
			if len(rt.Inputs) != 5 || rt.QueryTokens != 12 || rt.TopN != 2 || !strings.HasPrefix(rt.Inputs[0], "Reference document 1") {
				t.Errorf("%d documents, query %d tokens, top_n %d, first %.30q", len(rt.Inputs), rt.QueryTokens, rt.TopN, rt.Inputs[0])
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, issues := Parse("t.yaml", []byte(tc.yaml), LoadOptions{Getenv: noEnv})
			if len(issues.Errors()) > 0 {
				t.Fatal(issues)
			}
			w, err := s.Build()
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Personas) != 0 {
				t.Errorf("%d personas, want none", len(w.Personas))
			}
			pool := w.Stages[0]
			for i := range min(5, len(pool.Sessions)) {
				sp := pool.Session(i)
				turns := pool.Turns(i)
				if len(turns) != 1 || sp.Persona != -1 {
					t.Fatalf("session %d: %d turns, persona %d", i, len(turns), sp.Persona)
				}
				turn, text, _ := pool.Cursor(i).Next()
				rt := turn.RetrievalRequest()
				if rt == nil || text != "" {
					t.Fatalf("session %d: no retrieval request (user %q)", i, text)
				}
				tc.check(t, rt)
				for k, text := range rt.Inputs {
					if got := s.Tokenizer().Count(text); got != rt.InputTokens[k] {
						t.Errorf("input %d: %d tokens, drawn as %d", k, got, rt.InputTokens[k])
					}
				}
				if int(turn.UserTokens) != rt.Tokens() {
					t.Errorf("turn tokens %d, texts %d", turn.UserTokens, rt.Tokens())
				}
			}
		})
	}
}

// A RAG turn's question is its user message and its candidates are drawn beside it; the steps'
// targets fall back to target's keys; the chosen documents go first in the rerank's order.
func TestRAGTurns(t *testing.T) {
	s, issues := Parse("t.yaml", []byte(ragScenario), LoadOptions{Getenv: noEnv})
	if len(issues.Errors()) > 0 {
		t.Fatal(issues)
	}
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	turn, text, _ := w.Stages[0].Cursor(0).Next()
	rt := turn.RetrievalRequest()
	if rt == nil || len(rt.Inputs) != 6 || rt.Query != text || rt.QueryTokens != 15 || rt.TopN != 2 || turn.UserTokens != 15 {
		t.Fatalf("retrieval %+v for user %q", rt, text)
	}
	embed, rerank := s.StepTargetFor(s.Session.RAG.Embed), s.StepTargetFor(s.Session.RAG.Rerank)
	if embed.BaseURL != "http://127.0.0.1:1/v1" || embed.Model != "emb-model" || rerank.BaseURL != "http://127.0.0.1:2/v1" || rerank.Model != "rr-model" {
		t.Errorf("steps: %+v %+v", embed, rerank)
	}
	chosen := RAGChosen(rt, []int{4, 1, 0, 2, 3, 5}, 2)
	msg := RAGMessage(rt, chosen)
	if !strings.HasPrefix(msg, rt.Inputs[4]+"\n\n"+rt.Inputs[1]+"\n\n") || !strings.HasSuffix(msg, rt.Query) {
		t.Errorf("message %.80q", msg)
	}
	if got := RAGChosen(rt, nil, 3); len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Errorf("without a ranking: %v", got)
	}
}

// What a retrieval stage or a RAG turn cannot use is refused at its key, saying what is accepted.
func TestRetrievalRules(t *testing.T) {
	cases := []struct {
		name, yaml, path, message string
	}{
		{"embeddings with personas", embeddingsScenario + "personas: {count: 2, system_prompt_tokens: 5}\n", "personas",
			"target.endpoint embeddings sends no conversation"},
		{"rerank section on embeddings", embeddingsScenario + "rerank: {documents: 3}\n", "rerank",
			"accepted: the embeddings: section"},
		{"rerank top_n below 0", strings.Replace(rerankScenario, "top_n: 2", "top_n: -1", 1), "rerank.top_n", "found -1"},
		{"embeddings never stream", strings.Replace(embeddingsScenario, "endpoint: embeddings", "endpoint: embeddings\n  stream: true", 1), "target.stream",
			"answers are never streamed"},
		{"embeddings have no ttft", embeddingsScenario + "slo: {ttft: {p95: 1s}}\n", "slo.ttft.p95", "accepted: e2e"},
		{"embeddings have no itl", embeddingsScenario + "slo: {itl_p95: 50ms}\n", "slo.itl_p95", "accepted: e2e"},
		{"embeddings section on chat", strings.Replace(embeddingsScenario, "  endpoint: embeddings\n", "", 1), "embeddings",
			"accepted: target.endpoint embeddings; a RAG turn"},
		{"rag with no step", strings.Replace(strings.Replace(ragScenario, "    embed: {model: emb-model}\n", "", 1), "    rerank: {base_url: \"http://127.0.0.1:2/v1\", model: rr-model}\n", "", 1), "session.rag",
			"neither embed nor rerank is set"},
		{"rag top_k 0", strings.Replace(ragScenario, "top_k: 2", "top_k: 0", 1), "session.rag.top_k", "found 0"},
		{"rag step base_url", strings.Replace(ragScenario, `"http://127.0.0.1:2/v1"`, "127.0.0.1:2", 1), "session.rag.rerank.base_url",
			"accepted: an http:// or https:// URL"},
		{"rag and retrieved_tokens", strings.Replace(ragScenario, "  rag:\n", "  retrieved_tokens: 100\n  rag:\n", 1), "session.retrieved_tokens",
			"accepted: one of the two"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, issues := Parse("t.yaml", []byte(tc.yaml), LoadOptions{Getenv: noEnv})
			for _, is := range issues {
				if is.Path == tc.path && strings.Contains(is.Message, tc.message) && is.Line > 1 {
					return
				}
			}
			t.Errorf("no issue at %s saying %q, at a line; got:\n%v", tc.path, tc.message, issues)
		})
	}
}

// top_k above the fewest candidates is a warning; a constant count at or above it is none.
func TestRAGTopKWarning(t *testing.T) {
	for _, tc := range []struct {
		candidates string
		warn       bool
	}{{"6", false}, {"2", false}, {"1", true}, {"{min: 1, max: 9}", true}, {"{min: 2, max: 9}", false}} {
		_, issues := Parse("t.yaml", []byte(strings.Replace(ragScenario, "candidates: 6", "candidates: "+tc.candidates, 1)), LoadOptions{Getenv: noEnv})
		warned := false
		for _, is := range issues.Warnings() {
			warned = warned || is.Path == "session.rag.top_k"
		}
		if warned != tc.warn || len(issues.Errors()) > 0 {
			t.Errorf("candidates %s with top_k 2: warned %v, want %v (%v)", tc.candidates, warned, tc.warn, issues)
		}
	}
}

// A step on a server of its own never gets target's key; one on target's server does. A step's
// base_url may come from the environment, and its key variable is checked as target's is.
func TestRAGStepKeys(t *testing.T) {
	yaml := strings.Replace(ragScenario, "  model: chat-model\n", "  model: chat-model\n  api_key_env: CHAT_KEY\n", 1)
	yaml = strings.Replace(yaml, `rerank: {base_url: "http://127.0.0.1:2/v1", model: rr-model}`, `rerank: {base_url: "${RR_URL}", model: rr-model, api_key_env: RR_KEY}`, 1)
	env := func(k string) string {
		return map[string]string{"CHAT_KEY": "k1", "RR_URL": "http://127.0.0.1:2/v1"}[k]
	}
	s, issues := Parse("t.yaml", []byte(yaml), LoadOptions{Getenv: env, ForRun: true})
	var rrKey bool
	for _, is := range issues.Errors() {
		rrKey = rrKey || is.Path == "session.rag.rerank.api_key_env" && strings.Contains(is.Message, "RR_KEY is not set")
	}
	if !rrKey || len(issues.Errors()) != 1 {
		t.Fatalf("want only the unset RR_KEY refused; got %v", issues)
	}
	if e := s.StepTargetFor(s.Session.RAG.Embed); e.APIKeyEnv != "CHAT_KEY" {
		t.Errorf("a step on target's server: key %q, want target's", e.APIKeyEnv)
	}
	s.Session.RAG.Rerank.APIKeyEnv = ""
	if r := s.StepTargetFor(s.Session.RAG.Rerank); r.APIKeyEnv != "" {
		t.Errorf("a step on its own server: key %q, want none of target's", r.APIKeyEnv)
	}
}
