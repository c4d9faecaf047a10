package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// This file answers OpenAI's Responses API (POST /v1/responses) with the chat endpoint's model of a
// server: the request — its instructions, its input items, and the conversation a
// previous_response_id names — is read into the chat request the rest of the mock knows, so timing,
// the prefix cache (over the whole reconstructed conversation), tool calls and faults are chat's;
// only what goes on the wire is the Responses API's: its named events, usage and error shapes. A
// stored answer (store, true unless the request says false, as the reference has it) is kept with
// its conversation in a bounded store, so that a client may send only what is new.

// responsesStoreCap bounds the stored responses: past it the oldest is forgotten, and a request
// naming it gets previous_response_not_found, as a server that expired it would answer.
const responsesStoreCap = 20_000

// responsesHandler serves /v1/responses for one Server, with its store.
type responsesHandler struct {
	s     *Server
	mu    sync.Mutex
	store map[string][]message // a response's id → its conversation (instructions apart), its answer last
	order []string             // ids in the order stored, for eviction
	cap   int
	// seq makes every response's id unique: the plan, and so its random part, is the conversation's,
	// which a client-held and a server-held turn share.
	seq atomic.Uint64
}

func newResponsesHandler(s *Server) *responsesHandler {
	return &responsesHandler{s: s, store: map[string][]message{}, cap: responsesStoreCap}
}

// conversation is a stored response's conversation, or false.
func (h *responsesHandler) conversation(id string) ([]message, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.store[id]
	return c, ok
}

// keep stores a response's conversation, forgetting the oldest past the cap.
func (h *responsesHandler) keep(id string, conv []message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.store[id]; !dup {
		h.order = append(h.order, id)
	}
	h.store[id] = conv
	for len(h.order) > h.cap {
		delete(h.store, h.order[0])
		h.order = h.order[1:]
	}
}

