package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plload/plload/llamaserver"
)

// retrievalLoad is the real-server retrieval runs' load: short, two at a time.
const retrievalLoad = `load:
  mode: concurrency
  drain_timeout: 60s
  stages:
    - {concurrency: 2, warmup: 1s, duration: 6s}
slo:
  e2e: {p95: 10s}
`

// TestRealServerEmbeddings: an embeddings stage against llama-server's /v1/embeddings (--embeddings,
// a mean-pooling model): no errors; every answer had a vector per input (retrieval_items, checked
// before a record is written); the server's prompt tokens equal the client's count of the inputs
// (llama.cpp adds no token to an embeddings input), and the stage is priced per input token.
func TestRealServerEmbeddings(t *testing.T) {
	s := llamaserver.Require(t, llamaserver.ModelOptions{Pooling: "mean"}, llamaserver.Options{Slots: 2, Context: 4096, Aliases: []string{"tiny"}, Extra: []string{"--embeddings"}})
	sc := realScenario(t, s, "real-embeddings", "tiny", `  endpoint: embeddings
embeddings:
  inputs: {min: 1, max: 4}
  input_tokens: {min: 20, max: 60}
`+retrievalLoad+"cost: {gpu_hourly_usd: 1}\n")
	code, out, stages := realRun(t, sc)
	checkClean(t, code, out, stages, 1, 0)
	st := stages[0]
	agreement, ok := at(st, "summary.prompt_tokens_agreement").(map[string]any)
	if !ok {
		t.Fatalf("no prompt agreement in stage.json:\n%s", out)
	}
	if mean, _ := at(agreement, "ratio.mean").(float64); mean < 0.999 || mean > 1.001 {
		t.Errorf("the server's prompt tokens over the client's: %v; llama.cpp counts an embeddings input as the tokenizer does", agreement)
	}
	t.Logf("embeddings on llama-server: %v req/s, %v input tok/s, latency p50 %v ms, server/client prompt tokens %v", at(st, "summary.throughput.req_per_sec"), at(st, "summary.throughput.input_tok_per_sec"), at(st, "summary.e2e_ms.p50"), at(agreement, "ratio.mean"))
	if c := at(st, "summary.cost.usd_per_1m_in"); c == nil {
		t.Errorf("no $/1M input tokens: %v", at(st, "summary.cost"))
	}
	if !strings.Contains(out, "(embeddings): input tok/s") {
		t.Errorf("no retrieval headline:\n%s", out)
	}
}

