package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/plload/plload/engine/h1client"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/sse"
	"github.com/plload/plload/workload"
)

// exchange is one request: what to send and, afterwards, what came back.
type exchange struct {
	rec      metrics.Record
	answer   strings.Builder // content as streamed, for the history
	hasUsage bool
	// toolCalls gathers the answer's streamed tool calls; calls is what they came to (judgeAnswer),
	// firstToolCall the first tool-call token event.
	toolCalls     sse.ToolCallAssembler
	calls         []sse.ToolCall
	firstToolCall time.Time
	// responseID is the answer's id where its API names one (Responses'), which the session's next
	// request refers to under target.history: server.
	responseID string
	// retryAfter is a 429's Retry-After, for the slot's backoff.
	retryAfter time.Duration
	// heldBack: a stream ended normally without a token event although the server generated
	// tokens (its usage counts them, or it stopped at the length limit). A server holds back a token
	// that is only part of a multibyte character until the rest comes, so a 1-token answer can stream
	// no text at all; the preflight does not warn about that answer.
	heldBack bool
	// For the preflight's messages: the Location of a 3xx answer, the Content-Encoding of an answer
	// compressed although plload asked for none, and how many token events arrived, whatever the
	// outcome.
	location, encoding string
	tokenEvents        int
	// retriedAfterWrite: the request was retried (rec.Retried) after its first try had been written
	// in full before the server closed the connection unanswered, so the server may have read it and
	// done its work: it may have served the request twice (see retryable).
	retriedAfterWrite bool
	// call is a retrieval request's target and query (a retrieval stage's, or a RAG step's); nil
	// for a chat turn, which goes to the stage's API.
	call *retrievalCall
}

// send issues one request for history and fills in ex.rec. It never returns an error: every outcome,
// cancellation included, is a record.
func (s *stageRun) send(ctx context.Context, ex *exchange, body []byte, islEstimate int) {
	rec := &ex.rec
	rec.WorkerID, rec.RecordProcessorID = "plload", "plload"
	reqCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var start time.Time
	var conn httptrace.GotConnInfo
	// responded: a byte of the response arrived. The transport calls the hook from the connection's
	// read loop, which may still be running when Do has returned the write's error.
	var responded atomic.Bool
	// wrote: net/http's transport wrote the whole request (h1client does not report it; its write
	// errors say instead, see writtenInFull).
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) { wrote.Store(info.Err == nil) },
		GotConn: func(info httptrace.GotConnInfo) {
			if start.IsZero() { // a retry keeps the first attempt's start: the user waited for both
				start = time.Now()
			}
			conn = info
			s.conns.got(info)
		},
		GotFirstResponseByte: func() { responded.Store(true) },
	}
	var resp *http.Response
	var err error
	client := s.client
	for attempt := 0; ; attempt++ {
		var req *http.Request
		req, err = s.newRequest(httptrace.WithClientTrace(reqCtx, trace), ex, body)
		if err != nil {
			s.fail(rec, time.Now(), islEstimate, metrics.ErrTypeTransport, fmt.Sprintf("building the request: %v", err))
			return
		}
		resp, err = client.Do(req)
		if err == nil || attempt > 0 || !retryable(conn, responded.Load(), err, ctx, reqCtx) {
			break
		}
		// Once, at once, on a connection of its own: another pooled one may be just as dead.
		ex.retriedAfterWrite = writtenInFull(client, wrote.Load(), err)
		client, rec.Retried = s.freshClient, true
		if s.counts.retried.Add(1) == 1 {
			s.log.Info(retryMessage(ex.retriedAfterWrite), "error", s.scrub(err.Error()), "x_request_id", rec.XRequestID)
		}
	}
	if start.IsZero() {
		start = time.Now() // no connection was ever obtained
	}
	rec.RequestStartNs = s.clock.ns(start)
	rec.BenchmarkPhase = s.phase(start)
	if err != nil {
		s.transportFailure(ctx, reqCtx, rec, time.Now(), islEstimate, err)
		return
	}
	defer func() {
		if rec.Error == nil {
			drainBody(resp.Body, drainLimit)
		}
		resp.Body.Close()
	}()
	ack := time.Now()
	if why := s.conns.answered(resp, s.host); why != "" {
		s.fail(rec, ack, islEstimate, metrics.ErrTypeTransport, s.scrub(why))
		return
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		s.httpError(ex, resp, islEstimate)
		return
	}
	rec.RequestAckNs = metrics.Some(s.clock.ns(ack))
	if ce := strings.TrimSpace(resp.Header.Get("Content-Encoding")); ce != "" && !strings.EqualFold(ce, "identity") {
		// plload sent Accept-Encoding: identity; read as text, a compressed stream would be
		// "stream ended without data", which names the wrong cause.
		ex.encoding = s.scrubCut(ce, 200) // server text, shown by the preflight too
		s.fail(rec, time.Now(), islEstimate, metrics.ErrTypeTransport, s.scrubCut(
			fmt.Sprintf("the server compressed the stream (Content-Encoding: %s) though plload asked for identity (Accept-Encoding: identity): turn compression off on the server or its proxy", ex.encoding), maxMessageBytes))
		return
	}
	if ex.call != nil {
		s.readRetrieval(ctx, reqCtx, ex, resp.Body, start, islEstimate)
		return
	}
	if !s.cfg.Scenario.Streamed() {
		s.readCompletion(ctx, reqCtx, ex, resp.Body, start, islEstimate)
		return
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// A secret the 512-byte peek would split is read whole, masked, then cut (scrubCut).
		peek, _ := io.ReadAll(io.LimitReader(resp.Body, int64(512+s.longestSecret())))
		s.fail(rec, time.Now(), islEstimate, metrics.ErrTypeTransport, s.scrubCut(
			fmt.Sprintf("expected a text/event-stream answer to a streaming request, got Content-Type %q: %s",
				s.scrubCut(resp.Header.Get("Content-Type"), 200), s.scrubCut(strings.TrimSpace(string(peek)), 512)), maxMessageBytes))
		return
	}
	s.readStream(ctx, reqCtx, ex, resp.Body, start, islEstimate)
}

