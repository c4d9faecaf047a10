package llamaserver_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plload/plload/llamaserver"
	"github.com/plload/plload/tokenizer"
)

// The embedding and rerank answers of the real server, kept under testdata/ as fixtures for other
// packages (see testdata/README.md). `go test ./llamaserver -run TestRealServer -update` rewrites
// them from the live server; without -update a live answer must match its fixture: the same keys,
// counts and usage, its numbers within fixtureTolerance (another CPU may round differently).
var update = flag.Bool("update", false, "rewrite testdata/llamacpp_*.json from the live llama-server")

const fixtureTolerance = 1e-4

const tinyWidth = 64 // the tiny model's embedding width: the length of each vector

// embeddingsAnswer is an OpenAI /v1/embeddings answer as llama-server sends it.
type embeddingsAnswer struct {
	Model  string `json:"model"`
	Object string `json:"object"`
	Usage  struct {
		Prompt int `json:"prompt_tokens"`
		Total  int `json:"total_tokens"`
	} `json:"usage"`
	Data []struct {
		Embedding []float64 `json:"embedding"`
		Index     int       `json:"index"`
		Object    string    `json:"object"`
	} `json:"data"`
}

// rerankAnswer is a /v1/rerank answer as llama-server sends it.
type rerankAnswer struct {
	Model  string `json:"model"`
	Object string `json:"object"`
	Usage  struct {
		Prompt int `json:"prompt_tokens"`
		Total  int `json:"total_tokens"`
	} `json:"usage"`
	Results []struct {
		Index int     `json:"index"`
		Score float64 `json:"relevance_score"`
	} `json:"results"`
}

// TestRealServerEmbeddings: the mean-pooling tiny model under --embeddings answers two inputs with
// two unit vectors of the model's width, in order; its usage is Qwen3's count of the inputs (no
// token added); the server's /metrics count them as prompt tokens and never as cached, even when
// the same input comes again; it does not rerank.
func TestRealServerEmbeddings(t *testing.T) {
	s := llamaserver.Require(t, llamaserver.ModelOptions{Pooling: "mean"},
		llamaserver.Options{Slots: 2, Context: 4096, Aliases: []string{"tiny"}, Extra: []string{"--embeddings"}})
	tk := qwen3Tokenizer(t)
	inputs := []string{"a", "b"}
	request := `{"model":"tiny","input":["a","b"]}`
	before := serverCounters(t, s)
	body := post(t, s.URL+"/embeddings", request, http.StatusOK)
	matchesFixture(t, "llamacpp_embeddings.json", body)
	var got embeddingsAnswer
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := 0
	for _, in := range inputs {
		want += tk.Count(in)
	}
	if got.Model != "tiny" || got.Object != "list" || got.Usage.Prompt != want || got.Usage.Total != want || len(got.Data) != len(inputs) {
		t.Fatalf("model %q object %q usage %+v (want %d), %d vectors (want %d)", got.Model, got.Object, got.Usage, want, len(got.Data), len(inputs))
	}
	for i, d := range got.Data {
		norm := 0.0
		for _, x := range d.Embedding {
			norm += x * x
		}
		if d.Index != i || d.Object != "embedding" || len(d.Embedding) != tinyWidth || math.Abs(math.Sqrt(norm)-1) > 1e-3 {
			t.Errorf("vector %d: index %d object %q, %d dims (want %d), norm %.4f (want 1)", i, d.Index, d.Object, len(d.Embedding), tinyWidth, math.Sqrt(norm))
		}
	}
	if slices.Equal(got.Data[0].Embedding, got.Data[1].Embedding) {
		t.Error("two inputs got the same vector")
	}
	post(t, s.URL+"/embeddings", request, http.StatusOK)
	after := serverCounters(t, s)
	if d, c := after["prompt_tokens_total"]-before["prompt_tokens_total"], after["prompt_tokens_cached_total"]-before["prompt_tokens_cached_total"]; d != float64(2*want) || c != 0 {
		t.Errorf("/metrics: prompt tokens +%v (want %d: twice %d), cached +%v (want 0)", d, 2*want, want, c)
	}
	refused := post(t, s.URL+"/rerank", `{"model":"tiny","query":"q","documents":["x"]}`, http.StatusNotImplemented)
	if !strings.Contains(string(refused), "--reranking") {
		t.Errorf("rerank on an embeddings server: %s", refused)
	}
}