// TestRealServerRerank: a rerank stage against llama-server's /v1/rerank (--reranking, a reranker
// with a classifier head): no errors; each answer scored top_n documents, ranked (protocol checks
// indexes and counts); usage is the server's (every document through the rerank template, so more
// than the client's count of the texts).
func TestRealServerRerank(t *testing.T) {
	s := llamaserver.Require(t, llamaserver.ModelOptions{Pooling: "rank"}, llamaserver.Options{Slots: 2, Context: 8192, Aliases: []string{"tiny"}, Extra: []string{"--reranking"}})
	sc := realScenario(t, s, "real-rerank", "tiny", `  endpoint: rerank
rerank:
  query_tokens: {min: 5, max: 15}
  documents: {min: 3, max: 6}
  document_tokens: {min: 20, max: 50}
  top_n: 2
`+retrievalLoad)
	code, out, stages, dir := realRunIn(t, t.TempDir(), sc)
	checkClean(t, code, out, stages, 1, 0)
	st := stages[0]
	if at(st, "summary.prompt_tokens_agreement") != nil {
		t.Errorf("rerank records in prompt agreement: %v", at(st, "summary.prompt_tokens_agreement"))
	}
	// The server's prompt tokens against the client's count of the texts, from the records.
	data, err := os.ReadFile(filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	extra, n := 0.0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Metrics map[string]struct {
				Value float64 `json:"value"`
			} `json:"metrics"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Metrics["usage_prompt_tokens"].Value > 0 {
			extra += r.Metrics["usage_prompt_tokens"].Value - r.Metrics["client_prompt_tokens"].Value
			n++
		}
	}
	t.Logf("rerank on llama-server: %v req/s, latency p50 %v ms, the template's tokens per request %.1f (%d requests)", at(st, "summary.throughput.req_per_sec"), at(st, "summary.e2e_ms.p50"), extra/float64(max(n, 1)), n)
	if n < 5 || extra/float64(n) <= 0 {
		t.Errorf("the server counted %.1f tokens more than the client's texts per request over %d requests: llama.cpp's rerank template wraps every document", extra/float64(max(n, 1)), n)
	}
}

// TestRealServerRAG: RAG turns whose steps go to servers of their own — embed to a llama-server
// with an embedding model, rerank to one with a reranker — and whose chat goes to a third: no
// errors anywhere; every turn ran both steps; the whole turn's latency is at least its steps' and
// its chat's; the report shows the pipeline.
func TestRealServerRAG(t *testing.T) {
	chat := llamaserver.Require(t, llamaserver.ModelOptions{}, llamaserver.Options{Slots: 2, Context: 8192, Aliases: []string{"tiny"}})
	embed := llamaserver.Require(t, llamaserver.ModelOptions{Pooling: "mean"}, llamaserver.Options{Slots: 2, Context: 4096, Aliases: []string{"emb"}, Extra: []string{"--embeddings"}})
	rerank := llamaserver.Require(t, llamaserver.ModelOptions{Pooling: "rank"}, llamaserver.Options{Slots: 2, Context: 8192, Aliases: []string{"rr"}, Extra: []string{"--reranking"}})
	sc := realScenario(t, chat, "real-rag", "tiny", fmt.Sprintf(`personas:
  count: 2
  system_prompt_tokens: {min: 100, max: 200}
session:
  turns: {min: 1, max: 3}
  user_input_tokens: {min: 10, max: 30}
  max_output_tokens: {min: 4, max: 8}
  think_time: 50ms
  rag:
    candidates: {min: 3, max: 5}
    document_tokens: {min: 30, max: 60}
    top_k: 2
    embed: {base_url: %q, model: emb}
    rerank: {base_url: %q, model: rr}
%sslo:
  rag_turn: {p95: 30s}
`, embed.URL, rerank.URL, strings.TrimSuffix(retrievalLoad, "slo:\n  e2e: {p95: 10s}\n")))
	code, out, stages, dir := realRunIn(t, t.TempDir(), sc)
	checkClean(t, code, out, stages, 1, 0)
	st := stages[0]
	steps, _ := at(st, "summary.rag.steps").([]any)
	if len(steps) != 2 {
		t.Fatalf("rag steps %v:\n%s", at(st, "summary.rag"), out)
	}
	for _, s := range steps {
		m := s.(map[string]any)
		if m["errors"].(float64) != 0 || m["succeeded"].(float64) < 3 {
			t.Errorf("step %v", m)
		}
	}
	turn, embedLat := num(t, st, "summary.rag.turn_ms.mean"), num(t, steps[0].(map[string]any), "latency_ms.mean")
	rerankLat, e2e := num(t, steps[1].(map[string]any), "latency_ms.mean"), num(t, st, "summary.e2e_ms.mean")
	t.Logf("RAG on three llama-servers: embed %.1f ms, rerank %.1f ms, chat E2E %.1f ms, whole turn %.1f ms (means); steps %v", embedLat, rerankLat, e2e, turn, steps)
	if turn < embedLat+rerankLat+e2e*0.5 {
		t.Errorf("a whole turn of %.1f ms, its steps %.1f and %.1f ms and its chat %.1f ms", turn, embedLat, rerankLat, e2e)
	}
	if report, _ := os.ReadFile(filepath.Join(dir, "report.md")); !strings.Contains(string(report), "RAG turns (question → embed → rerank → chat)") {
		t.Errorf("no RAG table in report.md")
	}
}

// TestRealServerEmbeddingsAtAReranker: llama-server started with --reranking answers /v1/embeddings
// with 200 and no embedding: vectors of zeros, or (llama.cpp 0.7.0) its rank scores followed by
// memory it never wrote — zeros, nulls and subnormal numbers. The preflight stops the run before any
// stage, naming the cause and the key to change, and exits 1. A preflight answer that looked like an
// embedding by chance lets the stage run; then its records fail naming the cause, and the stage
// fails its error-rate limit: never a pass on vectors the server did not compute.
func TestRealServerEmbeddingsAtAReranker(t *testing.T) {
	s := llamaserver.Require(t, llamaserver.ModelOptions{Pooling: "rank"}, llamaserver.Options{Slots: 1, Context: 4096, Aliases: []string{"tiny"}, Extra: []string{"--reranking"}})
	sc := realScenario(t, s, "real-embeddings-at-reranker", "tiny", "  endpoint: embeddings\n"+retrievalLoad+"  error_rate: 0\n")
	code, out, stages := realRun(t, sc)
	named := strings.Contains(out, "is all zeros") || strings.Contains(out, "memory it never wrote") || strings.Contains(out, "is null, not a number") || strings.Contains(out, "of the same text differ")
	refused := len(stages) == 0 && strings.Contains(out, "point target.base_url at a server of the embeddings API")
	if code == 0 || !named || (!refused && !strings.Contains(out, "SLO FAIL")) {
		t.Errorf("exit %d, %d stages:\n%s", code, len(stages), out)
	}
	if !refused {
		t.Logf("the preflight's answer passed for an embedding; the stage failed instead:\n%s", out)
	}
}