// streamRead is what reading an SSE answer gathered.
type streamRead struct {
	tokens     []time.Time // every token event
	firstOut   time.Time   // first non-reasoning content
	reasoning  int         // reasoning token events
	chars      int         // Unicode characters of content, reasoning and tool-call text
	usage      *sse.Usage
	finish     string    // the last finish_reason
	last       time.Time // last message of any kind
	done       bool
	streamErr  *sse.StreamError
	readFailed error
	// text is every token event's text, reasoning, content and tool-call text in turn, and ends the
	// end of each event's part in it: how many tokens each carried is counted from them after the
	// stream, and only when the server counted more tokens than events (chunk_tokens.go).
	text []byte
	ends []int
}

// streamReads keeps released streamReads with their token-time slices, so a stream's times are
// appended to a slice another stream has grown (and left in the CPU's cache) rather than to one grown
// from nothing, allocation by allocation, on every request (bench/README.md, "CPU per chunk").
var streamReads = sync.Pool{New: func() any { return new(streamRead) }}

// release gives st back for reuse; nothing may use it after. A slice grown past a long answer's
// size is dropped rather than kept.
func (st *streamRead) release() {
	tokens, text, ends := st.tokens[:0], st.text[:0], st.ends[:0]
	if cap(tokens) > 8192 {
		tokens, ends = nil, nil
	}
	if cap(text) > 64<<10 {
		text = nil
	}
	*st = streamRead{tokens: tokens, text: text, ends: ends}
	streamReads.Put(st)
}

