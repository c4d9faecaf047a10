package protocol

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/plload/plload/sse"
)

// rerank is the rerank API (POST /rerank) in the shape Jina and Cohere defined and vLLM and
// llama.cpp's server (--reranking) serve: a query and its documents go in, and the answer's results
// score documents, each result naming its document by index, with a relevance_score.
type rerank struct{}

func (rerank) Name() string { return "rerank" }

func (rerank) Path() string { return "/rerank" }

func (rerank) SetHeaders(h http.Header, apiKey string) { setBearer(h, apiKey) }

// rerankOwn are the body's keys Body sets from the query (top_n even when it is not sent: the
// query says how many results to expect, and ParseAnswer checks against it).
var rerankOwn = []string{"model", "query", "documents", "top_n"}

// Body is {"model", "query", "documents": [...], "top_n"}, top_n only when q.TopN > 0: without it
// every server scores every document.
func (rerank) Body(model string, q RetrievalQuery, extra map[string]any) ([]byte, error) {
	buf := append(make([]byte, 0, 64+len(model)+len(q.Query)+stringsSize(q.Inputs)), `{"model":`...)
	buf = appendString(buf, model)
	buf = append(buf, `,"query":`...)
	buf = appendString(buf, q.Query)
	buf = append(buf, `,"documents":`...)
	buf = appendStrings(buf, q.Inputs)
	if q.TopN > 0 {
		buf = append(buf, `,"top_n":`...)
		buf = strconv.AppendInt(buf, int64(q.TopN), 10)
	}
	buf, err := appendExtra(buf, extra, rerankOwn)
	if err != nil {
		return nil, err
	}
	return append(buf, '}'), nil
}

// rerankJSON is the part of the answer ParseAnswer reads; a result's document (vLLM's, or
// return_documents') is not.
type rerankJSON struct {
	retrievalEnvelope
	Results []struct {
		Index          *float64 `json:"index"`
		RelevanceScore *float64 `json:"relevance_score"`
	} `json:"results"`
}

// ParseAnswer checks that the answer scores the documents asked for: min(TopN, n) results (all n
// without TopN), each naming a document in range once, each with a relevance_score (a finite one:
// JSON has no NaN, and encoding/json refuses a number beyond float64's range, 1e999). The
// order of the results in the body is not relied on (the reference sorts them, older llama.cpp
// servers kept the documents' order): Order is made from the scores.
//
// A server that scores all n documents although top_n asked for fewer is accepted too: llama.cpp's
// server ignored top_n, returning every document in the documents' order, until its pull request
// 16403 (October 2025) sorted and cut the results, and LocalAI's llama.cpp backend still did in its
// 3.7.0. Order then holds all n, best first, and the caller takes the top it asked for.
func (rerank) ParseAnswer(body []byte, q RetrievalQuery) (RetrievalAnswer, error) {
	var out RetrievalAnswer
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return out, errors.New("empty response body")
	}
	var a rerankJSON
	if err := json.Unmarshal(trimmed, &a); err != nil {
		return out, sse.NewMalformed("response is not the JSON of a rerank answer", trimmed, err)
	}
	out.Usage = a.Usage.usage()
	if out.Err = a.serverError(trimmed, a.Results != nil); out.Err != nil {
		return out, nil
	}
	if a.Results == nil {
		return out, sse.NewMalformed(`response is not a rerank answer (expected "results", a list of {"index", "relevance_score"})`, trimmed, nil)
	}
	n := len(q.Inputs)
	want := n
	if q.TopN > 0 && q.TopN < n {
		want = q.TopN
	}
	out.Items = len(a.Results)
	if out.Items != want && out.Items != n {
		if want < n {
			return out, fmt.Errorf("the answer has %s for top_n %d of %s", plural(out.Items, "result"), q.TopN, plural(n, "document"))
		}
		return out, fmt.Errorf("the answer has %s for %s", plural(out.Items, "result"), plural(n, "document"))
	}
	scores := make([]float64, n)
	seen := make([]bool, n)
	out.Order = make([]int, 0, out.Items)
	for i, r := range a.Results {
		if r.Index == nil {
			return out, fmt.Errorf("result %d has no index", i)
		}
		idx, err := itemIndex(*r.Index, n, "result", "document")
		if err != nil {
			return out, err
		}
		if seen[idx] {
			return out, fmt.Errorf("result index %d comes twice: a document is scored once", idx)
		}
		seen[idx] = true
		if r.RelevanceScore == nil {
			return out, fmt.Errorf("result %d (document %d) has no relevance_score", i, idx)
		}
		scores[idx] = *r.RelevanceScore
		out.Order = append(out.Order, idx)
	}
	slices.SortFunc(out.Order, func(x, y int) int {
		if c := cmp.Compare(scores[y], scores[x]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	return out, nil
}