// responsesRequest is the part of a Responses request the mock reads.
type responsesRequest struct {
	Model              string          `json:"model"`
	Instructions       *string         `json:"instructions"`
	Input              json.RawMessage `json:"input"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Stream             bool            `json:"stream"`
	Store              *bool           `json:"store"`
	PreviousResponseID string          `json:"previous_response_id"`
	IgnoreEOS          bool            `json:"ignore_eos"`
	Tools              []responsesTool `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// inputItem is one item of a Responses input: a message (its type "message" or absent), a
// function_call or a function_call_output.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// itemsText reads a message's content, input[i].content: a string, or parts whose text
// (input_text, output_text, text) is joined. segs gets the texts and the input_image parts in
// order (images.go).
func itemsText(raw json.RawMessage, i int, segs *segments) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if isJSONString(raw) && json.Unmarshal(raw, &s) == nil {
		segs.addText(s)
		return s, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL string `json:"image_url"`
		FileID   string `json:"file_id"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("input[%d].content: content must be a string or an array of content parts", i)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "input_image" {
			b.WriteString(p.Text)
			segs.addText(p.Text)
			continue
		}
		where := fmt.Sprintf("input[%d].content[%d]", i, j)
		if p.ImageURL == "" {
			return "", fmt.Errorf("%s: input_image needs image_url, a data URL (data:image/png;base64,<data>) or an http(s) URL (the mock has no Files API for file_id)", where)
		}
		segs.addImage(imageURLRef(where, p.ImageURL))
	}
	return b.String(), nil
}

// callsJSON is function calls as the mock lays them out in the prompt: the same for the calls a
// client sends back as items and for the calls the store kept, so that both modes of history
// tokenize alike.
func callsJSON(calls []inputItem) json.RawMessage {
	type call struct {
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	out := make([]call, len(calls))
	for i, c := range calls {
		out[i] = call{c.CallID, c.Name, c.Arguments}
	}
	b, _ := json.Marshal(out)
	return b
}

// messagesOf reads the input items as chat messages: a run of function_call items is one
// assistant message with those calls, a function_call_output a tool message.
func messagesOf(input json.RawMessage) ([]message, error) {
	var items []inputItem
	var text string
	if len(input) == 0 || string(input) == "null" {
		return nil, errors.New("input: Field required")
	}
	if json.Unmarshal(input, &text) == nil {
		return []message{{Role: "user", Content: json.RawMessage(jsonString(text))}}, nil
	}
	if err := json.Unmarshal(input, &items); err != nil {
		return nil, errors.New("input: accepted: a string or an array of input items")
	}
	var out []message
	var calls []inputItem
	flush := func() {
		if len(calls) > 0 {
			out = append(out, message{Role: "assistant", Content: json.RawMessage(`""`), ToolCalls: callsJSON(calls)})
			calls = nil
		}
	}
	for i, it := range items {
		switch it.Type {
		case "function_call":
			calls = append(calls, it)
			continue
		case "function_call_output":
			flush()
			var output string
			if json.Unmarshal(it.Output, &output) != nil {
				output = string(it.Output)
			}
			out = append(out, message{Role: "tool", Content: json.RawMessage(jsonString(output))})
		case "message", "":
			flush()
			switch it.Role {
			case "user", "assistant", "system", "developer":
			default:
				return nil, fmt.Errorf("input[%d].role: accepted: user, assistant, system or developer; found %q", i, it.Role)
			}
			var segs segments
			t, err := itemsText(it.Content, i, &segs)
			if err != nil {
				return nil, err
			}
			m := message{Role: it.Role, Content: json.RawMessage(jsonString(t))}
			if segs.images {
				m.parts = segs.done()
			}
			out = append(out, m)
		case "reasoning":
			flush() // the mock's reasoning is not part of its prompt
		default:
			return nil, fmt.Errorf("input[%d].type: accepted: message, function_call, function_call_output or reasoning; found %q", i, it.Type)
		}
	}
	flush()
	return out, nil
}

// chatRequest is the Responses request as the chat request the mock plans with: the instructions
// as the system message, then the stored conversation, then the new input.
func (m *responsesRequest) chatRequest(history []message, input []message) (request, error) {
	req := request{Model: m.Model, Stream: m.Stream, MaxTokens: m.MaxOutputTokens, IgnoreEOS: m.IgnoreEOS, ToolChoice: m.ToolChoice}
	if m.Instructions != nil && *m.Instructions != "" {
		req.Messages = append(req.Messages, message{Role: "system", Content: json.RawMessage(jsonString(*m.Instructions))})
	}
	req.Messages = append(req.Messages, history...)
	req.Messages = append(req.Messages, input...)
	for i, t := range m.Tools {
		if t.Type != "function" || t.Name == "" {
			return req, fmt.Errorf("tools[%d]: accepted: {\"type\": \"function\", \"name\": ...}", i)
		}
		var ct tool
		ct.Type, ct.Function.Name, ct.Function.Description, ct.Function.Parameters = "function", t.Name, t.Description, t.Parameters
		req.Tools = append(req.Tools, ct)
	}
	if len(m.ToolChoice) > 0 && m.ToolChoice[0] == '{' {
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(m.ToolChoice, &named) != nil || named.Name == "" {
			return req, errors.New(`tool_choice: accepted: auto, none, required or {"type": "function", "name": ...}`)
		}
		req.ToolChoice = json.RawMessage(`{"type":"function","function":{"name":` + jsonString(named.Name) + `}}`)
	}
	return req, nil
}

// responsesX is one Responses exchange: the chat exchange and what this API adds to it.
type responsesX struct {
	*exchange
	h     *responsesHandler
	rr    responsesRequest
	conv  []message // the conversation to store with the answer (instructions apart)
	store bool
}

// ServeHTTP answers POST /v1/responses.
func (h *responsesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	x := &responsesX{exchange: &exchange{s: s, w: w, r: r, kind: chatEndpoint, arrival: time.Now()}, h: h}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", "reading the body: "+err.Error(), "bad_request")
		return
	}
	if !s.withCPU(func() bool { return x.prepareResponses(body) }) {
		return
	}
	var ok bool
	if x.admitted, ok = s.admit(r, x.arrival); !ok {
		return
	}
	defer s.release()
	s.beginTimed()
	defer s.endTimed()
	x.id = fmt.Sprintf("%x%x", x.plan.rng.Uint64(), x.h.seq.Add(1))
	x.model = jsonString(x.req.Model)
	x.created = strconv.FormatInt(time.Now().Unix(), 10)
	if x.req.Stream {
		x.streamResponse()
	} else {
		x.completeResponse()
	}
}

// prepareResponses is prepare for a Responses request: the conversation (a previous_response_id
// the store does not hold is refused as OpenAI refuses it), the plan, the faults decided before
// admission, and the prefix-cache lookup over the whole conversation.
func (x *responsesX) prepareResponses(body []byte) bool {
	s, w := x.s, x.w
	bad := func(msg string) bool {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", msg, "bad_request")
		return false
	}
	if err := json.Unmarshal(body, &x.rr); err != nil {
		return bad("the body is not valid JSON: " + err.Error())
	}
	input, err := messagesOf(x.rr.Input)
	if err != nil {
		return bad(err.Error())
	}
	var history []message
	if id := x.rr.PreviousResponseID; id != "" {
		var ok bool
		if history, ok = x.h.conversation(id); !ok {
			s.metrics.requests.WithLabelValues("bad_request").Inc()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`,
				jsonString("Previous response with id '"+id+"' not found."))
			return false
		}
	}
	if x.req, err = x.rr.chatRequest(history, input); err != nil {
		return bad(err.Error())
	}
	x.store = x.rr.Store == nil || *x.rr.Store
	x.conv = append(append(make([]message, 0, len(history)+len(input)+1), history...), input...)
	if !s.cfg.servesModel(x.req.Model) {
		s.apiError(w, http.StatusNotFound, "invalid_request_error", "The model `"+x.req.Model+"` does not exist.", "model_not_found")
		return false
	}
	ids, err := x.promptTokens()
	if err != nil {
		return bad(err.Error())
	}
	if x.maxTokens, err = x.req.maxTokens(s.cfg.DefaultMaxTokens, s.cfg.MaxTokensLimit); err != nil {
		return bad(strings.ReplaceAll(err.Error(), "max_tokens", "max_output_tokens"))
	}
	// The plan is drawn from the conversation, not the body: the same turn held by the client (the
	// whole history in input, store false) or by the server (previous_response_id) gets the same
	// answer, so the two history modes play the same conversations and compare like for like.
	x.plan = s.newPlan(conversationKey(&x.req), &x.req, x.maxTokens)
	if err := s.planFeatures(&x.plan, &x.req, x.maxTokens); err != nil {
		return bad(err.Error())
	}
	switch x.plan.outcome {
	case outcomeError:
		const msg = "mock: injected internal server error (--error-rate)"
		if !x.req.Stream {
			s.apiError(w, http.StatusInternalServerError, "server_error", msg, string(outcomeError))
			return false
		}
		// Streamed, the API reports a failure as response.failed after 200: the case a client must
		// read from the stream.
		s.metrics.requests.WithLabelValues(string(outcomeError)).Inc()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "event: response.failed\ndata: "+`{"type":"response.failed","sequence_number":0,"response":{"id":"resp_failed","object":"response","status":"failed","error":{"code":"server_error","message":`+jsonString(msg)+`},"output":[]}}`+"\n\n")
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

