package mock

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tiktoken-go/tokenizer"
)

// embeddingsAnswer is an embeddings answer as a client reads it; Embedding is kept raw because it
// is an array of numbers or a base64 string, as encoding_format asks.
type embeddingsAnswer struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage retrievalUsage `json:"usage"`
}

type retrievalUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type rerankAnswer struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Results []struct {
		Index          int     `json:"index"`
		RelevanceScore float64 `json:"relevance_score"`
	} `json:"results"`
	Usage retrievalUsage `json:"usage"`
}

// retrieve posts body to the mock's path (embeddings or rerank) and returns the status, the body
// and the time from sending to the whole body read.
func retrieve(t *testing.T, m *Running, path, body string) (int, []byte, time.Duration) {
	t.Helper()
	began := time.Now()
	resp := post(t, nil, m.BaseURL()+"/"+path, []byte(body))
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", path, err)
	}
	return resp.StatusCode, b, time.Since(began)
}

// answerOf posts body to path and reads its 200 answer into out; it returns the time the answer took.
func answerOf(t *testing.T, m *Running, path, body string, out any) time.Duration {
	t.Helper()
	status, b, took := retrieve(t, m, path, body)
	if err := json.Unmarshal(b, out); status != http.StatusOK || err != nil {
		t.Fatalf("%s %s: HTTP %d %s (%v)", path, body, status, b, err)
	}
	return took
}

func embed(t *testing.T, m *Running, body string) (embeddingsAnswer, time.Duration) {
	t.Helper()
	var out embeddingsAnswer
	took := answerOf(t, m, "embeddings", body, &out)
	return out, took
}

func rerank(t *testing.T, m *Running, body string) (rerankAnswer, time.Duration) {
	t.Helper()
	var out rerankAnswer
	took := answerOf(t, m, "rerank", body, &out)
	return out, took
}

