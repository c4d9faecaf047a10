package mock

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file answers Anthropic's Messages API (POST /v1/messages) with the chat endpoint's model of
// a server: the request is read into the chat request the rest of the mock knows (the system
// prompt as the first message, tool_use and tool_result blocks as the calls and results a chat
// template would lay out), so timing, the prefix cache, tool calls and faults are chat's; only
// what goes on the wire is the Messages API's: its named events, usage counters and error shape.

// messagesRequest is the part of a Messages request the mock reads.
type messagesRequest struct {
	Model     string            `json:"model"`
	System    json.RawMessage   `json:"system"`
	Messages  []messagesMessage `json:"messages"`
	MaxTokens *int              `json:"max_tokens"`
	Stream    bool              `json:"stream"`
	IgnoreEOS bool              `json:"ignore_eos"`
	Tools     []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
}

type messagesMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentBlock is one block of a Messages content list (or of a tool_result's content).
type contentBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"` // a tool_result's: a string or text blocks
	Source  *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"` // an image's
}

// blocksText reads a content (the system, a message's, a tool_result's) named where: a string, or
// blocks whose text (a tool_result's content included) is joined; tool_use blocks are returned
// apart, as the calls a chat template would render. segs gets the texts and the image blocks in
// order (images.go).
func blocksText(raw json.RawMessage, where string, segs *segments) (text string, toolUses []contentBlock, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if isJSONString(raw) && json.Unmarshal(raw, &text) == nil {
		segs.addText(text)
		return text, nil, nil
	}
	var blocks []contentBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, fmt.Errorf("%s: content must be a string or an array of content blocks", where)
	}
	var b strings.Builder
	for j, bl := range blocks {
		switch bl.Type {
		case "text":
			b.WriteString(bl.Text)
			segs.addText(bl.Text)
		case "tool_result":
			inner, _, err := blocksText(bl.Content, fmt.Sprintf("%s.%d.content", where, j), segs)
			if err != nil {
				return "", nil, err
			}
			b.WriteString(inner)
		case "tool_use":
			toolUses = append(toolUses, bl)
		case "image":
			ref, err := messagesImage(bl, fmt.Sprintf("%s.%d", where, j))
			if err != nil {
				return "", nil, err
			}
			segs.addImage(ref)
		}
	}
	return b.String(), toolUses, nil
}

// messagesImage reads an image block's source: base64 data of one of the media types Anthropic
// takes, or a URL.
func messagesImage(bl contentBlock, where string) (*imageRef, error) {
	src := bl.Source
	switch {
	case src == nil:
		return nil, fmt.Errorf("%s.source: Field required", where)
	case src.Type == "base64":
		switch src.MediaType {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
			return imageBase64Ref(where, src.MediaType, src.Data), nil
		}
		return nil, fmt.Errorf("%s.source.media_type: accepted: image/jpeg, image/png, image/gif or image/webp; found %q", where, src.MediaType)
	case src.Type == "url" && src.URL != "":
		return imageURLRef(where, src.URL), nil
	}
	return nil, fmt.Errorf("%s.source.type: accepted: base64 (with media_type and data) or url (with url); found %q", where, src.Type)
}