// newRequest is the POST of body with the stage's headers and the request's ids: X-Request-ID,
// X-Correlation-ID (the session's), and target.session_header's header with the session's id on every
// turn, for a router's session affinity.
func (s *stageRun) newRequest(ctx context.Context, ex *exchange, body []byte) (*http.Request, error) {
	rec, url, headers := &ex.rec, s.url, s.headers
	if ex.call != nil {
		url, headers = ex.call.target.url, ex.call.target.headers
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	for k, v := range headers {
		h[k] = v
	}
	h.Set("X-Request-ID", rec.XRequestID)
	h.Set("X-Correlation-ID", rec.XCorrelationID)
	if s.sessionHeader != "" {
		h.Set(s.sessionHeader, rec.XCorrelationID)
	}
	return req, nil
}

// httpError makes ex's record the error of a non-2xx answer: its status, and the start of its body.
func (s *stageRun) httpError(ex *exchange, resp *http.Response, islEstimate int) {
	rec := &ex.rec
	// A secret the 4 KiB limit would split is read whole, masked, then cut (scrubCut).
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, int64(maxMessageBytes+s.longestSecret())))
	end := time.Now()
	rec.RequestEndNs = metrics.Some(s.clock.ns(end))
	rec.ErrorISL = metrics.Some(islEstimate)
	text := http.StatusText(resp.StatusCode)
	if text == "" {
		text = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	message := strings.TrimSpace(string(msg))
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		ex.location = s.scrubCut(resp.Header.Get("Location"), 512) // server text, shown by the preflight too
		message = strings.TrimSuffix(redirectMessage(ex.location)+"; "+message, "; ")
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		message = "Retry-After: " + ra + "; " + message
		ex.retryAfter = parseRetryAfter(ra, end)
	}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && s.cfg.Scenario.Target.History == workload.HistoryServer && strings.Contains(message, "previous_response_id") {
		message = historyHint + message // before the server's text, so the cut never drops it
	}
	rec.Error = &metrics.RecordError{Code: metrics.Some(resp.StatusCode), Type: text,
		Message: s.scrubCut(message, maxMessageBytes)}
}

// historyHint goes before a server's refusal that names previous_response_id under target.history:
// server: a server that keeps no responses (llama.cpp's), or has let this one go, cannot continue
// a conversation it does not hold (docs/apis.md).
const historyHint = "the server refused previous_response_id (target.history: server); a server that keeps no responses needs target.history: client: "

// redirectMessage says what plload did with a 3xx answer to Location (its client follows none).
func redirectMessage(location string) string {
	if location == "" {
		return "the server answered with a redirect without a Location; plload follows no redirects"
	}
	return fmt.Sprintf("the server redirects to %s; plload follows no redirects: it measures one target, so point target.base_url there", location)
}

// readStream reads the SSE answer and computes the record's metrics (docs/records.md).
func (s *stageRun) readStream(ctx, reqCtx context.Context, ex *exchange, body io.Reader, start time.Time, isl int) {
	rec := &ex.rec
	st, ok := s.readPolled(reqCtx, ex, body)
	if !ok {
		st = s.readEvents(ex, body)
	}
	defer st.release()
	ex.tokenEvents = len(st.tokens)
	switch {
	case st.streamErr != nil:
		rec.RequestEndNs = metrics.Some(s.clock.ns(st.last))
		rec.ErrorISL = metrics.Some(isl)
		rec.Error = &metrics.RecordError{Code: metrics.Some(metrics.CodeSSEError), Type: metrics.ErrTypeSSE,
			Message: s.scrubCut(st.streamErr.Error(), maxMessageBytes)}
		return
	case st.readFailed != nil:
		s.transportFailure(ctx, reqCtx, rec, time.Now(), isl, st.readFailed)
		return
	case !st.done:
		s.fail(rec, st.last, isl, metrics.ErrTypeTransport,
			fmt.Sprintf("the stream ended without %s after %d token events (truncated answer?)", s.api.StreamEnd(), len(st.tokens)))
		return
	case len(st.tokens) == 0:
		ex.heldBack = st.finish == "length" || st.usage != nil && st.usage.HasCompletion && st.usage.CompletionTokens > 0
		s.fail(rec, st.last, isl, metrics.ErrTypeInvalidResult, "the answer has no content: no chunk carried content, reasoning or tool-call text")
		rec.Error.Code = metrics.Opt[int]{}
		return
	}
	rec.RequestEndNs = metrics.Some(s.clock.ns(st.last))
	st.timings(rec, start)
	st.counts(rec)
	if st.usage != nil && st.usage.HasCompletion {
		rec.ChunkTokens = st.chunkTokens(st.usage.CompletionTokens, st.unstreamedReasoning(), s.cfg.Scenario.Tokenizer().Count)
	}
	rec.InputSequenceLength = metrics.Some(isl)
	rec.ClientPromptTokens = metrics.Some(isl)
	if st.usage != nil {
		ex.hasUsage = true
		applyUsage(rec, st.usage)
	}
}

// readEvents reads the answer's events to [DONE], an error, or the end of the stream, adding its
// content to ex's answer as streamed.
func (s *stageRun) readEvents(ex *exchange, body io.Reader) *streamRead {
	st := streamReads.Get().(*streamRead)
	rd := s.api.NewStreamReader(body, s.maxEventBytes)
	defer rd.Release()
	for {
		ev, err := rd.Next()
		if !s.takeEvent(st, ex, ev, err) {
			break
		}
	}
	if st.last.IsZero() {
		st.last = time.Now()
	}
	return st
}

