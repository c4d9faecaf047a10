package engine

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/protocol"
	"github.com/plload/plload/workload"
)

// Retrieval requests — an embeddings or rerank stage's, and a RAG turn's embed and rerank steps —
// go through send like a chat turn (its retry, its errors, its timing), to their own target, and
// their whole JSON answer is read by readRetrieval instead of a stream.

// retrievalTarget is where a retrieval request goes and how: a retrieval stage's target, or a RAG
// step's own (session.rag.embed, session.rag.rerank: base_url, model and key, target's by default).
type retrievalTarget struct {
	api     protocol.Retrieval
	url     string
	headers http.Header
	model   string
	// extra is target.extra_body for a retrieval stage's own requests; nil for a RAG step, whose
	// server is not the chat's and takes none of the chat's keys (temperature, ignore_eos).
	extra map[string]any
	// step names a RAG step in its records ("embed", "rerank"); "" for a retrieval stage's requests.
	step string
}

// retrievalCall is one retrieval request of an exchange: its target and query, and what its answer
// said once read.
type retrievalCall struct {
	target *retrievalTarget
	query  protocol.RetrievalQuery
	answer protocol.RetrievalAnswer
}

// maxRetrievalBytes bounds a retrieval answer's body: 2,048 vectors of 4,096 floats as JSON text.
const maxRetrievalBytes = 256 << 20

// prepareRetrieval sets up the stage's retrieval targets: the stage's own when target.endpoint is
// embeddings or rerank, and session.rag's steps. target is target's URL, as the stage reaches it.
func (s *stageRun) prepareRetrieval(target targetURL) error {
	sc := s.cfg.Scenario
	if sc.Retrieval() {
		api, _ := protocol.RetrievalFor(sc.Target.Endpoint)
		s.retrieval = &retrievalTarget{api: api, url: target.at(api.Path()), headers: s.headers, model: sc.Target.Model, extra: sc.Target.ExtraBody}
	}
	rag := sc.Session.RAG
	if rag == nil {
		return nil
	}
	for _, step := range []struct {
		name, api string
		at        *workload.StepTarget
	}{{"embed", "embeddings", rag.Embed}, {"rerank", "rerank", rag.Rerank}} {
		if step.at == nil {
			continue
		}
		at := sc.StepTargetFor(step.at)
		api, _ := protocol.RetrievalFor(step.api)
		// A step on target's server gets target's headers; one on a server of its own gets none of
		// them (they may carry target's credentials), only its own key.
		h := s.headers.Clone()
		if step.at.BaseURL != "" {
			h = http.Header{}
			for _, k := range []string{"Content-Type", "User-Agent", "Accept-Encoding"} {
				h.Set(k, s.headers.Get(k))
			}
		}
		h.Del("Authorization")
		h.Del("X-Api-Key")
		h.Set("Accept", "application/json")
		stepKey := ""
		if at.APIKeyEnv != "" {
			stepKey = s.cfg.Getenv(at.APIKeyEnv)
		}
		api.SetHeaders(h, stepKey)
		if stepKey != "" {
			s.secrets = addSecret(s.secrets, stepKey)
		}
		stepTarget := parseTarget(workload.Expand(at.BaseURL, s.cfg.Getenv))
		stepTarget.base = strings.TrimRight(stepTarget.base, "/")
		if step.at.BaseURL == "" {
			stepTarget = target // target's, as the stage reaches it (the in-process mock's address)
		}
		s.secrets = stepTarget.authorize(h, s.secrets)
		s.ragSteps = append(s.ragSteps, &retrievalTarget{api: api, url: stepTarget.at(api.Path()), headers: h,
			model: workload.Expand(at.Model, s.cfg.Getenv), step: step.name})
	}
	return nil
}

// sendRetrieval sends one retrieval request of session ss's turn k and writes its record; the
// record's ISL is the query's tokens as drawn (tokens).
func (s *stageRun) sendRetrieval(reqCtx context.Context, ss *session, k int, call *retrievalCall, tokens int, credit time.Time) *exchange {
	ex := &exchange{call: call, rec: metrics.Record{
		SessionNum:      int(s.counts.issued.Add(1) - 1),
		XRequestID:      newUUID(),
		SlotWaitNs:      ss.slotWait,
		XCorrelationID:  ss.sr.XCorrelationID,
		ConversationID:  ss.sr.ConversationID,
		DatasetSession:  ss.datasetSession(),
		TurnIndex:       k,
		CreditIssuedNs:  s.clock.ns(credit),
		IntendedStartNs: metrics.Some(s.clock.ns(ss.intended)),
		NotStreamed:     true,
		Step:            call.target.step,
		Model:           ss.model, // as a chat record's: the session's in a model mix, else none
	}}
	ss.slotWait = metrics.Opt[int64]{}
	body, err := call.target.api.Body(call.target.model, call.query, call.target.extra)
	if err != nil {
		s.fail(&ex.rec, time.Now(), tokens, metrics.ErrTypeTransport, fmt.Sprintf("building the request: %v", err))
	} else {
		s.send(reqCtx, ex, body, tokens)
		if ex.rec.Error == nil {
			ex.rec.RequestBytes = metrics.Some(len(body))
		}
	}
	s.finishRecord(ss, ex)
	return ex
}