// floats reads an answer's vector: a JSON array of numbers, or base64 of little-endian float32s.
func floats(t *testing.T, raw json.RawMessage) []float32 {
	t.Helper()
	var v []float32
	if json.Unmarshal(raw, &v) == nil {
		return v
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("embedding %s is neither numbers nor a string", raw)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("embedding %q is not base64 of float32s: %v", s, err)
	}
	v = make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func norm(v []float32) float64 {
	var n float64
	for _, c := range v {
		n += float64(c) * float64(c)
	}
	return math.Sqrt(n)
}

func tokenCount(t *testing.T, texts ...string) int {
	t.Helper()
	codec, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range texts {
		k, _ := codec.Count(s)
		n += k
	}
	return n
}

func TestEmbeddingsShape(t *testing.T) {
	m := start(t, nil)
	inputs := []string{"the cat sat on the mat", "a different sentence", "the cat sat on the mat"}
	in, _ := json.Marshal(inputs)
	out, _ := embed(t, m, `{"model":"emb","input":`+string(in)+`}`)
	if out.Object != "list" || out.Model != "emb" || len(out.Data) != len(inputs) {
		t.Fatalf("want a list of %d embeddings for model emb: %+v", len(inputs), out)
	}
	vecs := make([][]float32, len(out.Data))
	for i, d := range out.Data {
		vecs[i] = floats(t, d.Embedding)
		if d.Object != "embedding" || d.Index != i || len(vecs[i]) != 384 {
			t.Errorf("data[%d]: object %q index %d, %d dimensions; want embedding, %d, 384", i, d.Object, d.Index, len(vecs[i]), i)
		}
		if n := norm(vecs[i]); math.Abs(n-1) > 1e-5 {
			t.Errorf("data[%d]: L2 norm %g, want 1", i, n)
		}
	}
	if !slices.Equal(vecs[0], vecs[2]) || slices.Equal(vecs[0], vecs[1]) {
		t.Error("equal inputs must get equal vectors, different ones different vectors")
	}
	if want := tokenCount(t, inputs...); out.Usage.PromptTokens != want || out.Usage.TotalTokens != want {
		t.Errorf("usage %+v; want prompt and total tokens %d (o200k_base)", out.Usage, want)
	}

	one, _ := embed(t, m, `{"model":"emb","input":"a different sentence","encoding_format":"base64"}`)
	if len(one.Data) != 1 || !slices.Equal(floats(t, one.Data[0].Embedding), vecs[1]) {
		t.Error("a string input in base64 must decode to the same float32s as the float answer")
	}
	short, _ := embed(t, m, `{"model":"emb","input":["a different sentence"],"dimensions":64}`)
	v := floats(t, short.Data[0].Embedding)
	if len(v) != 64 || math.Abs(norm(v)-1) > 1e-5 {
		t.Fatalf("dimensions 64: %d components, norm %g", len(v), norm(v))
	}
	head := norm(vecs[1][:64])
	for i, c := range v { // a Matryoshka truncation: the full vector's head, renormalised
		if math.Abs(float64(c)-float64(vecs[1][i])/head) > 1e-5 {
			t.Fatalf("dimensions 64: component %d is %g, want %g", i, c, float64(vecs[1][i])/head)
		}
	}
	wide := start(t, func(c *Config) { c.EmbeddingDimensions = 1024 })
	if out, _ := embed(t, wide, `{"model":"emb","input":"x"}`); len(floats(t, out.Data[0].Embedding)) != 1024 {
		t.Error("EmbeddingDimensions 1024 does not set the vector length")
	}
}

func TestEmbeddingsDeterministic(t *testing.T) {
	seeded := func(seed uint64) func(*Config) { return func(c *Config) { c.Seed = seed } }
	a, b, other := start(t, seeded(1)), start(t, seeded(1)), start(t, seeded(2))
	vector := func(m *Running, body string, i int) []float32 {
		out, _ := embed(t, m, body)
		return floats(t, out.Data[i].Embedding)
	}
	alone := vector(a, `{"model":"m","input":"hello world"}`, 0)
	if !slices.Equal(alone, vector(b, `{"model":"m","input":"hello world"}`, 0)) {
		t.Error("two mocks with the same seed gave different vectors for one text")
	}
	if !slices.Equal(alone, vector(a, `{"model":"m","input":["something else","hello world"]}`, 1)) {
		t.Error("a text's vector changed with the request it came in")
	}
	if slices.Equal(alone, vector(other, `{"model":"m","input":"hello world"}`, 0)) {
		t.Error("another seed gave the same vector")
	}
}

func TestRerankOrderAndTopN(t *testing.T) {
	m := start(t, nil)
	query := "which fruit is red"
	docs := []string{"apples are often red", "bananas are yellow", "the sky is blue", "cherries are red", "grass is green"}
	body := func(extra string) string {
		d, _ := json.Marshal(docs)
		return `{"model":"rr","query":` + jsonString(query) + `,"documents":` + string(d) + extra + `}`
	}
	all, _ := rerank(t, m, body(""))
	if all.Model != "rr" || all.Object != "list" || len(all.Results) != len(docs) {
		t.Fatalf("want %d results for model rr: %+v", len(docs), all)
	}
	var seen []int
	for k, r := range all.Results {
		if r.RelevanceScore <= 0 || r.RelevanceScore >= 1 || k > 0 && r.RelevanceScore > all.Results[k-1].RelevanceScore {
			t.Errorf("result %d: score %g; want in (0, 1) and no higher than the one before", k, r.RelevanceScore)
		}
		seen = append(seen, r.Index)
	}
	if slices.Sort(seen); !slices.Equal(seen, []int{0, 1, 2, 3, 4}) {
		t.Errorf("result indices %v: want each document once", seen)
	}
	pairs := 0
	for _, d := range docs {
		pairs += tokenCount(t, query, d)
	}
	if all.Usage.PromptTokens != pairs || all.Usage.TotalTokens != pairs {
		t.Errorf("usage %+v; want %d, the (query, document) pairs' tokens", all.Usage, pairs)
	}
	again, _ := rerank(t, m, body(""))
	if fmt.Sprint(again.Results) != fmt.Sprint(all.Results) {
		t.Errorf("the same request ranked differently: %v then %v", all.Results, again.Results)
	}
	top, _ := rerank(t, m, body(`,"top_n":2`))
	if fmt.Sprint(top.Results) != fmt.Sprint(all.Results[:2]) {
		t.Errorf("top_n 2: %v; want the best two of %v", top.Results, all.Results)
	}
	for _, extra := range []string{`,"top_n":0`, `,"top_n":99`} {
		if got, _ := rerank(t, m, body(extra)); len(got.Results) != len(docs) {
			t.Errorf("%s: %d results, want all %d", extra, len(got.Results), len(docs))
		}
	}
	objects, _ := rerank(t, m, `{"model":"rr","query":`+jsonString(query)+`,"documents":[{"text":"cherries are red"},"apples are often red"]}`)
	score := map[string]float64{}
	for _, r := range all.Results {
		score[docs[r.Index]] = r.RelevanceScore
	}
	for _, r := range objects.Results {
		if want := score[[]string{"cherries are red", "apples are often red"}[r.Index]]; r.RelevanceScore != want {
			t.Errorf("document %d as {text} scored %g, as a string %g", r.Index, r.RelevanceScore, want)
		}
	}
}

func TestRetrievalBadInput(t *testing.T) {
	m := start(t, nil)
	for _, tc := range []struct{ path, body, want string }{
		{"embeddings", `{`, "not a valid embeddings request"},
		{"embeddings", `{"model":"m"}`, "input is required"},
		{"embeddings", `{"model":"m","input":[]}`, "input is an empty array"},
		{"embeddings", `{"model":"m","input":""}`, "input is an empty string"},
		{"embeddings", `{"model":"m","input":["a",""]}`, "input[1] is an empty string"},
		{"embeddings", `{"model":"m","input":[1,2,3]}`, "input[0]: token ids are not accepted"},
		{"embeddings", `{"model":"m","input":[[1,2],[3]]}`, "input[0]: token ids are not accepted"},
		{"embeddings", `{"model":"m","input":{"text":"a"}}`, "input: accepted: a string or an array of strings"},
		{"embeddings", `{"model":"m","input":"a","encoding_format":"int8"}`, `encoding_format \"int8\": accepted: float or base64`},
		{"embeddings", `{"model":"m","input":"a","dimensions":0}`, "dimensions 0: accepted: 1 to 384"},
		{"embeddings", `{"model":"m","input":"a","dimensions":385}`, "dimensions 385"},
		{"rerank", `not json`, "not a valid rerank request"},
		{"rerank", `{"model":"m","documents":["a"]}`, "query is required"},
		{"rerank", `{"model":"m","query":"q"}`, "documents is required"},
		{"rerank", `{"model":"m","query":"q","documents":[]}`, "documents is required"},
		{"rerank", `{"model":"m","query":"q","documents":["a",{"title":"b"}]}`, "documents[1]: accepted: a string or an object"},
		{"rerank", `{"model":"m","query":"q","documents":["a"],"top_n":-1}`, "top_n -1: accepted: 0 or more"},
	} {
		status, b, _ := retrieve(t, m, tc.path, tc.body)
		if status != http.StatusBadRequest || !strings.Contains(string(b), `"type":"invalid_request_error"`) || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: HTTP %d %s; want 400 saying %q", tc.path, tc.body, status, b, tc.want)
		}
	}
	served := start(t, func(c *Config) { c.Model, c.Models = "emb", []string{"rr"} })
	for path, body := range map[string]string{"embeddings": `{"model":"other","input":"a"}`, "rerank": `{"model":"other","query":"q","documents":["a"]}`} {
		if status, b, _ := retrieve(t, served, path, body); status != http.StatusNotFound || !strings.Contains(string(b), "The model `other` does not exist.") {
			t.Errorf("%s naming an unserved model: HTTP %d %s; want 404", path, status, b)
		}
	}
	embed(t, served, `{"model":"emb","input":"a"}`)
	rerank(t, served, `{"model":"rr","query":"q","documents":["a"]}`)
}

