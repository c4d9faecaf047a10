package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/protocol"
	"github.com/plload/plload/sse"
	"github.com/plload/plload/workload"
)

// The request features of docs/scenario.md — agent rounds, structured output and non-streamed answers —
// on top of the one request path (send) and session loop (runSession).

// ok reports whether the exchange got an answer.
func (ex *exchange) ok() bool { return !ex.rec.WasCancelled && ex.rec.Error == nil }

// judgeAnswer completes a successful record after its answer ended, off the timing path: the tool
// calls it asked for (their count, and those whose arguments are not JSON) and, with a response
// format, whether the answer met it.
func (s *stageRun) judgeAnswer(ex *exchange) {
	rec := &ex.rec
	if !ex.ok() {
		return
	}
	ex.calls = ex.toolCalls.Calls()
	if s.cfg.Workload.MaxToolRounds() > 0 {
		invalid := 0
		for _, c := range ex.calls {
			if !json.Valid([]byte(c.Arguments)) {
				invalid++
			}
		}
		rec.ToolCalls, rec.ToolCallsInvalid = metrics.Some(len(ex.calls)), metrics.Some(invalid)
		if !ex.firstToolCall.IsZero() {
			rec.TTFToolCall = metrics.Some(metrics.Ms(s.clock.ns(ex.firstToolCall) - rec.RequestStartNs))
		}
	}
	if s.cfg.Workload.ResponseFormatJSON() != nil && len(ex.calls) == 0 {
		rec.StructuredValid = metrics.Some(s.cfg.Workload.ValidateStructured(ex.answer.String()) == nil)
	}
}

// addToolResults adds an answer that asked for tool calls to the history — its content and its
// tool_calls exactly as received — and one tool message per call with the workload's synthetic
// result for this session, turn, round and call.
func (ss *session) addToolResults(ex *exchange, w *workload.Workload, turn, round int, count func(string) int) {
	// A chat template renders the calls as their JSON, so the client counts that.
	tokens := count(ex.answer.String()) + count(string(sse.AppendToolCallsJSON(nil, ex.calls)))
	ss.history = append(ss.history, protocol.NewToolCallsMessage(ex.answer.String(), ex.calls, tokens))
	ss.isl += tokens
	for i, c := range ex.calls {
		text, n := w.ToolResult(ss.ordinal, turn, round, i)
		ss.history = append(ss.history, protocol.NewToolMessage(c.ID, text, n))
		ss.isl += n
	}
}

// maxCompletionBytes bounds a non-streamed answer's body.
const maxCompletionBytes = 64 << 20

// readCompletion reads a non-streamed answer (target.stream: false): its end is when the whole body
// has arrived, and it has no token events, so TTFT, TTFO and ITL stay absent (never 0).
func (s *stageRun) readCompletion(ctx, reqCtx context.Context, ex *exchange, body io.Reader, start time.Time, isl int) {
	rec := &ex.rec
	data, err := io.ReadAll(io.LimitReader(body, maxCompletionBytes+1))
	end := time.Now()
	if err != nil {
		s.transportFailure(ctx, reqCtx, rec, end, isl, err)
		return
	}
	if len(data) > maxCompletionBytes {
		s.fail(rec, end, isl, metrics.ErrTypeInvalidResult, fmt.Sprintf("the answer is larger than %d MiB", maxCompletionBytes>>20))
		return
	}
	c, err := s.api.ParseAnswer(data)
	switch {
	case err != nil:
		s.fail(rec, end, isl, metrics.ErrTypeInvalidResult, s.errorText(err))
		return
	case c.Err != nil:
		rec.RequestEndNs = metrics.Some(s.clock.ns(end))
		rec.ErrorISL = metrics.Some(isl)
		rec.Error = &metrics.RecordError{Code: metrics.Some(metrics.CodeSSEError), Type: metrics.ErrTypeSSE,
			Message: s.scrubCut(c.Err.Error(), maxMessageBytes)}
		return
	case c.Content == "" && c.Reasoning == "" && len(c.ToolCalls) == 0:
		s.fail(rec, end, isl, metrics.ErrTypeInvalidResult, "the answer has no content: no content, reasoning or tool calls")
		rec.Error.Code = metrics.Opt[int]{}
		return
	}
	ex.answer.WriteString(c.Content)
	ex.responseID = c.ResponseID
	ex.toolCalls.Reset()
	for i, tc := range c.ToolCalls {
		ex.toolCalls.Add([]sse.ToolCallDelta{{Index: i, ID: tc.ID, Type: tc.Type, Name: tc.Name, Arguments: tc.Arguments}})
	}
	rec.RequestEndNs = metrics.Some(s.clock.ns(end))
	rec.RequestLatency = metrics.Some(metrics.Ms(int64(end.Sub(start))))
	rec.InputSequenceLength, rec.ClientPromptTokens = metrics.Some(isl), metrics.Some(isl)
	answerText := c.Content
	for _, tc := range c.ToolCalls {
		answerText += tc.Name + tc.Arguments
	}
	rec.OutputChars = metrics.Some(utf8.RuneCountInString(answerText) + utf8.RuneCountInString(c.Reasoning))
	hasCompletion := c.Usage != nil && c.Usage.HasCompletion
	hasServerReasoning := c.Usage != nil && c.Usage.HasReasoning
	// The scenario's tokenizer counts what the usage does not: the whole output without it, the two
	// parts' shares when the server counts no reasoning (splitOutput).
	tok := s.cfg.Scenario.Tokenizer()
	clientAnswer, clientReasoning := 0, 0
	if !hasCompletion || c.Reasoning != "" && !hasServerReasoning {
		clientAnswer = tok.Count(answerText)
		if c.Reasoning != "" {
			clientReasoning = tok.Count(c.Reasoning)
		}
	}
	osl := clientAnswer + clientReasoning
	if hasCompletion {
		osl = c.Usage.CompletionTokens
	}
	rec.OutputSequenceLength = metrics.Some(osl)
	setOutputCounts(rec, osl, c.Usage, c.Reasoning != "", clientReasoning, clientAnswer)
	if c.Usage != nil {
		ex.hasUsage = true
		applyUsage(rec, c.Usage)
	}
}
