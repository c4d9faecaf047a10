package mock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// endpoint tells the chat and the completions wire formats apart.
type endpoint int

const (
	chatEndpoint endpoint = iota
	completionsEndpoint
)

// maxBody bounds a request body (a 10k-token history is about 50 KB).
const maxBody = 64 << 20

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) { s.serve(w, r, chatEndpoint) }

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, completionsEndpoint)
}

// apiError writes an OpenAI-style error body with the given status.
func (s *Server) apiError(w http.ResponseWriter, status int, kind, msg string, out string) {
	s.metrics.requests.WithLabelValues(out).Inc()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%s,"type":%s,"code":%d}}`, jsonString(msg), jsonString(kind), status)
}

// exchange is one request being answered.
type exchange struct {
	s         *Server
	w         http.ResponseWriter
	r         *http.Request
	kind      endpoint
	req       request
	plan      plan
	arrival   time.Time
	admitted  time.Time // when prefill may begin: the arrival, or the end of a wait for a slot
	maxTokens int
	prompt    int // prompt tokens
	cached    int // of which found in the prefix cache
	id        string
	model     string // JSON-quoted
	created   string
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, kind endpoint) {
	x := &exchange{s: s, w: w, r: r, kind: kind, arrival: time.Now()}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", "reading the body: "+err.Error(), "bad_request")
		return
	}
	if !s.withCPU(func() bool { return x.prepare(body) }) {
		return
	}

	var ok bool
	if x.admitted, ok = s.admit(r, x.arrival); !ok {
		return
	}
	defer s.release()
	s.beginTimed()
	defer s.endTimed()
	x.id = fmt.Sprintf("%x", x.plan.rng.Uint64())
	x.model = jsonString(x.req.Model)
	x.created = strconv.FormatInt(time.Now().Unix(), 10)
	if x.req.Stream {
		x.stream()
	} else {
		x.complete()
	}
}

// prepare parses the request, tokenizes its prompt and looks it up in the prefix cache: the CPU work
// before admission. False: it answered an error (or an injected fault) itself.
func (x *exchange) prepare(body []byte) bool {
	s, w, kind := x.s, x.w, x.kind
	if err := json.Unmarshal(body, &x.req); err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", "the body is not valid JSON: "+err.Error(), "bad_request")
		return false
	}
	if !s.cfg.servesModel(x.req.Model) {
		s.apiError(w, http.StatusNotFound, "NotFoundError", "The model `"+x.req.Model+"` does not exist.", "model_not_found")
		return false
	}
	ids, err := x.promptTokens()
	if err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "bad_request")
		return false
	}
	if x.maxTokens, err = x.req.maxTokens(s.cfg.DefaultMaxTokens, s.cfg.MaxTokensLimit); err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "bad_request")
		return false
	}
	x.plan = s.newPlan(body, &x.req, x.maxTokens)
	if kind == completionsEndpoint {
		x.plan.content += x.plan.reasoning // completions have no reasoning channel
		x.plan.reasoning = 0
	} else if err := s.planFeatures(&x.plan, &x.req, x.maxTokens); err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "bad_request")
		return false
	}
	switch x.plan.outcome {
	case outcomeError:
		s.apiError(w, http.StatusInternalServerError, "internal_error", "mock: injected internal server error (--error-rate)", string(outcomeError))
		return false
	case outcomeRateLimited:
		w.Header().Set("Retry-After", strconv.Itoa(int(s.cfg.RetryAfter.Round(time.Second)/time.Second)))
		s.apiError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "mock: injected rate limit (--rate-limit-rate)", string(outcomeRateLimited))
		return false
	case faultOutcome(FaultHTML503):
		s.metrics.requests.WithLabelValues(string(FaultHTML503)).Inc()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "<html><head><title>503 Service Temporarily Unavailable</title></head>\n<body><center><h1>503 Service Temporarily Unavailable</h1></center><hr><center>mock (--html-503-rate)</center></body></html>\n")
		return false
	}
	x.prompt = len(ids)
	x.cached = s.cache.lookupAndInsert(ids)
	s.metrics.promptTokens.Add(float64(x.prompt))
	s.metrics.cacheQueries.Add(float64(x.prompt))
	s.metrics.cacheHits.Add(float64(x.cached))
	return true
}

// promptTokens tokenizes the prompt as a chat template would lay it out: each message's role on a
// line, then its content, an image's tokens in its part's place (images.go). Message texts are
// cached, so a long history costs little per turn.
func (x *exchange) promptTokens() ([]uint, error) {
	var ids []uint
	if x.kind == completionsEndpoint {
		var text string
		switch p := x.req.Prompt.(type) {
		case string:
			text = p
		case []any:
			for _, part := range p {
				s, ok := part.(string)
				if !ok {
					return nil, errors.New("prompt must be a string or an array of strings")
				}
				text += s
			}
		default:
			return nil, errors.New("prompt is required: a string or an array of strings")
		}
		return x.s.tokens.tokens(text), nil
	}
	if len(x.req.Messages) == 0 {
		return nil, errors.New("messages is required: a non-empty array of {role, content}")
	}
	if len(x.req.Tools) > 0 {
		// A chat template lays the tool schemas out ahead of the conversation, so they are part of
		// the cacheable prefix.
		b, _ := json.Marshal(x.req.Tools)
		ids = append(ids, x.s.tokens.tokens("tools:\n"+string(b))...)
	}
	imageTokens := 0
	for i, m := range x.req.Messages {
		segs, err := m.chatSegments(i)
		if err != nil {
			return nil, err
		}
		ids = append(ids, x.s.tokens.tokens(m.Role+":\n")...)
		for _, sg := range segs {
			if sg.image == nil {
				ids = append(ids, x.s.tokens.tokens(sg.text)...)
				continue
			}
			// An image's tokens sit where its part does, as a chat template places its placeholder.
			if err := x.s.resolveImage(sg.image); err != nil {
				return nil, err
			}
			if imageTokens += sg.image.tokens; imageTokens > maxPromptImageTokens {
				return nil, fmt.Errorf("%s: the request's images come to more than %d tokens, more than the mock takes", sg.image.where, maxPromptImageTokens)
			}
			ids = appendImageTokens(ids, sg.image)
		}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			ids = append(ids, x.s.tokens.tokens(string(m.ToolCalls))...)
		}
	}
	return ids, nil
}

// admit takes a slot (with --max-concurrency) and counts the request as running. It returns when
// prefill may begin: the request's arrival when a slot was free — so parsing and tokenizing the
// request never add to its TTFT — or the moment a queued request got its slot. False: the client left
// or the server is stopping.
func (s *Server) admit(r *http.Request, arrival time.Time) (time.Time, bool) {
	start := arrival
	s.startScaleClock(arrival)
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
		default:
			s.metrics.waiting.Inc()
			select {
			case s.slots <- struct{}{}:
				start = time.Now()
				s.metrics.waiting.Dec()
			case <-r.Context().Done():
				s.metrics.waiting.Dec()
				return start, false
			case <-s.stop:
				s.metrics.waiting.Dec()
				return start, false
			}
		}
	}
	s.metrics.running.Add(1)
	return start, true
}

func (s *Server) release() {
	s.metrics.running.Add(-1)
	if s.slots == nil {
		return
	}
	for c := s.closing.Load(); c > 0; c = s.closing.Load() {
		if s.closing.CompareAndSwap(c, c-1) {
			return // a scale down closes this slot: its token stays in
		}
	}
	<-s.slots
}

// firstTokenDelay is TTFT after the cache and prefill adjustments, with jitter.
func (x *exchange) firstTokenDelay() time.Duration {
	c := x.s.cfg
	ttft := float64(c.TTFT)
	if x.prompt > 0 {
		ttft *= 1 - float64(x.cached)/float64(x.prompt)*(1-c.CacheTTFTFactor)
	}
	ttft += float64(c.PrefillPerToken) * float64(x.prompt-x.cached)
	return time.Duration(math.Round(x.plan.jittered(ttft, c.Jitter)))
}

// sleepUntil waits for t; false when the client left or the server is stopping.
func (x *exchange) sleepUntil(timer *time.Timer, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer.Reset(d)
	select {
	case <-timer.C:
		return true
	case <-x.r.Context().Done():
	case <-x.s.stop:
	}
	timer.Stop()
	return false
}

// stall holds the request open until the client gives up or the server stops.
func (x *exchange) stall() {
	select {
	case <-x.r.Context().Done():
	case <-x.s.stop:
	}
}

// breakConnection ends the response abruptly: a close without the chunk terminator, or with
// reset a TCP RST (SO_LINGER 0), as a crashing server or a middlebox would.
func (x *exchange) breakConnection(reset bool) {
	conn, _, err := http.NewResponseController(x.w).Hijack()
	if errors.Is(err, http.ErrNotSupported) {
		// HTTP/2: the connection carries other streams, so the fault breaks this stream alone.
		// ErrAbortHandler is net/http's way to do it (RST_STREAM); the server recovers it quietly.
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok && reset {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

func (x *exchange) finishReason() string {
	switch {
	case x.plan.toolCalls != nil:
		return "tool_calls"
	case x.plan.jsonPieces != nil && x.plan.cut:
		return "length"
	case x.plan.jsonPieces != nil:
		return "stop"
	}
	if x.plan.reasoning+x.plan.content >= x.maxTokens {
		return "length"
	}
	return "stop"
}

func (x *exchange) usageJSON() string {
	c := x.plan.reasoning + x.plan.content
	return fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d},"completion_tokens_details":{"reasoning_tokens":%d}}`,
		x.prompt, c, x.prompt+c, x.cached, x.plan.reasoning)
}