// TestRetrievalTiming: the whole answer comes no sooner than the TTFT model says for the prompt the
// usage reports (a lower bound only: the machine may be busy), and a repeated prompt is served from
// the prefix cache, whole blocks of it.
func TestRetrievalTiming(t *testing.T) {
	const ttft, perToken, factor = 30 * time.Millisecond, 100 * time.Microsecond, 0.5
	m := start(t, func(c *Config) { c.TTFT, c.PrefillPerToken, c.CacheTTFTFactor = ttft, perToken, factor })
	least := func(u retrievalUsage) time.Duration { // exchange.firstTokenDelay, from the client's side
		p, c := float64(u.PromptTokens), float64(u.PromptTokensDetails.CachedTokens)
		return time.Duration(float64(ttft)*(1-c/p*(1-factor)) + float64(perToken)*(p-c))
	}
	long := strings.Repeat("Retrieval augmented generation splits documents into chunks. ", 40)
	body := `{"model":"m","input":[` + jsonString(long) + `,"short"]}`
	first, took := embed(t, m, body)
	if first.Usage.PromptTokensDetails.CachedTokens != 0 || took < least(first.Usage) || least(first.Usage) < ttft+perToken*300 {
		t.Errorf("first embeddings request: %s for usage %+v; want a miss and at least %s", took, first.Usage, least(first.Usage))
	}
	second, took := embed(t, m, body)
	if c := second.Usage.PromptTokensDetails.CachedTokens; c == 0 || c%16 != 0 || c > second.Usage.PromptTokens || took < least(second.Usage) {
		t.Errorf("repeated embeddings request: %s for usage %+v; want whole cached blocks and at least %s", took, second.Usage, least(second.Usage))
	}

	query := strings.Repeat("What does the contract say about termination and notice periods? ", 4)
	out, took := rerank(t, m, `{"model":"m","query":`+jsonString(query)+`,"documents":["clause one","clause two","clause three"]}`)
	// The pairs share the query: its whole blocks come from the cache after the first pair's.
	if c, q := out.Usage.PromptTokensDetails.CachedTokens, tokenCount(t, query); c != 2*(q/16*16) || took < least(out.Usage) {
		t.Errorf("rerank: %s for usage %+v; want the query's whole blocks (%d tokens) cached twice and at least %s", took, out.Usage, q/16*16, least(out.Usage))
	}
}

