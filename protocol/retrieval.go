package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/plload/plload/sse"
	"github.com/plload/plload/workload"
)

// Retrieval is an API whose answer is one whole JSON body with an item per input: embeddings (a
// vector per input) and rerank (a score per document). It is never streamed, so it has no stream
// reader and no turn history: a request is one query, and the answer is checked against it.
type Retrieval interface {
	// Name is the API's target.endpoint value, and a RAG step's name: "embeddings" or "rerank".
	Name() string
	// Path is the request's path after target.base_url ("/embeddings").
	Path() string
	// SetHeaders sets the API's authentication on h: Bearer with apiKey, as chat's ("" sends none).
	SetHeaders(h http.Header, apiKey string)
	// Body is the request body for q to model, with extra's keys (target.extra_body's) merged at
	// the top level, sorted, after the API's own. A key the API sets itself from q is left out of
	// the merge (workload refuses it before a run); encoding_format, which embeddings sets to
	// "float" by default, is the user's to change.
	Body(model string, q RetrievalQuery, extra map[string]any) ([]byte, error)
	// ParseAnswer reads a 2xx answer's whole body and checks that it answers q: a vector per input
	// (embeddings), or a score per document asked for (rerank). An error object in the body comes
	// back in RetrievalAnswer.Err with a nil error; a body that is not the API's answer, or does
	// not answer q, is an error saying what was expected and what came.
	ParseAnswer(body []byte, q RetrievalQuery) (RetrievalAnswer, error)
}

// RetrievalQuery is one request's content.
type RetrievalQuery struct {
	// Query is rerank's query; "" for embeddings.
	Query string
	// Inputs are embeddings' inputs, or rerank's documents.
	Inputs []string
	// TopN is rerank's top_n; 0: not sent, and every document is scored.
	TopN int
	// Agree asks embeddings' ParseAnswer to check that inputs of the same text got vectors that
	// point the same way: the preflight sends one text twice, since a server that computed no
	// embedding can answer with numbers that look like one.
	Agree bool
}

// RetrievalAnswer is what a retrieval answer says, once checked against its query.
type RetrievalAnswer struct {
	// Items is how many vectors or scores the answer has.
	Items int
	// Order is rerank's ranking: indexes into the query's Inputs, highest relevance_score first
	// (ties: the lower index first), one per result of the answer. Embeddings: nil.
	Order []int
	// Dimensions is the embeddings' vector length; 0 for rerank.
	Dimensions int
	// Usage is from usage.prompt_tokens, or usage.total_tokens where prompt_tokens is absent (vLLM's
	// rerank, Jina's: an input-only API's total is its prompt); nil when the body has none.
	Usage *sse.Usage
	// Err is the server's error when the body is an error object.
	Err *sse.StreamError
}

// retrievals are the retrieval APIs by name: the one place a name is tied to its code.
var retrievals = map[string]Retrieval{
	"embeddings": embeddings{},
	"rerank":     rerank{},
}

// RetrievalFor is the retrieval API that name ("embeddings", "rerank") names.
func RetrievalFor(name string) (Retrieval, bool) {
	r, ok := retrievals[name]
	return r, ok
}