// chatRequest is the Messages request as the chat request the mock plans with.
func (m *messagesRequest) chatRequest() (request, error) {
	req := request{Model: m.Model, Stream: m.Stream, MaxTokens: m.MaxTokens, IgnoreEOS: m.IgnoreEOS}
	// The system takes text blocks, as Anthropic's does: an image block there is checked, not sent.
	system, _, err := blocksText(m.System, "system", &segments{})
	if err != nil {
		return req, err
	}
	if system != "" {
		req.Messages = append(req.Messages, message{Role: "system", Content: json.RawMessage(jsonString(system))})
	}
	for i, msg := range m.Messages {
		if msg.Role != "user" && msg.Role != "assistant" {
			return req, fmt.Errorf("messages.%d.role: accepted: user or assistant; found %q", i, msg.Role)
		}
		var segs segments
		text, uses, err := blocksText(msg.Content, fmt.Sprintf("messages.%d.content", i), &segs)
		if err != nil {
			return req, err
		}
		cm := message{Role: msg.Role, Content: json.RawMessage(jsonString(text))}
		if segs.images {
			cm.parts = segs.done()
		}
		if len(uses) > 0 {
			cm.ToolCalls, _ = json.Marshal(uses)
		}
		req.Messages = append(req.Messages, cm)
	}
	for _, t := range m.Tools {
		var ct tool
		ct.Type, ct.Function.Name, ct.Function.Description, ct.Function.Parameters = "function", t.Name, t.Description, t.InputSchema
		req.Tools = append(req.Tools, ct)
	}
	if c := m.ToolChoice; c != nil {
		switch c.Type {
		case "auto", "none":
			req.ToolChoice = json.RawMessage(jsonString(c.Type))
		case "any":
			req.ToolChoice = json.RawMessage(`"required"`)
		case "tool":
			req.ToolChoice = json.RawMessage(`{"type":"function","function":{"name":` + jsonString(c.Name) + `}}`)
		default:
			return req, fmt.Errorf("tool_choice.type: accepted: auto, any, tool or none; found %q", c.Type)
		}
	}
	return req, nil
}