// readRetrieval reads a retrieval answer whole and checks it against its query: a vector per input,
// or a score per document asked for; one short is an error record saying so (a wrong count must
// never pass as a fast answer).
func (s *stageRun) readRetrieval(ctx, reqCtx context.Context, ex *exchange, body io.Reader, start time.Time, isl int) {
	rec, call := &ex.rec, ex.call
	data, err := io.ReadAll(io.LimitReader(body, maxRetrievalBytes+1))
	end := time.Now()
	if err != nil {
		s.transportFailure(ctx, reqCtx, rec, end, isl, err)
		return
	}
	if len(data) > maxRetrievalBytes {
		s.fail(rec, end, isl, metrics.ErrTypeInvalidResult, fmt.Sprintf("the answer is larger than %d MiB", maxRetrievalBytes>>20))
		return
	}
	a, err := call.target.api.ParseAnswer(data, call.query)
	switch {
	case err != nil:
		s.fail(rec, end, isl, metrics.ErrTypeInvalidResult, s.scrubCut(err.Error(), maxMessageBytes))
		return
	case a.Err != nil:
		rec.RequestEndNs = metrics.Some(s.clock.ns(end))
		rec.ErrorISL = metrics.Some(isl)
		rec.Error = &metrics.RecordError{Code: metrics.Some(metrics.CodeSSEError), Type: metrics.ErrTypeSSE,
			Message: s.scrubCut(a.Err.Error(), maxMessageBytes)}
		return
	}
	call.answer = a
	rec.RequestEndNs = metrics.Some(s.clock.ns(end))
	rec.RequestLatency = metrics.Some(metrics.Ms(int64(end.Sub(start))))
	rec.InputSequenceLength, rec.ClientPromptTokens = metrics.Some(isl), metrics.Some(isl)
	rec.RetrievalItems = metrics.Some(a.Items)
	if a.Usage != nil {
		ex.hasUsage = true
		applyUsage(rec, a.Usage)
	}
}

// retrievalQuery is a drawn retrieval request as the API's query.
func retrievalQuery(rt *workload.RetrievalTurn) protocol.RetrievalQuery {
	return protocol.RetrievalQuery{Query: rt.Query, Inputs: rt.Inputs, TopN: rt.TopN}
}

// ragTurn runs turn k's RAG steps — embed the question, rerank the candidates — and returns the
// user message the chat sends (the chosen documents, best first, then the question) with its
// tokens, and when the turn was due (its first step's intended start: the turn's whole latency
// runs from there). ok is false when a
// step failed: the session ends there, as on a failed chat request, since an assistant whose
// retrieval failed has no documents to answer with.
func (s *stageRun) ragTurn(reqCtx context.Context, ss *session, k int, turn workload.Turn, question string, credit time.Time) (text string, tokens int, started int64, last *exchange, ok bool) {
	rt := turn.RetrievalRequest()
	var order []int
	for i, target := range s.ragSteps {
		call := &retrievalCall{target: target}
		isl := rt.QueryTokens
		if target.step == "embed" {
			call.query = protocol.RetrievalQuery{Inputs: []string{question}}
		} else {
			call.query = protocol.RetrievalQuery{Query: question, Inputs: rt.Inputs, TopN: rt.TopN}
			isl = rt.Tokens()
		}
		if i > 0 {
			credit = time.Now()
			ss.intended = ss.lastEnd // the next step goes as the last one answers
		}
		if i == 0 {
			// The turn is due when its first step is: a turn that waited for a slot or a late client
			// waited with its question asked, and its whole latency says so.
			started = s.clock.ns(ss.intended)
		}
		ex := s.sendRetrieval(reqCtx, ss, k, call, isl, credit)
		last = ex
		if !ex.ok() {
			return "", 0, started, ex, false
		}
		if target.step == "rerank" {
			order = call.answer.Order
		}
	}
	chosen := workload.RAGChosen(rt, order, s.cfg.Scenario.Session.RAG.TopK)
	text = workload.RAGMessage(rt, chosen)
	tokens = s.cfg.Scenario.Tokenizer().Count(text)
	ss.intended = ss.lastEnd
	return text, tokens, started, last, true
}