// RetrievalNames are the names RetrievalFor accepts, sorted.
func RetrievalNames() []string {
	names := make([]string, 0, len(retrievals))
	for name := range retrievals {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// appendExtra appends extra's keys, sorted, as `,"key":value` pairs, leaving out the keys in own
// (those the API sets from the query). YAML's nested maps are made JSON's first.
func appendExtra(buf []byte, extra map[string]any, own []string) ([]byte, error) {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !slices.Contains(own, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, err := json.Marshal(workload.JSONValue(extra[k]))
		if err != nil {
			return nil, fmt.Errorf("extra_body.%s: %w", k, err)
		}
		buf = append(buf, ',')
		buf = appendString(buf, k)
		buf = append(buf, ':')
		buf = append(buf, v...)
	}
	return buf, nil
}

// appendStrings appends a JSON list of ss ([] for none: the APIs take a list, never null).
func appendStrings(buf []byte, ss []string) []byte {
	buf = append(buf, '[')
	for i, s := range ss {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, s)
	}
	return append(buf, ']')
}

// retrievalEnvelope is what both answers share besides their items: usage, and the ways a server
// says it failed in a 2xx body.
type retrievalEnvelope struct {
	Usage *retrievalUsage `json:"usage"`
	// Error is OpenAI's and llama.cpp's {"error": {"message", "type", "code"}} (or a string).
	Error json.RawMessage `json:"error"`
	// Object and Message are vLLM's older error, {"object": "error", "message", "type", "code"}.
	Object  json.RawMessage `json:"object"`
	Message json.RawMessage `json:"message"`
	// Detail is FastAPI's error (vLLM's routes, many proxies): a string, or a list of validation
	// errors {"loc", "msg", "type"}.
	Detail json.RawMessage `json:"detail"`
}

// serverError is the body's error object; nil when it has none. answered says the body has the
// API's items: a message or detail beside them is not an error, an "error" key always is.
func (e *retrievalEnvelope) serverError(body []byte, answered bool) *sse.StreamError {
	switch {
	case present(e.Error):
		if se := errorObject(e.Error); se != nil {
			return se
		}
	case string(e.Object) == `"error"` || !answered && present(e.Message):
		if se := errorObject(body); se != nil {
			return se
		}
	case !answered && present(e.Detail):
		return detailError(e.Detail)
	default:
		return nil
	}
	return &sse.StreamError{Message: strings.TrimSpace(string(body))}
}

// detailError reads FastAPI's detail: its text, or each validation error as "loc: msg".
func detailError(raw json.RawMessage) *sse.StreamError {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return &sse.StreamError{Message: text}
	}
	var list []struct {
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
		msgs := make([]string, 0, len(list))
		for _, d := range list {
			loc := make([]string, len(d.Loc))
			for i, l := range d.Loc {
				loc[i] = fmt.Sprint(l)
			}
			msgs = append(msgs, strings.Join(loc, ".")+": "+d.Msg)
		}
		return &sse.StreamError{Message: strings.Join(msgs, "; "), Type: list[0].Type}
	}
	return &sse.StreamError{Message: strings.TrimSpace(string(raw))}
}

// retrievalUsage is the usage both APIs send: prompt_tokens and total_tokens (OpenAI's embeddings,
// llama.cpp's both), or total_tokens alone (vLLM's rerank, Jina's).
type retrievalUsage struct {
	PromptTokens *float64 `json:"prompt_tokens"`
	TotalTokens  *float64 `json:"total_tokens"`
	// PromptTokensDetails.CachedTokens is the prefix cache's share, as chat's usage has it (vLLM
	// caches embedding prompts' prefixes too; the bundled mock reports it).
	PromptTokensDetails *struct {
		CachedTokens *float64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// usage is the record's usage: the prompt is prompt_tokens, or the total where that is all there
// is (these APIs generate nothing, so the total is the input); nil for an empty object.
func (u *retrievalUsage) usage() *sse.Usage {
	if u == nil || u.PromptTokens == nil && u.TotalTokens == nil {
		return nil
	}
	out := &sse.Usage{}
	if u.TotalTokens != nil {
		out.TotalTokens, out.HasTotal = clampInt(u.TotalTokens), true
		out.PromptTokens, out.HasPrompt = out.TotalTokens, true
	}
	if u.PromptTokens != nil {
		out.PromptTokens, out.HasPrompt = clampInt(u.PromptTokens), true
	}
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens != nil {
		out.CachedTokens, out.HasCached = clampInt(d.CachedTokens), true
	}
	return out
}

// itemIndex is an item's index into the query's inputs: a whole number in [0, n). what names the
// item in the error ("vector", "result").
func itemIndex(v float64, n int, what, inputs string) (int, error) {
	if v < 0 || v >= float64(n) || v != math.Trunc(v) {
		return 0, fmt.Errorf("%s index %v is out of range for %s", what, v, plural(n, inputs))
	}
	return int(v), nil
}

// plural is "1 input", "3 inputs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