// messagesError writes the Messages API's error body with the given status.
func (s *Server) messagesError(w http.ResponseWriter, status int, kind, msg, out string) {
	s.metrics.requests.WithLabelValues(out).Inc()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%s,"message":%s}}`, jsonString(kind), jsonString(msg))
}

// handleMessages answers POST /v1/messages.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	x := &exchange{s: s, w: w, r: r, kind: chatEndpoint, arrival: time.Now()}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.messagesError(w, http.StatusBadRequest, "invalid_request_error", "reading the body: "+err.Error(), "bad_request")
		return
	}
	if !s.withCPU(func() bool { return x.prepareMessages(body) }) {
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
	if x.req.Stream {
		x.streamMessages()
	} else {
		x.completeMessage()
	}
}

// prepareMessages is prepare for a Messages request: its checks (the anthropic-version header and
// max_tokens are required, as Anthropic's API requires them), the plan, the faults decided before
// admission in the API's error shapes, and the prefix-cache lookup.
func (x *exchange) prepareMessages(body []byte) bool {
	s, w := x.s, x.w
	bad := func(msg string) bool {
		s.messagesError(w, http.StatusBadRequest, "invalid_request_error", msg, "bad_request")
		return false
	}
	if x.r.Header.Get("anthropic-version") == "" {
		return bad("anthropic-version: header is required")
	}
	var mr messagesRequest
	if err := json.Unmarshal(body, &mr); err != nil {
		return bad("the body is not valid JSON: " + err.Error())
	}
	if mr.MaxTokens == nil {
		return bad("max_tokens: Field required")
	}
	if len(mr.Messages) == 0 {
		return bad("messages: at least one message is required")
	}
	var err error
	if x.req, err = mr.chatRequest(); err != nil {
		return bad(err.Error())
	}
	if !s.cfg.servesModel(x.req.Model) {
		s.messagesError(w, http.StatusNotFound, "not_found_error", "model: "+x.req.Model, "model_not_found")
		return false
	}
	ids, err := x.promptTokens()
	if err != nil {
		return bad(err.Error())
	}
	if x.maxTokens, err = x.req.maxTokens(s.cfg.DefaultMaxTokens, s.cfg.MaxTokensLimit); err != nil {
		return bad(err.Error())
	}
	x.plan = s.newPlan(body, &x.req, x.maxTokens)
	if err := s.planFeatures(&x.plan, &x.req, x.maxTokens); err != nil {
		return bad(err.Error())
	}
	switch x.plan.outcome {
	case outcomeError:
		const msg = "mock: injected internal server error (--error-rate)"
		if !x.req.Stream {
			s.messagesError(w, http.StatusInternalServerError, "api_error", msg, string(outcomeError))
			return false
		}
		// Streamed, the API reports a failure as an error event after 200 (an overloaded server's
		// 529 becomes one): the case a client must read from the stream.
		s.metrics.requests.WithLabelValues(string(outcomeError)).Inc()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `event: error`+"\n"+`data: {"type":"error","error":{"type":"api_error","message":`+jsonString(msg)+"}}\n\n")
		return false
	case outcomeRateLimited:
		w.Header().Set("Retry-After", strconv.Itoa(int(s.cfg.RetryAfter.Round(time.Second)/time.Second)))
		s.messagesError(w, http.StatusTooManyRequests, "rate_limit_error", "mock: injected rate limit (--rate-limit-rate)", string(outcomeRateLimited))
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

// stopReason is the answer's finish reason in the Messages API's words.
func (x *exchange) stopReason() string {
	switch x.finishReason() {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	}
	return "end_turn"
}

// messagesUsage is the usage the mock reports: its prefix cache's hit as cache_read_input_tokens,
// the rest of the prompt as input_tokens (it writes no cache on request: cache_creation 0); nil
// with NoUsage.
func (x *exchange) messagesUsage(output int) string {
	return `{"input_tokens":` + strconv.Itoa(x.prompt-x.cached) + `,"cache_creation_input_tokens":0,"cache_read_input_tokens":` +
		strconv.Itoa(x.cached) + `,"output_tokens":` + strconv.Itoa(output) + `}`
}

// pingEvery is how many tokens apart the stream carries a ping event, as Anthropic's streams carry
// them now and then; a reader must skip them.
const pingEvery = 16

// streamMessages answers with the Messages API's events on the chat stream's schedule: one token
// per write at admission + TTFT, then one every 1/TPS. A thinking block carries the reasoning
// tokens, then a text block the content, or one tool_use block per call (its name the first
// token, its input's pieces as input_json_delta).
func (x *exchange) streamMessages() {
	s, p := x.s, &x.plan
	rc := http.NewResponseController(x.w)
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
	var buf []byte
	event := func(name, data string) {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, "\ndata: "...)
		buf = append(buf, data...)
		buf = append(buf, "\n\n"...)
	}
	flush := func() bool {
		_, err := x.w.Write(buf)
		buf = buf[:0]
		return err == nil && rc.Flush() == nil
	}
	usage := ""
	if !s.cfg.NoUsage {
		usage = `,"usage":` + x.messagesUsage(1)
	}
	event("message_start", `{"type":"message_start","message":{"id":"msg_`+x.id+`","type":"message","role":"assistant","content":[],"model":`+x.model+`,"stop_reason":null,"stop_sequence":null`+usage+`}}`)
	event("ping", `{"type":"ping"}`)
	if !flush() {
		return
	}
	result := string(p.outcome)
	defer func() { s.metrics.requests.WithLabelValues(result).Inc() }()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	gap := float64(s.cfg.Gap())
	next := x.admitted.Add(x.firstTokenDelay())
	total := p.reasoning + p.content
	block, open := -1, false // the current content block's index; whether it is open
	sentTime := func() {
		if s.cfg.SendTimes {
			buf = append(buf, ": sent_ns="...)
			buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
			buf = append(buf, '\n')
		}
	}
	// startBlock closes the open block and opens the next; timed: its start is the token (a
	// tool_use's name), so the send time goes on it.
	startBlock := func(data string, timed bool) {
		if open {
			event("content_block_stop", `{"type":"content_block_stop","index":`+strconv.Itoa(block)+`}`)
		}
		block++
		open = true
		if timed {
			sentTime()
		}
		event("content_block_start", `{"type":"content_block_start","index":`+strconv.Itoa(block)+`,"content_block":`+data+`}`)
	}
	delta := func(data string) {
		sentTime()
		event("content_block_delta", `{"type":"content_block_delta","index":`+strconv.Itoa(block)+`,"delta":`+data+`}`)
	}
	call, piece := 0, -1 // the tool call being streamed, and its argument piece (-1: its header)
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
				buf = append(buf, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" broken\n\n"...)
			}
		}
		switch {
		case i < p.reasoning:
			if i == 0 {
				startBlock(`{"type":"thinking","thinking":""}`, false)
			}
			delta(`{"type":"thinking_delta","thinking":"` + p.word() + `"}`)
		case p.toolCalls != nil:
			c := p.toolCalls[call]
			if piece < 0 {
				// The header is the call's first token (its name), as chat's first tool-call chunk is.
				startBlock(`{"type":"tool_use","id":`+jsonString("toolu_"+strings.TrimPrefix(c.id, "call_"))+`,"name":`+jsonString(c.name)+`,"input":{}}`, true)
			} else {
				delta(`{"type":"input_json_delta","partial_json":` + jsonString(c.pieces[piece]) + `}`)
			}
			if piece++; piece == len(c.pieces) {
				call, piece = call+1, -1
			}
		default:
			if i == p.reasoning {
				startBlock(`{"type":"text","text":""}`, false)
			}
			delta(`{"type":"text_delta","text":"` + p.word() + `"}`)
		}
		if (i+1)%pingEvery == 0 {
			event("ping", `{"type":"ping"}`)
		}
		if !flush() {
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
	if open {
		event("content_block_stop", `{"type":"content_block_stop","index":`+strconv.Itoa(block)+`}`)
	}
	usage = ""
	if !s.cfg.NoUsage {
		usage = `,"usage":{"output_tokens":` + strconv.Itoa(total) + `}`
	}
	event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+x.stopReason()+`","stop_sequence":null}`+usage+`}`)
	if p.outcome != faultOutcome(FaultNoDone) {
		event("message_stop", `{"type":"message_stop"}`)
	}
	flush()
}

// completeMessage answers a non-streamed request once the whole answer would have been generated:
// one message with a thinking block, then a text block or the tool_use blocks.
func (x *exchange) completeMessage() {
	s, p := x.s, &x.plan
	result := string(p.outcome)
	defer func() { s.metrics.requests.WithLabelValues(result).Inc() }()
	total := p.reasoning + p.content
	if !x.awaitWholeAnswer(total, &result) {
		return
	}
	if p.outcome == faultOutcome(FaultMalformed) {
		x.w.Header().Set("Content-Type", "application/json")
		io.WriteString(x.w, `{"id":"msg_`+x.id+`","type":"message","content":[{"type":"text","text":" broken`)
		return
	}
	var reasoning, content strings.Builder
	for i := range total {
		switch {
		case i < p.reasoning:
			reasoning.WriteString(p.word())
		case p.toolCalls != nil:
		default:
			content.WriteString(p.word())
		}
	}
	s.metrics.genTokens.add(total)
	s.metrics.ttft.Observe(time.Since(x.arrival).Seconds())
	var blocks []string
	if p.reasoning > 0 {
		blocks = append(blocks, `{"type":"thinking","thinking":`+jsonString(reasoning.String())+`,"signature":""}`)
	}
	if p.toolCalls != nil {
		for _, c := range p.toolCalls {
			blocks = append(blocks, `{"type":"tool_use","id":`+jsonString("toolu_"+strings.TrimPrefix(c.id, "call_"))+`,"name":`+jsonString(c.name)+`,"input":`+c.arguments+`}`)
		}
	} else {
		blocks = append(blocks, `{"type":"text","text":`+jsonString(content.String())+`}`)
	}
	out := `{"id":"msg_` + x.id + `","type":"message","role":"assistant","model":` + x.model + `,"content":[` + strings.Join(blocks, ",") +
		`],"stop_reason":"` + x.stopReason() + `","stop_sequence":null`
	if !s.cfg.NoUsage {
		out += `,"usage":` + x.messagesUsage(total)
	}
	x.w.Header().Set("Content-Type", "application/json")
	io.WriteString(x.w, out+"}\n")
}