// TestRetrievalTakesASlot: retrieval requests are admitted like chat's: with one slot, a held
// embeddings request makes a rerank request wait, and leaving frees the slot for it.
func TestRetrievalTakesASlot(t *testing.T) {
	m := start(t, func(c *Config) { c.MaxConcurrency, c.TTFT = 1, time.Hour })
	send := func(ctx context.Context, path, body string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, m.BaseURL()+"/"+path, strings.NewReader(body))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	doneA, doneB := make(chan struct{}), make(chan struct{})
	go func() { send(ctxA, "embeddings", `{"model":"m","input":"held"}`); close(doneA) }()
	waitFor(t, "the embeddings request running", func() bool { return metricValue(t, m, "vllm:num_requests_running") == 1 })
	go func() { send(ctxB, "rerank", `{"model":"m","query":"q","documents":["a"]}`); close(doneB) }()
	waitFor(t, "the rerank request waiting", func() bool { return metricValue(t, m, "vllm:num_requests_waiting") == 1 })
	cancelA()
	<-doneA
	waitFor(t, "the rerank request admitted", func() bool {
		return metricValue(t, m, "vllm:num_requests_waiting") == 0 && metricValue(t, m, "vllm:num_requests_running") == 1
	})
	cancelB()
	<-doneB
}