// respID is the answer's response id.
func (x *responsesX) respID() string { return "resp_" + x.id }

// answered stores the conversation with the answer — its text, or its calls laid out as a client
// sends them back — when the request asked for it.
func (x *responsesX) answered(content string) {
	if !x.store {
		return
	}
	answer := message{Role: "assistant", Content: json.RawMessage(jsonString(content))}
	if calls := x.plan.toolCalls; calls != nil {
		items := make([]inputItem, len(calls))
		for i, c := range calls {
			items[i] = inputItem{CallID: c.id, Name: c.name, Arguments: c.arguments}
		}
		answer = message{Role: "assistant", Content: json.RawMessage(`""`), ToolCalls: callsJSON(items)}
	}
	x.h.keep(x.respID(), append(x.conv, answer))
}

// usage is the Responses usage: input_tokens counts the cached ones, as the reference has it.
func (x *responsesX) usage() string {
	c := x.plan.reasoning + x.plan.content
	return fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":%d},"total_tokens":%d}`,
		x.prompt, x.cached, c, x.plan.reasoning, x.prompt+c)
}

// status is the answer's status and its incomplete_details: cut at max_output_tokens is
// incomplete, as the reference answers it.
func (x *responsesX) status() (string, string) {
	if x.finishReason() == "length" {
		return "incomplete", `{"reason":"max_output_tokens"}`
	}
	return "completed", "null"
}