// takeEvent adds one message of the answer (or the error that ended reading it) to st and ex; false
// when reading is over: [DONE], an error, or the end of the stream. Both readers of a streamed body
// (readEvents here, readPolled on the poller) go through it.
func (s *stageRun) takeEvent(st *streamRead, ex *exchange, ev sse.Event, err error) bool {
	if err != nil {
		var malformed *sse.MalformedError
		if errors.As(err, &malformed) {
			st.readFailed, st.last = err, ev.At
		} else if !errors.Is(err, io.EOF) {
			st.readFailed = err
		}
		return false
	}
	st.last = ev.At
	if ev.Err != nil {
		st.streamErr = ev.Err
		return false
	}
	if ev.IsToken() {
		if s.cfg.OnTokenEvent != nil {
			s.cfg.OnTokenEvent(ev)
		}
		st.tokens = append(st.tokens, ev.At)
		st.text = append(append(append(st.text, ev.Reasoning...), ev.Content...), ev.ToolCall...)
		st.ends = append(st.ends, len(st.text))
		st.chars += utf8.RuneCountInString(ev.Content) + utf8.RuneCountInString(ev.Reasoning) + utf8.RuneCountInString(ev.ToolCall)
		if ev.Reasoning != "" {
			st.reasoning++
		}
		if ev.ToolCall != "" && ex.firstToolCall.IsZero() {
			ex.firstToolCall = ev.At
		}
		if ev.Content != "" {
			if st.firstOut.IsZero() {
				st.firstOut = ev.At
			}
			ex.answer.WriteString(ev.Content)
		}
	}
	if ev.ToolCalls != nil {
		ex.toolCalls.Add(ev.ToolCalls)
	}
	if ev.ResponseID != "" {
		ex.responseID = ev.ResponseID
	}
	if ev.Usage != nil {
		st.usage = ev.Usage
	}
	if ev.FinishReason != "" {
		st.finish = ev.FinishReason
	}
	st.done = ev.Done
	return !st.done
}

// timings fills the record's latencies from the token events' times.
func (st *streamRead) timings(rec *metrics.Record, start time.Time) {
	ms := func(d time.Duration) float64 { return metrics.Ms(int64(d)) }
	tokens := st.tokens
	rec.TTFT = metrics.Some(ms(tokens[0].Sub(start)))
	if len(tokens) > 1 {
		rec.TTST = metrics.Some(ms(tokens[1].Sub(tokens[0])))
		rec.InterChunkLatency = make([]float64, len(tokens)-1)
		for i := 1; i < len(tokens); i++ {
			rec.InterChunkLatency[i-1] = ms(tokens[i].Sub(tokens[i-1]))
		}
	}
	if !st.firstOut.IsZero() {
		rec.TTFO = metrics.Some(ms(st.firstOut.Sub(start)))
	}
	rec.RequestLatency = metrics.Some(ms(tokens[len(tokens)-1].Sub(start)))
}

// counts fills the record's token and character counts, and the per-request ITL from them.
func (st *streamRead) counts(rec *metrics.Record) {
	rec.OutputChars = metrics.Some(st.chars)
	osl := len(st.tokens)
	if st.usage != nil && st.usage.HasCompletion {
		osl = st.usage.CompletionTokens
	}
	rec.OutputSequenceLength = metrics.Some(osl)
	// Without the server's reasoning count, its total is split as the token events were.
	setOutputCounts(rec, osl, st.usage, st.reasoning > 0, st.reasoning, len(st.tokens)-st.reasoning)
	if osl >= 2 {
		itl := (rec.RequestLatency.V - rec.TTFT.V) / float64(osl-1)
		rec.InterTokenLatency = metrics.Some(itl)
		if itl > 0 {
			rec.ThroughputPerUser = metrics.Some(1000 / itl)
		}
	}
}

// applyUsage takes the server's own token accounting into the record.
func applyUsage(rec *metrics.Record, usage *sse.Usage) {
	if usage.HasPrompt {
		rec.InputSequenceLength = metrics.Some(usage.PromptTokens)
		rec.UsagePromptTokens = metrics.Some(usage.PromptTokens)
	}
	if usage.HasCompletion {
		rec.UsageCompletionTokens = metrics.Some(usage.CompletionTokens)
	}
	if usage.HasTotal {
		rec.UsageTotalTokens = metrics.Some(usage.TotalTokens)
	}
	if usage.HasCached {
		rec.UsageCachedTokens = metrics.Some(usage.CachedTokens)
	}
}

