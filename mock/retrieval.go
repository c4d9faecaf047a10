package mock

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file answers the retrieval APIs, POST /v1/embeddings and POST /v1/rerank, with the chat
// endpoint's model of a server. A retrieval request is one prefill with no decode: it is admitted to
// a slot like a chat request, each of its sequences (an input; a query–document pair) goes through
// the same prefix cache, and its whole answer is sent when a chat request of the same prompt would
// have sent its first token: TTFT scaled by the cache hit, plus PrefillPerToken per uncached token,
// jittered (exchange.firstTokenDelay, over the sequences' summed tokens, as one batch). The outcome
// (error, 429, fault) is drawn from the seed and the body as chat's, and played as chat's
// non-streamed answer plays it. Only what goes on the wire is these APIs' own.

// retrievalRequest is an embeddings or rerank request once read and checked.
type retrievalRequest struct {
	model string
	// sequences are the token ids the model runs, one forward pass each.
	sequences [][]uint
	// answer writes the answer's JSON object up to its usage: the caller adds usage and the
	// closing brace, once the cache lookup has counted the tokens.
	answer func() string
}

// embeddingSalt seeds the vectors apart from the plan's draws, so that a vector depends on its text
// alone (and the seed), not on the request it came in.
const embeddingSalt = 0x5bd1e9955bd1e995

// rerankSalt does the same for the relevance scores.
const rerankSalt = 0x2545f4914f6cdd1d

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.serveRetrieval(w, r, s.readEmbeddings)
}

func (s *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	s.serveRetrieval(w, r, s.readRerank)
}

// serveRetrieval reads a retrieval request with read (its errors are the client's: 400), then
// answers it as chat answers a non-streamed request.
func (s *Server) serveRetrieval(w http.ResponseWriter, r *http.Request, read func([]byte) (retrievalRequest, error)) {
	x := &exchange{s: s, w: w, r: r, kind: chatEndpoint, arrival: time.Now()}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", "reading the body: "+err.Error(), "bad_request")
		return
	}
	var answer string
	if !s.withCPU(func() bool { return x.prepareRetrieval(body, read, &answer) }) {
		return
	}
	x.whileAdmitted(func() {
		result := string(x.plan.outcome)
		defer func() { s.metrics.requests.WithLabelValues(result).Inc() }()
		if !x.awaitWholeAnswer(1, &result) { // one "token": the prefill is all the work
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if x.plan.outcome == faultOutcome(FaultMalformed) {
			answer = answer[:len(answer)/2] // the answer breaks off mid-way, as a dying server's would
		}
		io.WriteString(w, answer)
	})
}

// whileAdmitted runs answer once the request holds a slot (admit, from its arrival), as one of the
// timed requests BusyPoll watches, and frees the slot after; answer does not run when the client
// leaves or the server stops while the request waits for a slot.
func (x *exchange) whileAdmitted(answer func()) {
	s := x.s
	var ok bool
	if x.admitted, ok = s.admit(x.r, x.arrival); !ok {
		return
	}
	defer s.release()
	s.beginTimed()
	defer s.endTimed()
	answer()
}

// prepareRetrieval is prepare for a retrieval request: read and check it, check the model, draw the
// plan, answer the outcomes decided before admission, look its sequences up in the prefix cache, and
// write the answer (before admission, so building a long list of vectors never adds to the wait).
// False: it answered the request itself.
func (x *exchange) prepareRetrieval(body []byte, read func([]byte) (retrievalRequest, error), answer *string) bool {
	s, w := x.s, x.w
	rr, err := read(body)
	if err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "bad_request")
		return false
	}
	if !s.cfg.servesModel(rr.model) {
		s.apiError(w, http.StatusNotFound, "NotFoundError", "The model `"+rr.model+"` does not exist.", "model_not_found")
		return false
	}
	x.req = request{Model: rr.model}
	x.plan = s.newPlan(body, &x.req, 1)
	if s.refuseInjected(w, x.plan.outcome) {
		return false
	}
	x.lookUpPrompt(rr.sequences)
	out := rr.answer()
	if !s.cfg.NoUsage {
		out += fmt.Sprintf(`,"usage":{"prompt_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}`, x.prompt, x.prompt, x.cached)
	}
	*answer = out + "}\n"
	return true
}