// stream answers with server-sent events, one token per chunk, each sent at its scheduled time:
// first token at admission + TTFT, then one every 1/TPS, all computed from the admission time (the
// request's arrival when a slot was free) so lateness never accumulates.
func (x *exchange) stream() {
	s, p := x.s, &x.plan
	rc := http.NewResponseController(x.w)
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
	start := x.admitted

	object, open := `"chat.completion.chunk"`, `"delta":`
	if x.kind == completionsEndpoint {
		object = `"text_completion"`
	}
	prefix := `data: {"id":"chatcmpl-` + x.id + `","object":` + object + `,"created":` + x.created + `,"model":` + x.model + `,"choices":[{"index":0,`
	buf := make([]byte, 0, 256)
	send := func(parts ...string) bool {
		buf = buf[:0]
		if s.cfg.SendTimes {
			buf = append(buf, ": sent_ns="...)
			buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
			buf = append(buf, '\n')
		}
		buf = append(buf, prefix...)
		for _, part := range parts {
			buf = append(buf, part...)
		}
		buf = append(buf, "}]}\n\n"...)
		if _, err := x.w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if x.kind == chatEndpoint && !send(open, `{"role":"assistant","content":""},"finish_reason":null`) {
		return
	}
	result := string(p.outcome)
	defer func() { s.metrics.requests.WithLabelValues(result).Inc() }()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	gap := float64(s.cfg.Gap())
	next := start.Add(x.firstTokenDelay())
	total := p.reasoning + p.content
	for i := range total {
		if !x.sleepUntil(timer, next) {
			result = "client_gone"
			return
		}
		if i == p.faultAt {
			switch p.outcome {
			case faultOutcome(FaultCut):
				x.breakConnection(false)
				return
			case faultOutcome(FaultReset):
				x.breakConnection(true)
				return
			case faultOutcome(FaultStall):
				x.stall()
				return
			case faultOutcome(FaultMalformed):
				buf = append(buf[:0], `data: {"id":"chatcmpl-`+x.id+`","choices":[{"index":0,"delta":{"content":" broken`...)
				buf = append(buf, "\n\n"...)
				x.w.Write(buf)
			}
		}
		var ok bool
		switch {
		case x.kind == completionsEndpoint:
			ok = send(`"text":"`, p.word(), `","logprobs":null,"finish_reason":null`)
		case i < p.reasoning:
			ok = send(open, `{"reasoning_content":"`, p.word(), `"},"finish_reason":null`)
		case p.toolDeltas != nil:
			ok = send(open, p.toolDeltas[i-p.reasoning], `,"finish_reason":null`)
		case p.jsonPieces != nil:
			ok = send(open, `{"content":`, jsonString(p.jsonPieces[i-p.reasoning]), `},"finish_reason":null`)
		default:
			word := p.word()
			ok = send(open, `{"content":"`, word, `"},"finish_reason":null`)
		}
		if !ok {
			result = "client_gone"
			return
		}
		s.metrics.lateness.record(time.Since(next))
		s.metrics.genTokens.add(1)
		if i == 0 {
			s.metrics.ttft.Observe(time.Since(x.arrival).Seconds())
		}
		next = next.Add(time.Duration(p.jittered(gap, s.cfg.Jitter)))
	}
	if x.kind == completionsEndpoint {
		send(`"text":"","logprobs":null,"finish_reason":"`, x.finishReason(), `"`)
	} else {
		send(open, `{},"finish_reason":"`, x.finishReason(), `"`)
	}
	if x.req.StreamOptions != nil && x.req.StreamOptions.IncludeUsage && !s.cfg.NoUsage {
		usage := `data: {"id":"chatcmpl-` + x.id + `","object":` + object + `,"created":` + x.created + `,"model":` + x.model + `,"choices":[],"usage":` + x.usageJSON() + "}\n\n"
		io.WriteString(x.w, usage)
	}
	if p.outcome != faultOutcome(FaultNoDone) {
		io.WriteString(x.w, "data: [DONE]\n\n")
	}
	rc.Flush()
}

// awaitWholeAnswer waits until a non-streamed answer of total tokens would have been generated, and
// plays the faults that end it without an answer (a cut, a reset, a stall); false when the request
// is over (result then says how, if the client left), true when the answer is to be written.
func (x *exchange) awaitWholeAnswer(total int, result *string) bool {
	s, p := x.s, &x.plan
	done := x.admitted.Add(x.firstTokenDelay())
	for i := 1; i < total; i++ {
		done = done.Add(time.Duration(p.jittered(float64(s.cfg.Gap()), s.cfg.Jitter)))
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	if !x.sleepUntil(timer, done) {
		*result = "client_gone"
		return false
	}
	switch p.outcome {
	case faultOutcome(FaultCut), faultOutcome(FaultReset):
		x.breakConnection(p.outcome == faultOutcome(FaultReset))
		return false
	case faultOutcome(FaultStall):
		x.stall()
		return false
	}
	return true
}

// complete answers a non-streaming request once the whole answer would have been generated.
func (x *exchange) complete() {
	s, p := x.s, &x.plan
	result := string(p.outcome)
	defer func() { s.metrics.requests.WithLabelValues(result).Inc() }()
	total := p.reasoning + p.content
	if !x.awaitWholeAnswer(total, &result) {
		return
	}
	if p.outcome == faultOutcome(FaultMalformed) {
		x.w.Header().Set("Content-Type", "application/json")
		io.WriteString(x.w, `{"id":"chatcmpl-`+x.id+`","choices":[{"index":0,"message":{"content":" broken`)
		return
	}
	var reasoning, content strings.Builder
	for i := range total {
		switch {
		case i < p.reasoning:
			reasoning.WriteString(p.word())
		case p.toolCalls != nil:
		case p.jsonPieces != nil:
			content.WriteString(p.jsonPieces[i-p.reasoning])
		default:
			content.WriteString(p.word())
		}
	}
	s.metrics.genTokens.add(total)
	s.metrics.ttft.Observe(time.Since(x.arrival).Seconds())
	var choice string
	if x.kind == completionsEndpoint {
		choice = fmt.Sprintf(`{"index":0,"text":%s,"logprobs":null,"finish_reason":"%s"}`, jsonString(content.String()), x.finishReason())
	} else {
		msg := `{"role":"assistant","content":` + jsonString(content.String())
		if p.toolCalls != nil {
			msg = `{"role":"assistant","content":null,"tool_calls":` + toolCallsJSON(p.toolCalls)
		}
		if p.reasoning > 0 {
			msg += `,"reasoning_content":` + jsonString(reasoning.String())
		}
		choice = fmt.Sprintf(`{"index":0,"message":%s},"finish_reason":"%s"}`, msg, x.finishReason())
	}
	object := "chat.completion"
	if x.kind == completionsEndpoint {
		object = "text_completion"
	}
	out := `{"id":"chatcmpl-` + x.id + `","object":"` + object + `","created":` + x.created + `,"model":` + x.model + `,"choices":[` + choice + `]`
	if !s.cfg.NoUsage {
		out += `,"usage":` + x.usageJSON()
	}
	x.w.Header().Set("Content-Type", "application/json")
	io.WriteString(x.w, out+"}\n")
}
