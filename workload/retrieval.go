package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Retrieval requests: embeddings and rerank, as stages of their own (target.endpoint embeddings or
// rerank, shaped by the scenario's embeddings: or rerank: section) and as the steps of a RAG turn
// (session.rag). They carry no conversation: a request is texts in, a vector or a score per text
// out, so a stage of them has no personas and no session keys, and a session is one request.

// EmbeddingsSpec shapes an embeddings stage's requests.
type EmbeddingsSpec struct {
	// Inputs is the texts per request; InputTokens each text's length in the scenario's tokenizer.
	Inputs      Dist `yaml:"inputs,omitempty,flow" limit:"2048"`
	InputTokens Dist `yaml:"input_tokens,omitempty,flow" limit:"1000000"`
}

// RerankSpec shapes a rerank stage's requests: a query and the documents it scores.
type RerankSpec struct {
	QueryTokens    Dist `yaml:"query_tokens,omitempty,flow" limit:"1000000"`
	Documents      Dist `yaml:"documents,omitempty,flow" limit:"10000"`
	DocumentTokens Dist `yaml:"document_tokens,omitempty,flow" limit:"1000000"`
	// TopN asks for the best N scores only (0: every document's).
	TopN int `yaml:"top_n,omitempty"`
}

// RAGSpec makes each chat turn what a RAG assistant does: embed the user's question (Embed), score
// the turn's candidate documents against it (Rerank), and send the chat with the TopK best documents
// before the question. A step left out is not sent: without Rerank the first TopK candidates go, in
// the retriever's order.
type RAGSpec struct {
	Candidates     Dist        `yaml:"candidates,omitempty,flow" limit:"10000"`
	DocumentTokens Dist        `yaml:"document_tokens,omitempty,flow" limit:"1000000"`
	TopK           int         `yaml:"top_k,omitempty"`
	Embed          *StepTarget `yaml:"embed,omitempty"`
	Rerank         *StepTarget `yaml:"rerank,omitempty"`
}

// StepTarget is where a RAG step's request goes; each key left out is target's own.
type StepTarget struct {
	BaseURL   string `yaml:"base_url,omitempty"`
	Model     string `yaml:"model,omitempty"`
	APIKeyEnv string `yaml:"api_key_env,omitempty"`
}

// TurnExtra is a turn's rarer parts.
type TurnExtra struct {
	// Retrieval is a retrieval stage's request, or a RAG turn's candidate documents (the turn's
	// user text is then the question alone: the chosen documents join it when the turn is sent).
	Retrieval *RetrievalTurn
	// Images are the images the turn's user message carries (workload/image.go), shared with
	// every other turn that sends them.
	Images []*Image
}

// RetrievalRequest is the turn's retrieval request or RAG candidates; nil for a chat turn.
func (t Turn) RetrievalRequest() *RetrievalTurn {
	if t.Extra == nil {
		return nil
	}
	return t.Extra.Retrieval
}

// RetrievalTurn is what a retrieval request sends: an embeddings request's inputs, a rerank
// request's query and documents, or a RAG turn's candidate documents (its query is the question).
type RetrievalTurn struct {
	Query       string
	QueryTokens int
	Inputs      []string
	InputTokens []int
	TopN        int
}

// Tokens is every text's tokens: what the server reads, in the scenario's tokenizer.
func (rt *RetrievalTurn) Tokens() int {
	n := rt.QueryTokens
	for _, k := range rt.InputTokens {
		n += k
	}
	return n
}

// IsRetrieval says whether endpoint's requests are retrieval requests rather than chat turns.
func IsRetrieval(endpoint string) bool { return endpoint == "embeddings" || endpoint == "rerank" }

// Retrieval says whether the scenario's stages send embeddings or rerank requests.
func (s *Scenario) Retrieval() bool { return IsRetrieval(s.Target.Endpoint) }

// Defaults of the retrieval sections: lengths of typical RAG chunks and queries.
var (
	defaultEmbeddingInputs = Constant(1)
	defaultDocumentTokens  = Dist{Kind: DistUniform, Min: 100, Max: 300, HasMin: true, HasMax: true}
	defaultQueryTokens     = Dist{Kind: DistUniform, Min: 10, Max: 30, HasMin: true, HasMax: true}
	defaultDocuments       = Constant(10)
	defaultTopK            = 3
)

// retrievalDefaults fills the retrieval keys the file left out: a retrieval stage is one request per
// session, and a RAG turn's candidates and top_k have typical values.
func (s *Scenario) retrievalDefaults() {
	fill := func(path string, d *Dist, def Dist) {
		if !s.has(path) {
			*d = def
		}
	}
	switch s.Target.Endpoint {
	case "embeddings":
		if s.Embeddings == nil {
			s.Embeddings = &EmbeddingsSpec{}
		}
		fill("embeddings.inputs", &s.Embeddings.Inputs, defaultEmbeddingInputs)
		fill("embeddings.input_tokens", &s.Embeddings.InputTokens, defaultDocumentTokens)
	case "rerank":
		if s.Rerank == nil {
			s.Rerank = &RerankSpec{}
		}
		fill("rerank.query_tokens", &s.Rerank.QueryTokens, defaultQueryTokens)
		fill("rerank.documents", &s.Rerank.Documents, defaultDocuments)
		fill("rerank.document_tokens", &s.Rerank.DocumentTokens, defaultDocumentTokens)
	}
	if s.Retrieval() {
		s.Session.Turns = Constant(1)
		s.Session.ThinkTime = Constant(0)
		s.Session.ThinkTime.Seconds = true
		s.Session.MaxOutputTokens = Constant(0)
	}
	if rag := s.Session.RAG; rag != nil {
		fill("session.rag.candidates", &rag.Candidates, defaultDocuments)
		fill("session.rag.document_tokens", &rag.DocumentTokens, defaultDocumentTokens)
		if !s.has("session.rag.top_k") {
			rag.TopK = defaultTopK
		}
	}
}

// meanRetrievalTokens is a retrieval stage's expected text per request, in tokens.
func (s *Scenario) meanRetrievalTokens() float64 {
	switch s.Target.Endpoint {
	case "embeddings":
		return s.Embeddings.Inputs.MeanInt() * s.Embeddings.InputTokens.MeanInt()
	case "rerank":
		return s.Rerank.QueryTokens.MeanInt() + s.Rerank.Documents.MeanInt()*s.Rerank.DocumentTokens.MeanInt()
	}
	return 0
}

// meanDocumentTokens is a turn's expected document tokens: session.retrieved_tokens' document, or
// session.rag's candidates as drawn (sent false) or the top_k of them the chat sends (sent true).
func (s *Scenario) meanDocumentTokens(sent bool) float64 {
	ss := s.Session
	switch {
	case ss.RetrievedTokens != nil:
		return ss.RetrievedTokens.MeanInt()
	case ss.RAG != nil && sent:
		return math.Min(float64(ss.RAG.TopK), ss.RAG.Candidates.MeanInt()) * ss.RAG.DocumentTokens.MeanInt()
	case ss.RAG != nil:
		return ss.RAG.Candidates.MeanInt() * ss.RAG.DocumentTokens.MeanInt()
	}
	return 0
}

// retrievalRules checks a retrieval stage's section and refuses the chat keys it has no use for;
// it stands in for syntheticRules (personas and session lengths) on those endpoints.
func (c *checker) retrievalRules() {
	s := c.s
	e := s.Target.Endpoint
	for _, section := range []string{"personas", "session", "workload"} {
		if s.has(section) {
			c.errorf(section, "target.endpoint %s sends no conversation: a request is texts in, a %s per text out; accepted: the %s: section shapes its requests (docs/scenario.md, \"Embeddings and rerank\"), or a chat endpoint for %s", e, map[string]string{"embeddings": "vector", "rerank": "score"}[e], e, section)
		}
	}
	other := map[string]string{"embeddings": "rerank", "rerank": "embeddings"}[e]
	if s.has(other) {
		c.errorf(other, "the %s: section shapes target.endpoint %s's requests, and this scenario's endpoint is %s; accepted: the %s: section", other, other, e, e)
	}
	switch e {
	case "embeddings":
		c.dist("embeddings.inputs", s.Embeddings.Inputs)
		c.dist("embeddings.input_tokens", s.Embeddings.InputTokens)
	case "rerank":
		c.dist("rerank.query_tokens", s.Rerank.QueryTokens)
		c.dist("rerank.documents", s.Rerank.Documents)
		c.dist("rerank.document_tokens", s.Rerank.DocumentTokens)
		if s.Rerank.TopN < 0 {
			c.errorf("rerank.top_n", "found %d; accepted: the number of best scores to ask for, ≥ 1, or 0 (every document's)", s.Rerank.TopN)
		}
	}
	own := map[string][]string{"embeddings": {"model", "input"}, "rerank": {"model", "query", "documents", "top_n"}}[e]
	for _, k := range own {
		if _, set := s.Target.ExtraBody[k]; set {
			c.errorf("target.extra_body."+k, "plload sets %s itself on target.endpoint %s (from target.model and the %s: section); accepted: any other key the server takes, such as encoding_format or dimensions", k, e, e)
		}
	}
	if s.Target.Stream != nil && *s.Target.Stream {
		c.errorf("target.stream", "found true with target.endpoint %s, whose answers are never streamed; accepted: leave it out", e)
	}
	for _, l := range s.SLO.LatencyLimits() {
		if l.Metric == "e2e" {
			continue
		}
		path := "slo." + l.Metric + "." + l.Stat
		if !s.has(path) { // the turn-1 keys
			path = "slo." + l.Metric + "_" + l.Stat
		}
		c.errorf(path, "target.endpoint %s answers in one piece: it has no first token and no token gaps; accepted: e2e (the request's latency)", e)
	}
	if s.Retrieval() && s.has("target.max_tokens_field") {
		c.warnf("target.max_tokens_field", "ignored with target.endpoint %s, which asks for no output tokens", e)
	}
}

// fewestOf is the smallest count d draws: a constant's value, else its floor.
func fewestOf(d Dist) float64 {
	if d.Kind == DistConstant {
		return d.Value
	}
	return d.lower(1)
}

// ragRules checks session.rag.
func (c *checker) ragRules() {
	s := c.s
	rag := s.Session.RAG
	if rag == nil && s.SLO.RAGTurn != nil {
		c.errorf("slo.rag_turn", "bounds a RAG turn's whole latency, and this scenario has no session.rag; accepted: rag_turn with session.rag, or e2e for a request's latency")
	}
	if s.Retrieval() {
		return // retrievalRules refuses the session section
	}
	for _, section := range []string{"embeddings", "rerank"} {
		if s.has(section) {
			c.errorf(section, "the %s: section shapes the requests of target.endpoint %s, and this scenario's endpoint is %s; accepted: target.endpoint %s; a RAG turn's steps take their documents from session.rag (candidates, document_tokens, top_k)", section, section, endpointName(s.Target.Endpoint), section)
		}
	}
	if rag == nil {
		return
	}
	c.dist("session.rag.candidates", rag.Candidates)
	c.dist("session.rag.document_tokens", rag.DocumentTokens)
	if rag.TopK < 1 {
		c.errorf("session.rag.top_k", "found %d; accepted: the number of best documents sent with the chat, ≥ 1", rag.TopK)
	} else if fewest := fewestOf(rag.Candidates); !c.bad["session.rag.candidates"] && float64(rag.TopK) > fewest {
		c.warnf("session.rag.top_k", "found %d, more than the fewest candidates (%g): such turns send every candidate", rag.TopK, fewest)
	}
	if rag.Embed == nil && rag.Rerank == nil {
		c.errorf("session.rag", "neither embed nor rerank is set: a RAG turn with no step is session.retrieved_tokens; accepted: embed: {} and/or rerank: {} (each may set base_url, model, api_key_env)")
	}
	if s.Session.RetrievedTokens != nil {
		c.errorf("session.retrieved_tokens", "found with session.rag, which draws the turn's documents itself (rag.candidates, rag.document_tokens); accepted: one of the two")
	}
	if s.Target.Endpoint == "completions" {
		c.errorf("session.rag", "found with target.endpoint completions; accepted: rag with chat, messages or responses")
	}
	for name, st := range map[string]*StepTarget{"embed": rag.Embed, "rerank": rag.Rerank} {
		if st != nil && st.BaseURL != "" && !strings.HasPrefix(st.BaseURL, "http://") && !strings.HasPrefix(st.BaseURL, "https://") && !strings.HasPrefix(st.BaseURL, "${") {
			c.errorf("session.rag."+name+".base_url", "found %q; accepted: an http:// or https:// URL, such as http://127.0.0.1:8001/v1, or leave it out for target.base_url", st.BaseURL)
		}
	}
	if s.Workload != nil {
		c.errorf("session.rag", "found with workload (a dataset or trace), whose turns are the file's; accepted: rag with synthetic sessions")
	}
}

// drawRetrieval draws a retrieval stage's request: texts with exact token counts, from the
// session's generator, like a chat turn's.
func (s *Scenario) drawRetrieval(g *TextGen, r *rand.Rand) *RetrievalTurn {
	rt := &RetrievalTurn{}
	switch s.Target.Endpoint {
	case "embeddings":
		n := max(1, s.Embeddings.Inputs.SampleInt(r))
		for range n {
			k := s.Embeddings.InputTokens.SampleInt(r)
			rt.Inputs, rt.InputTokens = append(rt.Inputs, g.ProseWith(r, k, nil)), append(rt.InputTokens, k)
		}
	case "rerank":
		rt.QueryTokens = s.Rerank.QueryTokens.SampleInt(r)
		rt.Query = g.ProseWith(r, rt.QueryTokens, questionOpening(s.Session.Language))
		rt.TopN = s.Rerank.TopN
		drawDocuments(g, r, rt, s.Rerank.Documents, s.Rerank.DocumentTokens, s.Session.Language)
	}
	return rt
}

// drawDocuments appends documents (count drawn from n, lengths from tokens), each opened with its
// number as session.retrieved_tokens' documents are.
func drawDocuments(g *TextGen, r *rand.Rand, rt *RetrievalTurn, n, tokens Dist, lang string) {
	count := max(1, n.SampleInt(r))
	for i := range count {
		k := tokens.SampleInt(r)
		rt.Inputs = append(rt.Inputs, g.ProseWith(r, k, docOpening(lang, i+1)))
		rt.InputTokens = append(rt.InputTokens, k)
	}
}

// drawRAG draws a RAG turn's candidate documents; the question is the turn's user message.
func (s *Scenario) drawRAG(g *TextGen, r *rand.Rand, question string, questionTokens int) *RetrievalTurn {
	rag := s.Session.RAG
	rt := &RetrievalTurn{Query: question, QueryTokens: questionTokens}
	if rag.Rerank != nil {
		rt.TopN = rag.TopK
	}
	drawDocuments(g, r, rt, rag.Candidates, rag.DocumentTokens, s.Session.Language)
	return rt
}

// RAGMessage is a RAG turn's user message: the chosen documents (indexes into rt.Inputs, best
// first), then the question, as a RAG assistant's prompt puts them.
func RAGMessage(rt *RetrievalTurn, chosen []int) string {
	var b strings.Builder
	for _, i := range chosen {
		b.WriteString(rt.Inputs[i])
		b.WriteString("\n\n")
	}
	b.WriteString(rt.Query)
	return b.String()
}

// RAGChosen is the documents a RAG turn sends, best first: order's first top_k (the rerank's
// ranking), or without a ranking the first top_k candidates.
func RAGChosen(rt *RetrievalTurn, order []int, topK int) []int {
	if order == nil {
		order = make([]int, len(rt.Inputs))
		for i := range order {
			order[i] = i
		}
	}
	return order[:min(topK, len(order))]
}

// StepTargetFor is where a RAG step goes: its own keys, target's for those left out — but target's
// key only to target's own server: a step on a server of its own sends the key it names, or none,
// never target's credentials to another host.
func (s *Scenario) StepTargetFor(step *StepTarget) StepTarget {
	out := *step
	if out.BaseURL == "" {
		out.BaseURL = s.Target.BaseURL
		if out.APIKeyEnv == "" {
			out.APIKeyEnv = s.Target.APIKeyEnv
		}
	}
	if out.Model == "" {
		out.Model = s.Target.Model
	}
	return out
}

// datasetTexts is what dataset.jsonl keeps of a turn's retrieval texts (AIPerf's single-turn
// texts): a rerank stage's query first, then the inputs or documents; a RAG turn's question is its
// text, and its candidates are these.
func datasetTexts(t Turn) []string {
	rt := t.RetrievalRequest()
	if rt == nil {
		return nil
	}
	if t.User == "" && rt.Query != "" {
		return append([]string{rt.Query}, rt.Inputs...)
	}
	return rt.Inputs
}

// RetrievalText is a retrieval stage's requests in words, for the report's header.
func (s *Scenario) RetrievalText() string {
	switch s.Target.Endpoint {
	case "embeddings":
		return fmt.Sprintf("embeddings: %s inputs of %s tokens per request", s.Embeddings.Inputs.String(), s.Embeddings.InputTokens.String())
	case "rerank":
		return fmt.Sprintf("rerank: a query of %s tokens and %s documents of %s tokens per request", s.Rerank.QueryTokens.String(), s.Rerank.Documents.String(), s.Rerank.DocumentTokens.String())
	}
	return ""
}