// responseObject is the response with its output items and, unless NoUsage, usage.
func (x *responsesX) responseObject(status, incomplete string, output []string) string {
	out := `{"id":"` + x.respID() + `","object":"response","created_at":` + x.created + `,"status":"` + status + `","model":` + x.model +
		`,"incomplete_details":` + incomplete + `,"output":[` + strings.Join(output, ",") + `]`
	if status != "in_progress" && !x.s.cfg.NoUsage {
		out += `,"usage":` + x.usage()
	}
	return out + `}`
}

// outputItems are the answer's output items, done: a reasoning item, then the message or the
// function calls.
func (x *responsesX) outputItems(reasoning, content string) []string {
	var items []string
	if reasoning != "" {
		items = append(items, `{"type":"reasoning","id":"rs_`+x.id+`","summary":[],"content":[{"type":"reasoning_text","text":`+jsonString(reasoning)+`}]}`)
	}
	if calls := x.plan.toolCalls; calls != nil {
		for i, c := range calls {
			items = append(items, `{"type":"function_call","id":"fc_`+x.id+strconv.Itoa(i)+`","call_id":`+jsonString(c.id)+`,"name":`+jsonString(c.name)+`,"arguments":`+jsonString(c.arguments)+`,"status":"completed"}`)
		}
	} else {
		items = append(items, `{"type":"message","id":"msg_`+x.id+`","status":"completed","role":"assistant","content":[{"type":"output_text","text":`+jsonString(content)+`,"annotations":[]}]}`)
	}
	return items
}

// streamResponse answers with the Responses API's events on the chat stream's schedule: one token
// per write at admission + TTFT, then one every 1/TPS. A reasoning item carries the reasoning
// tokens, then a message item the content, or one function_call item per call (its name the first
// token, its arguments' pieces as response.function_call_arguments.delta).
func (x *responsesX) streamResponse() {
	s, p := x.s, &x.plan
	rc := http.NewResponseController(x.w)
	hd := x.w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
	var buf []byte
	seq := 0
	event := func(name, fields string) {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, "\ndata: {\"type\":\""...)
		buf = append(buf, name...)
		buf = append(buf, `","sequence_number":`...)
		buf = strconv.AppendInt(buf, int64(seq), 10)
		buf = append(buf, fields...)
		buf = append(buf, "}\n\n"...)
		seq++
	}
	flush := func() bool {
		_, err := x.w.Write(buf)
		buf = buf[:0]
		return err == nil && rc.Flush() == nil
	}
	event("response.created", `,"response":`+x.responseObject("in_progress", "null", nil))
	event("response.in_progress", `,"response":`+x.responseObject("in_progress", "null", nil))
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
	var reasoning, content strings.Builder
	outIndex := -1
	itemID := ""
	sentTime := func() {
		if s.cfg.SendTimes {
			buf = append(buf, ": sent_ns="...)
			buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
			buf = append(buf, '\n')
		}
	}
	idx := func() string { return `,"output_index":` + strconv.Itoa(outIndex) }
	// closeItem ends the open item: its text's done events, and output_item.done.
	closeItem := func(done string) {
		if outIndex >= 0 && done != "" {
			event("response.output_item.done", idx()+`,"item":`+done)
		}
	}
	openItem := func(id, added string, timed bool) {
		outIndex++
		itemID = id
		if timed {
			sentTime()
		}
		event("response.output_item.added", idx()+`,"item":`+added)
	}
	call, piece := 0, -1 // the tool call being streamed, and its argument piece (-1: its header)
	var openDone string  // the open item as output_item.done shows it, once known
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
				buf = append(buf, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" broken\n\n"...)
			}
		}
		switch {
		case i < p.reasoning:
			if i == 0 {
				openItem("rs_"+x.id, `{"type":"reasoning","id":"rs_`+x.id+`","summary":[],"content":[]}`, false)
			}
			w := p.word()
			reasoning.WriteString(w)
			sentTime()
			event("response.reasoning_text.delta", `,"item_id":"`+itemID+`"`+idx()+`,"content_index":0,"delta":`+jsonString(w))
			if i == p.reasoning-1 {
				event("response.reasoning_text.done", `,"item_id":"`+itemID+`"`+idx()+`,"content_index":0,"text":`+jsonString(reasoning.String()))
				openDone = `{"type":"reasoning","id":"rs_` + x.id + `","summary":[],"content":[{"type":"reasoning_text","text":` + jsonString(reasoning.String()) + `}]}`
			}
		case p.toolCalls != nil:
			c := p.toolCalls[call]
			id := "fc_" + x.id + strconv.Itoa(call)
			if piece < 0 {
				closeItem(openDone)
				// The item's header is the call's first token (its name), as chat's first tool-call
				// chunk is.
				openItem(id, `{"type":"function_call","id":"`+id+`","call_id":`+jsonString(c.id)+`,"name":`+jsonString(c.name)+`,"arguments":"","status":"in_progress"}`, true)
			} else {
				sentTime()
				event("response.function_call_arguments.delta", `,"item_id":"`+id+`"`+idx()+`,"delta":`+jsonString(c.pieces[piece]))
			}
			if piece++; piece == len(c.pieces) {
				event("response.function_call_arguments.done", `,"item_id":"`+id+`"`+idx()+`,"arguments":`+jsonString(c.arguments))
				openDone = `{"type":"function_call","id":"` + id + `","call_id":` + jsonString(c.id) + `,"name":` + jsonString(c.name) + `,"arguments":` + jsonString(c.arguments) + `,"status":"completed"}`
				call, piece = call+1, -1
			}
		default:
			if i == p.reasoning {
				closeItem(openDone)
				openItem("msg_"+x.id, `{"type":"message","id":"msg_`+x.id+`","status":"in_progress","role":"assistant","content":[]}`, false)
				event("response.content_part.added", `,"item_id":"`+itemID+`"`+idx()+`,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`)
			}
			w := p.word()
			content.WriteString(w)
			sentTime()
			event("response.output_text.delta", `,"item_id":"`+itemID+`"`+idx()+`,"content_index":0,"delta":`+jsonString(w))
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
	if p.toolCalls == nil && p.content > 0 {
		text := jsonString(content.String())
		event("response.output_text.done", `,"item_id":"`+itemID+`"`+idx()+`,"content_index":0,"text":`+text)
		event("response.content_part.done", `,"item_id":"`+itemID+`"`+idx()+`,"content_index":0,"part":{"type":"output_text","text":`+text+`,"annotations":[]}`)
		openDone = `{"type":"message","id":"msg_` + x.id + `","status":"completed","role":"assistant","content":[{"type":"output_text","text":` + text + `,"annotations":[]}]}`
	}
	closeItem(openDone)
	status, incomplete := x.status()
	x.answered(content.String())
	if p.outcome != faultOutcome(FaultNoDone) {
		event("response."+status, `,"response":`+x.responseObject(status, incomplete, x.outputItems(reasoning.String(), content.String())))
	}
	flush()
}