// TestRealServerRerank: the rank-pooling tiny model under --reranking scores every document with
// its yes-probability through the rerank template, and answers the top_n best, best first; its
// usage is the template's tokens, filled, summed over all the documents, top_n or not; /metrics
// count them and never as cached, though the same documents come three times; top_n 0 is no results.
func TestRealServerRerank(t *testing.T) {
	s := llamaserver.Require(t, llamaserver.ModelOptions{Pooling: "rank"},
		llamaserver.Options{Slots: 2, Context: 4096, Aliases: []string{"tiny"}, Extra: []string{"--reranking"}})
	tk := qwen3Tokenizer(t)
	query, docs := "q", []string{"x", "y", "z"}
	want := 0
	for _, d := range docs {
		want += tk.Count(strings.NewReplacer("{query}", query, "{document}", d).Replace(llamaserver.RerankTemplate))
	}
	before := serverCounters(t, s)
	rerank := func(topN string) rerankAnswer {
		t.Helper()
		body := post(t, s.URL+"/rerank", `{"model":"tiny","query":"q","documents":["x","y","z"]`+topN+`}`, http.StatusOK)
		if topN == `,"top_n":2` {
			matchesFixture(t, "llamacpp_rerank.json", body)
		}
		var got rerankAnswer
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if got.Model != "tiny" || got.Object != "list" || got.Usage.Prompt != want || got.Usage.Total != want {
			t.Errorf("top_n %q: model %q object %q usage %+v (want %d)", topN, got.Model, got.Object, got.Usage, want)
		}
		return got
	}
	top2, all, none := rerank(`,"top_n":2`), rerank(""), rerank(`,"top_n":0`)
	if len(all.Results) != len(docs) || len(top2.Results) != 2 || len(none.Results) != 0 {
		t.Fatalf("%d results without top_n (want %d), %d with top_n 2, %d with top_n 0", len(all.Results), len(docs), len(top2.Results), len(none.Results))
	}
	seen := map[int]bool{}
	for i, r := range all.Results {
		if r.Score <= 0 || r.Score >= 1 || seen[r.Index] || r.Index < 0 || r.Index >= len(docs) || i > 0 && r.Score > all.Results[i-1].Score {
			t.Errorf("results not a best-first ranking of each document once, scores in (0, 1): %+v", all.Results)
			break
		}
		seen[r.Index] = true
	}
	if d := cmp.Diff(all.Results[:2], top2.Results); d != "" {
		t.Errorf("top_n 2 is not the best two of all (-all +top2):\n%s", d)
	}
	after := serverCounters(t, s)
	if d, c := after["prompt_tokens_total"]-before["prompt_tokens_total"], after["prompt_tokens_cached_total"]-before["prompt_tokens_cached_total"]; d != float64(3*want) || c != 0 {
		t.Errorf("/metrics: prompt tokens +%v (want %d: three times %d), cached +%v (want 0)", d, 3*want, want, c)
	}
}

// TestRealServerRefusesEmbeddingsAndRerankUnasked: a server started without --embeddings or
// --reranking refuses both with 501 and the flag to start it with; the chat model under
// --embeddings, having no pooling type, refuses with 400.
func TestRealServerRefusesEmbeddingsAndRerankUnasked(t *testing.T) {
	plain := llamaserver.Require(t, llamaserver.ModelOptions{}, llamaserver.Options{Slots: 1, Context: 1024, Aliases: []string{"tiny"}})
	embeddings := post(t, plain.URL+"/embeddings", `{"model":"tiny","input":["a","b"]}`, http.StatusNotImplemented)
	matchesFixture(t, "llamacpp_embeddings_not_enabled.json", embeddings)
	rerank := post(t, plain.URL+"/rerank", `{"model":"tiny","query":"q","documents":["x"]}`, http.StatusNotImplemented)
	matchesFixture(t, "llamacpp_rerank_not_enabled.json", rerank)
	noPooling := llamaserver.Require(t, llamaserver.ModelOptions{}, llamaserver.Options{Slots: 1, Context: 1024, Aliases: []string{"tiny"}, Extra: []string{"--embeddings"}})
	refused := post(t, noPooling.URL+"/embeddings", `{"model":"tiny","input":["a"]}`, http.StatusBadRequest)
	if !strings.Contains(string(refused), "Pooling type 'none'") {
		t.Errorf("embeddings from the chat model: %s", refused)
	}
}

func qwen3Tokenizer(t *testing.T) tokenizer.Tokenizer {
	t.Helper()
	path, err := llamaserver.TokenizerJSON()
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// post sends a JSON body and returns the answer's, failing unless the status is want.
func post(t *testing.T, url, body string, want int) []byte {
	t.Helper()
	resp, err := llamaserver.FreshConnections.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("POST %s %s: status %d (want %d): %s", url, body, resp.StatusCode, want, got)
	}
	return got
}

// serverCounters are llama-server's llamacpp:* counters from /metrics, by name without the prefix.
func serverCounters(t *testing.T, s *llamaserver.Server) map[string]float64 {
	t.Helper()
	resp, err := http.Get(s.Host + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if name, isOurs := strings.CutPrefix(name, "llamacpp:"); ok && isOurs {
			if v, err := strconv.ParseFloat(value, 64); err == nil {
				out[name] = v
			}
		}
	}
	if _, ok := out["prompt_tokens_total"]; !ok {
		t.Fatalf("/metrics has no llamacpp:prompt_tokens_total (status %d)", resp.StatusCode)
	}
	return out
}

// matchesFixture compares a live answer with testdata/name (or rewrites it under -update): the same
// JSON, numbers within fixtureTolerance.
func matchesFixture(t *testing.T, name string, live []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, live, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	kept, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./llamaserver -run TestRealServer -update writes it)", err)
	}
	var want, got any
	if err := json.Unmarshal(kept, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(live, &got); err != nil {
		t.Fatalf("live answer for %s: %v: %s", name, err, live)
	}
	if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, fixtureTolerance)); d != "" {
		t.Errorf("the live answer differs from %s (-fixture +live):\n%s", path, d)
	}
}