// fail makes rec an error record of the given type, ended at end.
func (s *stageRun) fail(rec *metrics.Record, end time.Time, isl int, kind, msg string) {
	rec.RequestEndNs = metrics.Some(s.clock.ns(end))
	rec.ErrorISL = metrics.Some(isl)
	rec.Error = &metrics.RecordError{Type: kind, Message: msg}
}

// transportFailure classifies an error from the HTTP client or the stream: the stage cancelling it,
// the request timeout, a refused connection, a reset, a cut stream.
func (s *stageRun) transportFailure(stageCtx, reqCtx context.Context, rec *metrics.Record, at time.Time, isl int, err error) {
	host := s.host
	if ue := (*url.Error)(nil); errors.As(err, &ue) { // the request's own host: a RAG step's may be another
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			host = u.Host
		}
	}
	switch {
	case stageCtx.Err() != nil:
		s.cancelled(rec, at, isl)
	case reqCtx.Err() != nil || isTimeout(err):
		s.fail(rec, at, isl, metrics.ErrTypeTimeout, fmt.Sprintf("no complete answer within target.timeout %s", s.timeout))
	case s.conns.refused(err, host) != "":
		s.fail(rec, at, isl, metrics.ErrTypeConnect, s.scrub(s.conns.refused(err, host)))
	case isTLSError(err):
		s.fail(rec, at, isl, metrics.ErrTypeConnect, s.scrub(fmt.Sprintf("TLS with %s failed: %v (a private CA goes in target.tls.ca_file)", host, rootCause(err))))
	case isDialError(err):
		s.fail(rec, at, isl, metrics.ErrTypeConnect, s.scrub(fmt.Sprintf("cannot connect to %s: %v", host, rootCause(err))))
	case !rec.RequestAckNs.OK && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)):
		how := "closed"
		if errors.Is(err, syscall.ECONNRESET) {
			how = "reset (TCP RST)"
		}
		s.fail(rec, at, isl, metrics.ErrTypeTransport, s.scrub(fmt.Sprintf("the server %s the connection before answering: %v", how, rootCause(err))))
	case !rec.RequestAckNs.OK && errors.Is(err, io.ErrUnexpectedEOF):
		// HTTP/2's transport says so of a connection the server closed before any answer.
		s.fail(rec, at, isl, metrics.ErrTypeTransport, s.scrub(fmt.Sprintf("the server closed the connection before answering: %v", rootCause(err))))
	case errors.Is(err, syscall.ECONNRESET):
		s.fail(rec, at, isl, metrics.ErrTypeTransport, "the server reset the connection (TCP RST) mid-answer")
	case streamReset(err) != "":
		// HTTP/2: the server ended this request's stream (RST_STREAM); the connection carries others.
		when := "mid-answer"
		if !rec.RequestAckNs.OK {
			when = "before answering"
		}
		s.fail(rec, at, isl, metrics.ErrTypeTransport, fmt.Sprintf("the server reset the stream (HTTP/2 RST_STREAM, %s) %s", streamReset(err), when))
	case errors.Is(err, io.ErrUnexpectedEOF):
		s.fail(rec, at, isl, metrics.ErrTypeTransport, "the connection closed mid-answer (stream cut)")
	case errors.Is(err, sse.ErrEventTooLarge):
		s.fail(rec, at, isl, metrics.ErrTypeTransport, eventTooLarge(s.maxEventBytes))
	default:
		if malformed := (*sse.MalformedError)(nil); errors.As(err, &malformed) {
			what := "bad JSON in the stream: "
			if malformed.Err == nil { // valid JSON, but not the API's: another API's events
				what = "an unexpected event in the stream: "
			}
			s.fail(rec, at, isl, metrics.ErrTypeTransport, what+s.errorText(err))
			return
		}
		s.fail(rec, at, isl, metrics.ErrTypeTransport, s.errorText(err))
	}
}