func TestRetrievalFaults(t *testing.T) {
	bodies := map[string]string{"embeddings": `{"model":"m","input":"hello"}`, "rerank": `{"model":"m","query":"q","documents":["a","b"]}`}
	for _, tc := range []struct {
		name   string
		config func(*Config)
		check  func(status int, header http.Header, body []byte, err error) bool
	}{
		{"error 500", func(c *Config) { c.ErrorRate = 1 }, func(status int, _ http.Header, b []byte, _ error) bool {
			return status == 500 && strings.Contains(string(b), "injected internal server error")
		}},
		{"rate limit 429", func(c *Config) { c.RateLimitRate, c.RetryAfter = 1, 3*time.Second }, func(status int, h http.Header, _ []byte, _ error) bool {
			return status == 429 && h.Get("Retry-After") == "3"
		}},
		{"html 503", func(c *Config) { c.Faults = map[FaultKind]float64{FaultHTML503: 1} }, func(status int, h http.Header, b []byte, _ error) bool {
			return status == 503 && strings.HasPrefix(h.Get("Content-Type"), "text/html") && bytes.Contains(b, []byte("<html>"))
		}},
		{"cut", func(c *Config) { c.Faults = map[FaultKind]float64{FaultCut: 1} }, func(_ int, _ http.Header, _ []byte, err error) bool {
			return err != nil // closed before any response byte
		}},
		{"stall", func(c *Config) { c.Faults = map[FaultKind]float64{FaultStall: 1} }, func(_ int, _ http.Header, _ []byte, err error) bool {
			var timeout interface{ Timeout() bool }
			return errors.As(err, &timeout) && timeout.Timeout()
		}},
		{"malformed", func(c *Config) { c.Faults = map[FaultKind]float64{FaultMalformed: 1} }, func(status int, _ http.Header, b []byte, err error) bool {
			return err == nil && status == 200 && len(b) > 0 && !json.Valid(b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := start(t, tc.config)
			client := &http.Client{Timeout: 500 * time.Millisecond}
			for path, body := range bodies {
				var status int
				var header http.Header
				var b []byte
				resp, err := client.Post(m.BaseURL()+"/"+path, "application/json", strings.NewReader(body))
				if err == nil {
					status, header = resp.StatusCode, resp.Header
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				if !tc.check(status, header, b, err) {
					t.Errorf("%s: HTTP %d %s, error %v", path, status, b, err)
				}
			}
		})
	}
}

// TestRetrievalMetrics: retrieval requests count in /metrics as chat's do: by outcome, with their
// prompt tokens and prefix-cache lookups.
func TestRetrievalMetrics(t *testing.T) {
	m := start(t, func(c *Config) { c.Model = "plload-mock" })
	long := jsonString(strings.Repeat("a sentence long enough to fill some cache blocks. ", 10))
	a, _ := embed(t, m, `{"model":"m","input":[`+long+`,`+long+`]}`)
	b, _ := rerank(t, m, `{"model":"m","query":`+long+`,"documents":["x","y"]}`)
	retrieve(t, m, "rerank", `{"model":"m"}`)
	prompt := a.Usage.PromptTokens + b.Usage.PromptTokens
	cached := a.Usage.PromptTokensDetails.CachedTokens + b.Usage.PromptTokensDetails.CachedTokens
	resp, err := http.Get("http://" + m.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		`plload_mock_requests_total{model_name="plload-mock",outcome="ok"} 2`,
		`plload_mock_requests_total{model_name="plload-mock",outcome="bad_request"} 1`,
		fmt.Sprintf(`vllm:prompt_tokens_total{model_name="plload-mock"} %d`, prompt),
		fmt.Sprintf(`vllm:prefix_cache_queries_total{model_name="plload-mock"} %d`, prompt),
		fmt.Sprintf(`vllm:prefix_cache_hits_total{model_name="plload-mock"} %d`, cached),
	} {
		if !strings.Contains(string(text), line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if cached == 0 {
		t.Error("the repeated input and the shared query found nothing in the cache")
	}
}

// FuzzRetrievalRequest: no embeddings or rerank body makes the mock panic; a bad one gets a 4xx.
func FuzzRetrievalRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":8}`))
	f.Add([]byte(`{"model":"m","input":[[1,2]]}`))
	f.Add([]byte(`{"model":"m","query":"q","documents":["a",{"text":"b"}],"top_n":1}`))
	f.Add([]byte(`{"query":"","documents":[null],"top_n":-3}`))
	cfg := DefaultConfig()
	cfg.TTFT, cfg.EmbeddingDimensions = 0, 16
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/v1/embeddings", "/v1/rerank"} {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
			if rec.Code >= 500 || rec.Code == 200 && !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s: status %d for %q: %s", path, rec.Code, body, rec.Body.String())
			}
		}
	})
}