// refuseInjected answers the outcomes a plan decides before admission (--error-rate,
// --rate-limit-rate, --html-503-rate) as an OpenAI-style server answers a whole (non-streamed)
// request; false when the request goes on to be admitted.
func (s *Server) refuseInjected(w http.ResponseWriter, o outcome) bool {
	switch o {
	case outcomeError:
		s.apiError(w, http.StatusInternalServerError, "internal_error", "mock: injected internal server error (--error-rate)", string(outcomeError))
	case outcomeRateLimited:
		w.Header().Set("Retry-After", strconv.Itoa(int(s.cfg.RetryAfter.Round(time.Second)/time.Second)))
		s.apiError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "mock: injected rate limit (--rate-limit-rate)", string(outcomeRateLimited))
	case faultOutcome(FaultHTML503):
		s.metrics.requests.WithLabelValues(string(FaultHTML503)).Inc()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "<html><head><title>503 Service Temporarily Unavailable</title></head>\n<body><center><h1>503 Service Temporarily Unavailable</h1></center><hr><center>mock (--html-503-rate)</center></body></html>\n")
	default:
		return false
	}
	return true
}

// lookUpPrompt looks each sequence up in the prefix cache (caching it), sums the prompt and cached
// tokens into the exchange, and counts them in /metrics.
func (x *exchange) lookUpPrompt(sequences [][]uint) {
	for _, ids := range sequences {
		x.prompt += len(ids)
		x.cached += x.s.cache.lookupAndInsert(ids)
	}
	m := x.s.metrics
	m.promptTokens.Add(float64(x.prompt))
	m.cacheQueries.Add(float64(x.prompt))
	m.cacheHits.Add(float64(x.cached))
}

// embeddingsRequest is the part of an OpenAI embeddings request the mock reads.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// readEmbeddings reads and checks an embeddings request; its answer holds one vector per input.
func (s *Server) readEmbeddings(body []byte) (retrievalRequest, error) {
	var er embeddingsRequest
	if err := json.Unmarshal(body, &er); err != nil {
		return retrievalRequest{}, fmt.Errorf("the body is not a valid embeddings request: %v", err)
	}
	texts, err := embeddingInputs(er.Input)
	if err != nil {
		return retrievalRequest{}, err
	}
	if er.EncodingFormat != "" && er.EncodingFormat != "float" && er.EncodingFormat != "base64" {
		return retrievalRequest{}, fmt.Errorf("encoding_format %q: accepted: float or base64", er.EncodingFormat)
	}
	dims := s.cfg.EmbeddingDimensions
	if er.Dimensions != nil {
		if *er.Dimensions < 1 || *er.Dimensions > dims {
			return retrievalRequest{}, fmt.Errorf("dimensions %d: accepted: 1 to %d (the model's vector length)", *er.Dimensions, dims)
		}
		dims = *er.Dimensions
	}
	rr := retrievalRequest{model: er.Model, sequences: make([][]uint, len(texts))}
	for i, text := range texts {
		rr.sequences[i] = s.tokens.tokens(text)
	}
	rr.answer = func() string {
		var b []byte
		b = append(b, `{"object":"list","data":[`...)
		for i, text := range texts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"object":"embedding","index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"embedding":`...)
			b = appendVector(b, s.embedding(text, dims), er.EncodingFormat == "base64")
			b = append(b, '}')
		}
		b = append(b, `],"model":`...)
		b = append(b, jsonString(er.Model)...)
		return string(b)
	}
	return rr, nil
}

// embeddingInputs reads an embeddings request's input: a string or an array of strings, none empty.
// Token-id arrays, which OpenAI also takes, are refused by name: the mock counts and caches text.
func embeddingInputs(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("input is required: a string or an array of strings")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, errors.New("input is an empty string: accepted: text of one character or more")
		}
		return []string{one}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("input: accepted: a string or an array of strings")
	}
	if len(items) == 0 {
		return nil, errors.New("input is an empty array: accepted: one string or more")
	}
	texts := make([]string, len(items))
	for i, item := range items {
		if json.Unmarshal(item, &texts[i]) != nil {
			if c := item[0]; c == '[' || c == '-' || c >= '0' && c <= '9' {
				return nil, fmt.Errorf("input[%d]: token ids are not accepted by the mock: send the text", i)
			}
			return nil, fmt.Errorf("input[%d]: accepted: a string", i)
		}
		if texts[i] == "" {
			return nil, fmt.Errorf("input[%d] is an empty string: accepted: text of one character or more", i)
		}
	}
	return texts, nil
}

