package protocol

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plload/plload/sse"
)

// The retrieval APIs are found by name, each posts to its own path, and the names are sorted.
func TestRetrievalAPIsByName(t *testing.T) {
	if got := RetrievalNames(); !slices.Equal(got, []string{"embeddings", "rerank"}) {
		t.Fatalf("RetrievalNames() = %v", got)
	}
	for name, path := range map[string]string{"embeddings": "/embeddings", "rerank": "/rerank"} {
		r, ok := RetrievalFor(name)
		if !ok || r.Name() != name || r.Path() != path {
			t.Errorf("RetrievalFor(%q) = %v, %v; want %s at %s", name, r, ok, name, path)
		}
	}
	for _, name := range []string{"", "chat", "embedding", "/rerank"} {
		if r, ok := RetrievalFor(name); ok {
			t.Errorf("RetrievalFor(%q) = %s; want none", name, r.Name())
		}
	}
}

// Both APIs authenticate as chat does: a Bearer key, and no header without one.
func TestRetrievalHeaders(t *testing.T) {
	for _, name := range RetrievalNames() {
		r, _ := RetrievalFor(name)
		h := http.Header{}
		r.SetHeaders(h, "sk-1")
		if got := h.Get("Authorization"); got != "Bearer sk-1" {
			t.Errorf("%s: Authorization %q", name, got)
		}
		h = http.Header{}
		r.SetHeaders(h, "")
		if len(h) != 0 {
			t.Errorf("%s without a key sets %v", name, h)
		}
	}
}

// The bodies are exact: the API's own keys in a fixed order, input always a list, top_n only when
// asked for, then extra's keys sorted; a key the API sets from the query stays the query's.
func TestRetrievalBodies(t *testing.T) {
	tricky := "a \"quoted\" line\nwith a tab\t, a \\ and <b>&</b> ☃"
	trickyJSON := `"a \"quoted\" line\nwith a tab\t, a \\ and \u003cb\u003e\u0026\u003c/b\u003e ☃"`
	cases := []struct {
		name, api string
		model     string
		q         RetrievalQuery
		extra     map[string]any
		want      string
	}{
		{"embeddings of two inputs", "embeddings", "e5", RetrievalQuery{Inputs: []string{"first", tricky}}, nil,
			`{"model":"e5","input":["first",` + trickyJSON + `],"encoding_format":"float"}`},
		{"one input is still a list", "embeddings", "e5", RetrievalQuery{Inputs: []string{"only"}}, nil,
			`{"model":"e5","input":["only"],"encoding_format":"float"}`},
		{"no inputs is an empty list", "embeddings", "e5", RetrievalQuery{}, nil,
			`{"model":"e5","input":[],"encoding_format":"float"}`},
		{"extra sets the encoding and adds keys; the query's keys stay", "embeddings", "e5",
			RetrievalQuery{Query: "ignored", Inputs: []string{"x"}},
			map[string]any{"encoding_format": "base64", "dimensions": 256, "input": []any{"not this"}, "model": "nor this",
				"truncate_prompt_tokens": map[any]any{"left": true}},
			`{"model":"e5","input":["x"],"dimensions":256,"encoding_format":"base64","truncate_prompt_tokens":{"left":true}}`},
		{"rerank scores every document without top_n", "rerank", "bge", RetrievalQuery{Query: tricky, Inputs: []string{"d0", "d1"}}, nil,
			`{"model":"bge","query":` + trickyJSON + `,"documents":["d0","d1"]}`},
		{"rerank with top_n", "rerank", "bge", RetrievalQuery{Query: "q", Inputs: []string{"d0", "d1", "d2"}, TopN: 2}, nil,
			`{"model":"bge","query":"q","documents":["d0","d1","d2"],"top_n":2}`},
		{"rerank's extra keys, its own left out", "rerank", "bge", RetrievalQuery{Query: "q", Inputs: []string{"d0"}},
			map[string]any{"return_documents": false, "top_n": 9, "documents": []any{}, "query": "x", "encoding_format": "float"},
			`{"model":"bge","query":"q","documents":["d0"],"encoding_format":"float","return_documents":false}`},
	}
	for _, c := range cases {
		r, _ := RetrievalFor(c.api)
		got, err := r.Body(c.model, c.q, c.extra)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.name, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: not JSON: %s", c.name, got)
		}
	}
	r, _ := RetrievalFor("rerank")
	if _, err := r.Body("m", RetrievalQuery{Query: "q"}, map[string]any{"bad": math.Inf(1)}); err == nil || !strings.Contains(err.Error(), "extra_body.bad") {
		t.Errorf("an extra value JSON cannot carry: %v; want an error naming extra_body.bad", err)
	}
}