// errorText is err's text for a record, secrets masked and cut to maxMessageBytes; a malformed
// payload in it is masked, then cut to 200 bytes (scrubCut).
func (s *stageRun) errorText(err error) string {
	var malformed *sse.MalformedError
	if errors.As(err, &malformed) {
		return s.scrubCut(malformed.ErrorWith(s.scrubCut(malformed.Data, 200)), maxMessageBytes)
	}
	return s.scrubCut(err.Error(), maxMessageBytes)
}

// eventTooLarge names the limit an SSE event passed: the one the reader applied (4 MiB unless the
// engine's Config set another), never the unset 0.
func eventTooLarge(maxEventBytes int) string {
	limit := sse.EventLimit(maxEventBytes)
	if limit%(1<<20) == 0 {
		return fmt.Sprintf("one SSE event was over the %d MiB limit (plload's bound on one event's data)", limit>>20)
	}
	return fmt.Sprintf("one SSE event was over the %d-byte limit (plload's bound on one event's data)", limit)
}

// cancelled makes rec a cancellation record: the stage ended it (drain expired or the user stopped).
func (s *stageRun) cancelled(rec *metrics.Record, at time.Time, isl int) {
	rec.WasCancelled = true
	rec.CancellationTimeNs = metrics.Some(s.clock.ns(at))
	rec.RequestEndNs = metrics.Some(s.clock.ns(at))
	rec.ErrorISL = metrics.Some(isl)
	rec.Error = &metrics.RecordError{Code: metrics.Some(metrics.CodeCancelled), Type: metrics.ErrTypeCancelled, Message: s.cancelReason()}
}

// drainLimit bounds the wait for the end of an answer's body after [DONE].
const drainLimit = 100 * time.Millisecond

// drainBody reads what is left of an answer after [DONE] — normally only the chunked terminator,
// microseconds behind — because Go's transport returns a connection to the pool only when its body
// was read to the end: an answer closed early takes its connection with it, and the session's next
// turn waits for a new TCP (and TLS) handshake before it is sent — a late send, and handshake work
// the server under test would not get from a kept-alive client (measured before this: 93 requests
// over 19 connections at concurrency 3). A server that keeps the stream open after [DONE] gets
// limit, then the connection is dropped. The record's times are taken before; this costs them nothing.
func drainBody(body io.ReadCloser, limit time.Duration) {
	stop := time.AfterFunc(limit, func() { body.Close() })
	io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	stop.Stop()
}

// retryable says whether a request that failed may be sent again: only when it went out on a reused
// connection and failed before any response byte — usually the server had closed the pooled
// connection just before (llama.cpp closes after every answer while advertising keep-alive; uvicorn
// and llama.cpp drop idle ones after 5 s), and never saw the request. Not always: a server may read
// the request and then close the connection unanswered, and when the request had been written in
// full a client cannot tell the two apart, so such retries are marked (retriedAfterWrite) and
// counted apart — the server may have done the work twice. Go retries this itself only for
// idempotent requests, and a POST is not one. A fresh connection, a byte of answer, a timeout or a
// cancelled stage are never retried: those are the server's, and are recorded as such.
func retryable(conn httptrace.GotConnInfo, responded bool, err error, stageCtx, reqCtx context.Context) bool {
	if stageCtx.Err() != nil || reqCtx.Err() != nil || isTimeout(err) || responded || !conn.Reused {
		return false
	}
	// net.ErrClosed: the transport saw the server's close and shut the connection while the request
	// was being written on it.
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "server closed idle connection")
}

// writtenInFull says whether a request whose try failed before any response byte had been written
// whole: net/http reports it (wrote); for plload's HTTP/1.1 client, written unless its write failed.
func writtenInFull(client *http.Client, wrote bool, err error) bool {
	if _, h1 := client.Transport.(*h1client.Transport); !h1 {
		return wrote
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "write"
}

// retryMessage is run.log's line for the stage's first retry.
func retryMessage(afterWrite bool) string {
	if afterWrite {
		return "sent a request again on a new connection: the server closed the kept-alive one without answering after the request had been written to it, " +
			"so the server may have read it and done the work twice (a server that closed an idle connection just as the request went out looks the same to a client); " +
			"such requests are counted as retried_requests, and apart as retried_after_close, in stage.json"
	}
	return "sent a request again on a new connection: the server had closed the kept-alive one before the request was written to it (llama.cpp does after every answer); " +
		"later ones are counted as retried_requests in stage.json"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

func isTLSError(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var record tls.RecordHeaderError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &record)
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