// embedding is text's vector of dims components: normal draws from (seed, text), scaled to unit
// length, so equal texts get equal vectors in any request. The draws are the same for every length,
// so a shorter vector is the longer one's head renormalised, as a Matryoshka model's truncation is.
func (s *Server) embedding(text string, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	rng := rand.New(rand.NewPCG(s.cfg.Seed^embeddingSalt, h.Sum64()))
	v := make([]float64, dims)
	var norm float64
	for i := range v {
		v[i] = rng.NormFloat64()
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	out := make([]float32, dims)
	for i, c := range v {
		out[i] = float32(c / norm)
	}
	return out
}

// appendVector writes v as a JSON array of numbers, or with asBase64 as a JSON string holding its
// little-endian float32 bytes in base64, as OpenAI's encoding_format base64 sends it.
func appendVector(b []byte, v []float32, asBase64 bool) []byte {
	if asBase64 {
		raw := make([]byte, 4*len(v))
		for i, c := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(c))
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, raw)
		return append(b, '"')
	}
	b = append(b, '[')
	for i, c := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(c), 'g', -1, 32)
	}
	return append(b, ']')
}

// rerankRequest is the part of a rerank request (vLLM's, Cohere's, Jina's shape) the mock reads.
type rerankRequest struct {
	Model     string            `json:"model"`
	Query     *string           `json:"query"`
	Documents []json.RawMessage `json:"documents"`
	TopN      *int              `json:"top_n"`
}

// readRerank reads and checks a rerank request. Each (query, document) pair is one sequence, the
// query first as a cross-encoder reads it, so a query's whole blocks are cached across its documents.
func (s *Server) readRerank(body []byte) (retrievalRequest, error) {
	var rq rerankRequest
	if err := json.Unmarshal(body, &rq); err != nil {
		return retrievalRequest{}, fmt.Errorf("the body is not a valid rerank request: %v", err)
	}
	switch {
	case rq.Query == nil || *rq.Query == "":
		return retrievalRequest{}, errors.New("query is required: a non-empty string")
	case len(rq.Documents) == 0:
		return retrievalRequest{}, errors.New("documents is required: an array of one or more strings or {\"text\": ...} objects")
	case rq.TopN != nil && *rq.TopN < 0:
		return retrievalRequest{}, fmt.Errorf("top_n %d: accepted: 0 or more (0 or none: every document)", *rq.TopN)
	}
	docs := make([]string, len(rq.Documents))
	for i, raw := range rq.Documents {
		var err error
		if docs[i], err = documentText(raw); err != nil {
			return retrievalRequest{}, fmt.Errorf("documents[%d]: %v", i, err)
		}
	}
	query := s.tokens.tokens(*rq.Query)
	rr := retrievalRequest{model: rq.Model, sequences: make([][]uint, len(docs))}
	for i, doc := range docs {
		rr.sequences[i] = slices.Concat(query, s.tokens.tokens(doc)) // a copy: the cache's slices are shared
	}
	n := len(docs)
	if rq.TopN != nil && *rq.TopN > 0 {
		n = min(n, *rq.TopN)
	}
	rr.answer = func() string {
		scores := make([]float64, len(docs))
		order := make([]int, len(docs))
		for i, doc := range docs {
			scores[i], order[i] = s.relevance(*rq.Query, doc), i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) }) // best first
		var b strings.Builder
		b.WriteString(`{"model":` + jsonString(rq.Model) + `,"object":"list","results":[`)
		for k, i := range order[:n] {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"index":%d,"relevance_score":%s}`, i, strconv.FormatFloat(scores[i], 'g', -1, 64))
		}
		b.WriteByte(']')
		return b.String()
	}
	return rr, nil
}

// documentText reads one rerank document: a string, or an object whose text is a string.
func documentText(raw json.RawMessage) (string, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var obj struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.Text == nil {
		return "", errors.New(`accepted: a string or an object {"text": "..."}`)
	}
	return *obj.Text, nil
}

// relevance is the document's score for the query, in (0, 1): a draw from (seed, query, document),
// so a ranking is the same in every request that has the pair.
func (s *Server) relevance(query, doc string) float64 {
	h := fnv.New64a()
	h.Write([]byte(query))
	h.Write([]byte{0})
	h.Write([]byte(doc))
	u := rand.New(rand.NewPCG(s.cfg.Seed^rerankSalt, h.Sum64())).Uint64() >> 11
	return (float64(u) + 0.5) / (1 << 53)
}