// fixture is a file of testdata/retrieval: answers written from each server's documented (or
// source-read) shape.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "retrieval", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inputs are n placeholder inputs (or documents).
func inputs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "text"
	}
	return out
}

func usageOf(prompt, total int, hasPrompt, hasTotal bool) *sse.Usage {
	return &sse.Usage{PromptTokens: prompt, TotalTokens: total, HasPrompt: hasPrompt, HasTotal: hasTotal}
}

// retrievalCase is an answer and what ParseAnswer must make of it: the answer's fields, or an error
// (or the server's error) whose text holds errText.
type retrievalCase struct {
	name    string
	body    string
	q       RetrievalQuery
	items   int
	dims    int
	order   []int
	usage   *sse.Usage
	errText string // an error containing it
	srvErr  string // Answer.Err's message containing it
}

func checkRetrieval(t *testing.T, api string, cases []retrievalCase) {
	t.Helper()
	r, _ := RetrievalFor(api)
	for _, c := range cases {
		got, err := r.ParseAnswer([]byte(c.body), c.q)
		if c.errText != "" {
			if err == nil || !strings.Contains(err.Error(), c.errText) {
				t.Errorf("%s: error %v; want one saying %q", c.name, err, c.errText)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if c.srvErr != "" {
			if got.Err == nil || !strings.Contains(got.Err.Message, c.srvErr) {
				t.Errorf("%s: server error %v; want one saying %q", c.name, got.Err, c.srvErr)
			}
			continue
		}
		if got.Err != nil {
			t.Errorf("%s: server error %v", c.name, got.Err)
		}
		if got.Items != c.items || got.Dimensions != c.dims || !slices.Equal(got.Order, c.order) {
			t.Errorf("%s: items %d dimensions %d order %v; want %d %d %v", c.name, got.Items, got.Dimensions, got.Order, c.items, c.dims, c.order)
		}
		if (got.Usage == nil) != (c.usage == nil) || got.Usage != nil && *got.Usage != *c.usage {
			t.Errorf("%s: usage %+v; want %+v", c.name, got.Usage, c.usage)
		}
	}
}

// float32s is a base64 embedding of n little-endian float32s, as encoding_format base64 sends.
func float32s(n int) string {
	b := make([]byte, 0, 4*n)
	for i := range n {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(i)/10))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// An embeddings answer has one vector per input, each index once, all of one non-zero length; a
// server's error object is the answer's error, anything else that does not answer is an error
// saying what was expected and what came.
func TestEmbeddingsParseAnswer(t *testing.T) {
	two := RetrievalQuery{Inputs: inputs(2)}
	vec := func(index, v string) string {
		return `{"object":"embedding","index":` + index + `,"embedding":` + v + `}`
	}
	data := func(items ...string) string { return `{"object":"list","data":[` + strings.Join(items, ",") + `]}` }
	// padded is llama-server's answer under --reranking as the real server gave it (llama.cpp
	// 0.7.0): the rank head's two scores, then zeros and subnormal leftovers of memory, 64 numbers.
	padded := "[0.7026711702346802,0.7115147113800049,0.0,0.0,6.305843089461677e-44,0.0,4.4156974519617543e-39" + strings.Repeat(",0.0", 57) + "]"
	// dense is a real embedding's shape with a few exact zeros: 64 numbers, 8 of them zero.
	dense := "[" + strings.Repeat("0,", 8) + strings.TrimSuffix(strings.Repeat("0.125,", 56), ",") + "]"
	subnormal := make([]byte, 0, 64)
	subnormal = binary.LittleEndian.AppendUint32(subnormal, math.Float32bits(0.5))
	for range 15 {
		subnormal = binary.LittleEndian.AppendUint32(subnormal, 1) // the least subnormal float32
	}
	checkRetrieval(t, "embeddings", []retrievalCase{
		{name: "OpenAI's reference answer", body: fixture(t, "openai_embeddings.json"), q: two, items: 2, dims: 4, usage: usageOf(8, 8, true, true)},
		{name: "llama.cpp's answer", body: fixture(t, "llamacpp_embeddings.json"), q: RetrievalQuery{Inputs: inputs(3)}, items: 3, dims: 3, usage: usageOf(11, 11, true, true)},
		{name: "llama.cpp's base64 answer", body: fixture(t, "llamacpp_embeddings_base64.json"), q: two, items: 2, dims: 5, usage: usageOf(7, 7, true, true)},
		{name: "base64 vectors of 768 float32s", body: data(vec("1", `"`+float32s(768)+`"`), vec("0", `"`+float32s(768)+`"`)), q: two, items: 2, dims: 768},
		{name: "indexes in any order, no usage", body: data(vec("1", "[1,2]"), vec("0", "[ 3 , -4.5e-3 ]")), q: two, items: 2, dims: 2},
		{name: "an empty usage is none", body: `{"data":[{"index":0,"embedding":[1]}],"usage":{}}`, q: RetrievalQuery{Inputs: inputs(1)}, items: 1, dims: 1},
		{name: "usage with only total_tokens", body: `{"data":[{"index":0,"embedding":[1]}],"usage":{"total_tokens":5}}`, q: RetrievalQuery{Inputs: inputs(1)}, items: 1, dims: 1, usage: usageOf(5, 5, true, true)},
		{name: "all-zero vectors (llama-server --reranking's)", body: `{"data":[{"index":0,"embedding":[0.0,-0.0,0e3]}]}`, q: RetrievalQuery{Inputs: inputs(1)}, errText: "vector 0 is all zeros"},
		{name: "all-zero base64 vector", body: `{"data":[{"index":0,"embedding":"AAAAAAAAAIA="}]}`, q: RetrievalQuery{Inputs: inputs(1)}, errText: "vector 0 is all zeros"},
		{name: "rank scores padded with zeros (llama-server --reranking's, 0.7.0)", body: data(vec("0", padded)), q: RetrievalQuery{Inputs: inputs(1)},
			errText: "vector 0 is all zeros but 2 of its 64 numbers: the server computed no embedding"},
		{name: "a base64 vector of one number and subnormals", body: data(vec("0", `"`+base64.StdEncoding.EncodeToString(subnormal)+`"`)), q: RetrievalQuery{Inputs: inputs(1)},
			errText: "vector 0 is all zeros but 1 of its 16 numbers"},
		{name: "memory never written (llama-server --reranking's, 0.7.0)", body: data(vec("0", "[0.5797353386878967,0.8148047924041748,0.0,"+strings.Repeat("0.25,", 40)+"6.305843089461677e-44,1E-40,4.4156974519617543e-39]")),
			q: RetrievalQuery{Inputs: inputs(1)}, errText: "vector 0 holds subnormal numbers"},
		{name: "a base64 vector with a subnormal among normals", body: data(vec("0", `"`+base64.StdEncoding.EncodeToString(append(binary.LittleEndian.AppendUint32(nil, 7), []byte(strings.Repeat("\x00\x00\x80\x3f", 15))...))+`"`)),
			q: RetrievalQuery{Inputs: inputs(1)}, errText: "vector 0 holds subnormal numbers"},
		{name: "small numbers of a real embedding", body: data(vec("0", "[1.5e-05,-2.25E-7,0.125,1e-37,0.5,0.5,0.5,0.5,0.5,0.5]")), q: RetrievalQuery{Inputs: inputs(1)}, items: 1, dims: 10},
		{name: "one text twice, two vectors that agree", body: data(vec("0", "[0.6,0.8,0]"), vec("1", "[0.6000001,0.7999999,0]")), q: RetrievalQuery{Inputs: inputs(2), Agree: true}, items: 2, dims: 3},
		{name: "one text twice, two unrelated vectors (llama-server --reranking's leftovers)", body: data(vec("0", "[0.58,0.81,0.1,0.2]"), vec("1", "[-0.3,0.1,0.9,0.2]")),
			q: RetrievalQuery{Inputs: inputs(2), Agree: true}, errText: "vectors 0 and 1 of the same text differ (cosine 0.04)"},
		{name: "two texts need not agree", body: data(vec("0", "[1,0]"), vec("1", "[0,1]")), q: RetrievalQuery{Inputs: []string{"a", "b"}, Agree: true}, items: 2, dims: 2},
		{name: "a dense vector with a few zeros", body: data(vec("0", dense)), q: RetrievalQuery{Inputs: inputs(1)}, items: 1, dims: 64},
		{name: "a vector with one number not zero", body: `{"data":[{"index":0,"embedding":[0,0,1e-9]}]}`, q: RetrievalQuery{Inputs: inputs(1)}, items: 1, dims: 3},
		{name: "cached tokens as chat's usage has them", body: `{"data":[{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":40,"total_tokens":40,"prompt_tokens_details":{"cached_tokens":32}}}`,
			q: RetrievalQuery{Inputs: inputs(1)}, items: 1, dims: 1, usage: &sse.Usage{PromptTokens: 40, TotalTokens: 40, HasPrompt: true, HasTotal: true, CachedTokens: 32, HasCached: true}},
		{name: "items without index stand in their places", body: `{"data":[{"embedding":[1,2,3]},{"embedding":[4,5,6]}]}`, q: two, items: 2, dims: 3},

		{name: "a vector missing", body: data(vec("0", "[1]"), vec("1", "[1]"), vec("2", "[1]")), q: RetrievalQuery{Inputs: inputs(4)}, errText: "the answer has 3 vectors for 4 inputs"},
		{name: "a vector too many", body: data(vec("0", "[1]"), vec("1", "[1]")), q: RetrievalQuery{Inputs: inputs(1)}, errText: "the answer has 2 vectors for 1 input"},
		{name: "a duplicate index", body: data(vec("1", "[1]"), vec("1", "[2]")), q: two, errText: "vector index 1 comes twice"},
		{name: "an index out of range", body: data(vec("0", "[1]"), vec("7", "[2]")), q: two, errText: "vector index 7 is out of range for 2 inputs"},
		{name: "a negative index", body: data(vec("-1", "[1]"), vec("0", "[2]")), q: two, errText: "vector index -1 is out of range"},
		{name: "a fractional index", body: data(vec("0.5", "[1]"), vec("0", "[2]")), q: two, errText: "vector index 0.5 is out of range"},
		{name: "vectors of two lengths", body: data(vec("0", "[1,2,3]"), vec("1", "[1,2]")), q: two, errText: "vector 1 has 2 dimensions, vector 0 has 3"},
		{name: "an empty vector", body: data(vec("0", "[]"), vec("1", "[]")), q: two, errText: "vector 0 is empty"},
		{name: "an empty base64 vector", body: data(vec("0", `""`), vec("1", `""`)), q: two, errText: "vector 0 is empty"},
		{name: "base64 not of whole float32s", body: data(vec("0", `"AAAAPwAA"`), vec("1", `"AAAAPwAA"`)), q: two, errText: "6 bytes, not whole float32s"},
		{name: "a string that is not base64", body: data(vec("0", `"not base64!"`), vec("1", `"AAAAPw=="`)), q: two, errText: "not base64"},
		{name: "llama.cpp with pooling none", body: fixture(t, "llamacpp_embeddings_pooling_none.json"), q: RetrievalQuery{Inputs: inputs(1)}, errText: "per-token vectors: the server's pooling is none"},
		{name: "a null in a vector", body: data(vec("0", "[1,null]"), vec("1", "[1,2]")), q: two, errText: "element 1 of its embedding is null"},
		{name: "no embedding", body: `{"data":[{"index":0},{"index":1,"embedding":[1]}]}`, q: two, errText: `vector 0: it has no "embedding"`},
		{name: "an embedding that is an object", body: data(vec("0", `{"v":[1]}`), vec("1", "[1]")), q: two, errText: "its embedding is an object"},
		{name: "a chat answer", body: `{"choices":[{"message":{"content":"hi"}}]}`, q: two, errText: `expected "data"`},
		{name: "not JSON", body: `<html>502 Bad Gateway</html>`, q: two, errText: "not the JSON of an embeddings answer"},
		{name: "an empty body", body: " \n", q: two, errText: "empty response body"},

		{name: "llama.cpp's error", body: fixture(t, "llamacpp_error.json"), q: two, srvErr: "does not support reranking"},
		{name: "vLLM's error", body: fixture(t, "vllm_error.json"), q: two, srvErr: "The model `bge` does not exist."},
		{name: "FastAPI's validation error", body: fixture(t, "fastapi_detail.json"), q: two, srvErr: "body.query: Field required"},
		{name: "FastAPI's text detail", body: `{"detail":"Not Found"}`, q: two, srvErr: "Not Found"},
		{name: "an error beside data", body: `{"data":[],"error":"overloaded"}`, q: two, srvErr: "overloaded"},
	})
}

// The error object keeps the server's type and code, and a malformed body is sse's MalformedError,
// whose payload the engine masks before it shows it.
func TestRetrievalErrorKinds(t *testing.T) {
	r, _ := RetrievalFor("rerank")
	got, err := r.ParseAnswer([]byte(fixture(t, "llamacpp_error.json")), RetrievalQuery{Inputs: inputs(1)})
	if err != nil || got.Err == nil || got.Err.Type != "not_supported_error" || got.Err.Code != "501" {
		t.Errorf("llama.cpp's error read as %+v, %v", got.Err, err)
	}
	got, err = r.ParseAnswer([]byte(fixture(t, "vllm_error.json")), RetrievalQuery{Inputs: inputs(1)})
	if err != nil || got.Err == nil || got.Err.Type != "NotFoundError" || got.Err.Code != "404" {
		t.Errorf("vLLM's error read as %+v, %v", got.Err, err)
	}
	for _, name := range RetrievalNames() {
		r, _ := RetrievalFor(name)
		_, err := r.ParseAnswer([]byte(`{"results": 1, "data": 2}`), RetrievalQuery{Inputs: inputs(1)})
		var m *sse.MalformedError
		if !errors.As(err, &m) {
			t.Errorf("%s: a body of the wrong types gives %T %v; want *sse.MalformedError", name, err, err)
		}
	}
}

// A rerank answer scores min(top_n, n) documents (or all n, as llama.cpp's server did before it
// read top_n), each once, with a finite score; Order is by score, best first, ties by index.
func TestRerankParseAnswer(t *testing.T) {
	docs := func(n, topN int) RetrievalQuery { return RetrievalQuery{Query: "q", Inputs: inputs(n), TopN: topN} }
	res := func(items ...string) string { return `{"results":[` + strings.Join(items, ",") + `]}` }
	checkRetrieval(t, "rerank", []retrievalCase{
		{name: "llama.cpp's answer, cut to top_n", body: fixture(t, "llamacpp_rerank.json"), q: docs(5, 2), items: 2, order: []int{3, 0}, usage: usageOf(58, 58, true, true)},
		{name: "llama.cpp's older answer: every document, top_n ignored", body: fixture(t, "llamacpp_rerank_unsorted.json"), q: docs(4, 2), items: 4, order: []int{1, 3, 2, 0}, usage: usageOf(40, 40, true, true)},
		{name: "the same without top_n", body: fixture(t, "llamacpp_rerank_unsorted.json"), q: docs(4, 0), items: 4, order: []int{1, 3, 2, 0}, usage: usageOf(40, 40, true, true)},
		{name: "vLLM's answer: total_tokens only", body: fixture(t, "vllm_rerank.json"), q: docs(3, 0), items: 3, order: []int{1, 0, 2}, usage: usageOf(31, 31, true, true)},
		{name: "Cohere's answer: no usage", body: fixture(t, "cohere_rerank.json"), q: docs(3, 3), items: 3, order: []int{2, 0, 1}},
		{name: "top_n above the documents asks for all", body: res(`{"index":1,"relevance_score":1}`, `{"index":0,"relevance_score":2}`), q: docs(2, 5), items: 2, order: []int{0, 1}},
		{name: "ties: the lower index first", body: res(`{"index":4,"relevance_score":0.5}`, `{"index":2,"relevance_score":0.5}`, `{"index":0,"relevance_score":-1}`, `{"index":3,"relevance_score":0.5}`, `{"index":1,"relevance_score":0.75}`),
			q: docs(5, 0), items: 5, order: []int{1, 2, 3, 4, 0}},
		{name: "only prompt_tokens", body: `{"results":[{"index":0,"relevance_score":0}],"usage":{"prompt_tokens":4}}`, q: docs(1, 0), items: 1, order: []int{0}, usage: usageOf(4, 0, true, false)},

		{name: "too few results", body: res(`{"index":0,"relevance_score":1}`), q: docs(3, 0), errText: "the answer has 1 result for 3 documents"},
		{name: "neither top_n nor all", body: res(`{"index":0,"relevance_score":1}`, `{"index":1,"relevance_score":1}`, `{"index":2,"relevance_score":1}`), q: docs(5, 2), errText: "the answer has 3 results for top_n 2 of 5 documents"},
		{name: "an index out of range", body: res(`{"index":0,"relevance_score":1}`, `{"index":7,"relevance_score":1}`), q: docs(5, 2), errText: "result index 7 is out of range for 5 documents"},
		{name: "a duplicate index", body: res(`{"index":1,"relevance_score":1}`, `{"index":1,"relevance_score":0}`), q: docs(2, 0), errText: "result index 1 comes twice"},
		{name: "no index", body: res(`{"relevance_score":1}`), q: docs(1, 0), errText: "result 0 has no index"},
		{name: "no score", body: res(`{"index":0,"relevance_score":1}`, `{"index":1}`), q: docs(2, 0), errText: "result 1 (document 1) has no relevance_score"},
		{name: "a null score", body: res(`{"index":0,"relevance_score":null}`), q: docs(1, 0), errText: "result 0 (document 0) has no relevance_score"},
		{name: "TEI's score instead of relevance_score", body: res(`{"index":0,"score":0.5}`), q: docs(1, 0), errText: "has no relevance_score"},
		{name: "a NaN score (not JSON)", body: res(`{"index":0,"relevance_score":NaN}`), q: docs(1, 0), errText: "not the JSON of a rerank answer"},
		{name: "an infinite score (out of float64's range)", body: res(`{"index":0,"relevance_score":1e999}`), q: docs(1, 0), errText: "not the JSON of a rerank answer"},
		{name: "TEI's bare list", body: `[{"index":0,"score":0.5}]`, q: docs(1, 0), errText: "not the JSON of a rerank answer"},
		{name: "an embeddings answer", body: fixture(t, "openai_embeddings.json"), q: docs(2, 0), errText: `expected "results"`},

		{name: "llama.cpp's error", body: fixture(t, "llamacpp_error.json"), q: docs(2, 0), srvErr: "Start it with `--reranking`"},
		{name: "vLLM's error", body: fixture(t, "vllm_error.json"), q: docs(2, 0), srvErr: "does not exist"},
		{name: "FastAPI's validation error", body: fixture(t, "fastapi_detail.json"), q: docs(2, 0), srvErr: "body.query: Field required"},
	})
}