// completeResponse answers a non-streamed request once the whole answer would have been generated:
// one response object with its output items.
func (x *responsesX) completeResponse() {
	s, p := x.s, &x.plan
	result := string(p.outcome)
	defer func() { s.metrics.requests.WithLabelValues(result).Inc() }()
	total := p.reasoning + p.content
	if !x.awaitWholeAnswer(total, &result) {
		return
	}
	if p.outcome == faultOutcome(FaultMalformed) {
		x.w.Header().Set("Content-Type", "application/json")
		io.WriteString(x.w, `{"id":"`+x.respID()+`","object":"response","output":[{"type":"message","content":[{"type":"output_text","text":" broken`)
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
	status, incomplete := x.status()
	x.answered(content.String())
	x.w.Header().Set("Content-Type", "application/json")
	io.WriteString(x.w, x.responseObject(status, incomplete, x.outputItems(reasoning.String(), content.String()))+"\n")
}

// conversationKey is what a Responses request asks, whichever way its history came: the model, the
// limit, the tools, and each message's role, text and tool calls (compacted).
func conversationKey(req *request) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\x00%v\x00%v\x00%d\x00", req.Model, deref(req.MaxTokens), deref(req.MaxCompletionTokens), len(req.Tools))
	for _, t := range req.Tools {
		b.WriteString(t.Function.Name)
		b.WriteByte(0)
	}
	for _, m := range req.Messages {
		text, _ := m.text()
		b.WriteString(m.Role)
		b.WriteByte(0)
		b.WriteString(text)
		b.WriteByte(0)
		m.imageKey(&b)
		if len(m.ToolCalls) > 0 {
			json.Compact(&b, m.ToolCalls)
		}
		b.WriteByte(0)
	}
	return b.Bytes()
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
