package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"time"

	"github.com/plload/plload/engine/h1client"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/protocol"
	"github.com/plload/plload/workload"
)

// sessionStart is one session to play: its plan, whether the pool had wrapped around to it, when
// the schedule (or the slot) wanted it, and whether the caller already holds its first request's
// in-flight slot (the open-loop dispatcher takes it before starting the session).
type sessionStart struct {
	sessionPick
	scheduled time.Time
	slotHeld  bool
	// prepared: an open-loop arrival started ahead of its time (dispatchPrepared); nil otherwise.
	prepared *preparedStart
}

// session is a session in progress: its record, the history sent so far and the times its next turn
// is due by.
type session struct {
	// pending is the next request, built ahead of its time (nil: built when it goes); slotWait the
	// wait for its in-flight slot, for its record.
	pending  *pendingBody
	slotWait metrics.Opt[int64]
	sr       *metrics.SessionRecord
	history  []protocol.Message
	isl      int
	persona  metrics.Opt[int]
	recorded bool
	// intended is the turn's intended send time; due the trace's own time of the turn, for turns due
	// AfterPrevious; lastEnd the previous answer's end.
	intended, due, lastEnd time.Time
	// model is the model this session asks for ("": target.model); ordinal its global ordinal,
	// which seeds its tool results.
	model   string
	ordinal int
	// previous is what the server holds of this session's conversation: its last answer's id and
	// the history messages that answer stands for (target.history: server; Body ignores it
	// otherwise). The zero value, before an answer with an id, sends the whole history.
	previous protocol.Previous
}

// runSession plays one session from the pool: each turn waits for its intended send time (the
// previous answer's end plus think time), sends the whole history with the new user message, and
// adds the answer exactly as streamed. The session ends at its last turn, at its first failed
// request (a user whose message failed does not carry on as if answered), or when the stage stops
// issuing. It returns the session's last exchange (nil when it sent nothing), for the slot's backoff.
func (s *stageRun) runSession(issueCtx, reqCtx context.Context, st sessionStart) (last *exchange) {
	turns := s.pool.Cursor(st.index)
	ss := s.newSession(st)
	defer func() {
		if st.slotHeld && ss.sr.Requests == 0 {
			s.releaseSlot() // the first request never went: give its slot back
		}
		if ss.sr.Requests == 0 && ss.sr.Outcome == metrics.SessionStageEnd {
			return // the stage ended before this slot's next session began: it never existed
		}
		if !ss.lastEnd.IsZero() {
			ss.sr.EndNs = s.clock.ns(ss.lastEnd)
		}
		s.sessions.Write(ss.sr)
	}()
	for k := 0; ; k++ {
		// A synthetic turn is drawn, its text written, before the wait (the think time, from the
		// second turn on), not between the credit and the send: 7 µs for a 40-token question, 160
		// µs with a 1,000-token document.
		turn, text, ok := turns.Next()
		if !ok {
			break
		}
		if k == 0 && st.reused && s.pool.NoncesRepeats() {
			var n int
			text, n = s.repeatNonce(ss, text, int(turn.UserTokens))
			turn.UserTokens = int32(n)
		}
		ss.setIntended(k, turn)
		if k == 0 && st.prepared != nil {
			// Started ahead of its time: the request is built now, so when it is due only its slot
			// and its write remain.
			s.prepareTurn(ss, turn, text)
			expected := func() {}
			if time.Until(st.scheduled) > 0 { // ahead of its time: its connection can be ready too
				if done := s.expectConn(issueCtx); done != nil {
					expected = done
				}
			}
			due := s.awaitDue(issueCtx, &st, ss)
			expected() // due, it takes a pooled connection as any request does; or it will never go
			if !due {
				return last
			}
		}
		// A first request whose slot the dispatcher took is due and goes, even when the stage stopped
		// issuing a moment after: the dispatcher counted it as started.
		if !(k == 0 && st.slotHeld) && (!sleepUntil(issueCtx, ss.intended) || !s.acquireSlotTimed(issueCtx, ss)) {
			ss.sr.Outcome = metrics.SessionStageEnd
			return last
		}
		if !s.takeRequest() { // taken at the send, so every request taken goes
			if !(k == 0 && st.slotHeld) {
				s.releaseSlot() // the first one's held slot goes back when the session ends
			}
			ss.sr.Outcome = metrics.SessionStageEnd
			return last
		}
		credit := time.Now()
		s.markStart(credit)
		if k == 0 {
			if live := s.cfg.Live; live != nil {
				live.SessionOpened()
				defer live.SessionClosed()
			}
			s.counts.sessions.Add(1)
			if st.reused {
				s.counts.reused.Add(1)
			}
			ss.sr.StartNs = s.clock.ns(credit)
			lag := metrics.Ms(int64(credit.Sub(st.scheduled)))
			ss.sr.StartLagMs = &lag
			if st.prepared != nil {
				// Arrivals due at one instant (a trace's burst) were woken together: let the others
				// issue theirs before this one's connection and write take the core, so that a burst
				// is issued when due and its writes follow one another, as they would on any wire.
				runtime.Gosched()
			}
		}
		ex := onItsOwnStack(func() *exchange { return s.sendTurn(reqCtx, ss, k, turn, text, credit) })
		s.releaseSlot()
		last = ex // the slot's backoff reads it: without it a dead target is a flood
		// An agent's answer with tool calls is followed at once by the tool results and the
		// next request, round after round (docs/scenario.md).
		for round := 1; ex.ok() && len(ex.calls) > 0; round++ {
			if ss.recorded && turn.Recorded != nil && len(turn.Recorded.Messages) > 0 {
				break // the file's own answer stands in for the server's
			}
			ss.addToolResults(ex, s.cfg.Workload, k, round, s.cfg.Scenario.Tokenizer().Count)
			if round > s.cfg.Workload.MaxToolRounds() || !s.acquireSlotTimed(issueCtx, ss) {
				ex = nil // the user's turn ends on its tool results: no answer to add
				break
			}
			if !s.takeRequest() {
				s.releaseSlot()
				ex = nil
				break
			}
			ex = onItsOwnStack(func() *exchange { return s.sendRequest(reqCtx, ss, k, round, turn, time.Now(), metrics.Opt[int64]{}) })
			s.releaseSlot()
			last = ex
		}
		switch {
		case ex == nil:
			continue
		case ex.rec.WasCancelled:
			ss.sr.Outcome = metrics.SessionCancelled
			return last
		case ex.rec.Error != nil:
			ss.sr.Outcome = metrics.SessionError
			return last
		}
		ss.addAnswer(turn, ex, s.cfg.Scenario.Tokenizer().Count)
		// Answered: under history drop its images are a note from now on, so a thinking session
		// holds none (the next turn would drop them too, but only after its think time).
		s.dropImages(ss)
	}
	return last
}

// onItsOwnStack runs a request (send) on a goroutine of its own and waits for its exchange. Streaming
// an answer grows a goroutine's stack to 8–16 KiB (HTTP, SSE, JSON, the record), and the collector
// only halves a stack once per cycle: a session's goroutine that streamed its turns itself kept that
// stack through every think time, 13.7 KiB a session of the 42 KiB a thinking session cost
// (bench/README.md's third pass). The request's goroutine ends with its answer and its stack goes back to the runtime's cache
// for the next one, so a thinking session holds only runSession's few frames. The hand-off comes once
// per request, between its credit (stamped before) and its send (stamped after, on its goroutine, as
// are its chunks and its end): a goroutine's start, not a scheduler wait, sits in credit → send.
func onItsOwnStack(send func() *exchange) *exchange {
	done := make(chan *exchange, 1)
	go func() { done <- send() }()
	return <-done
}

// sessionRecord starts the session's sessions.jsonl line (a completed session until it ends
// otherwise).
func (p sessionPick) sessionRecord(scheduledNs int64) *metrics.SessionRecord {
	sr := &metrics.SessionRecord{ConversationID: p.conversationID(), XCorrelationID: newUUID(), Persona: p.plan.Persona,
		ScheduledNs: scheduledNs, PlannedTurns: p.plan.PlannedTurns(), Reused: p.reused, Outcome: metrics.SessionCompleted}
	if p.reused {
		i := p.index
		sr.DatasetSession = &i
	}
	return sr
}

func (s *stageRun) newSession(st sessionStart) *session {
	sp := st.plan
	ss := &session{
		sr: st.sessionRecord(s.clock.ns(st.scheduled)),
		// Grown as turns are answered: a thinking session holds only the history it has (bench/README.md's third pass:
		// room for every turn from the start was 7 KiB a session in a 50-turn chat).
		history:  make([]protocol.Message, 0, min(1+2*sp.PlannedTurns(), 8)),
		recorded: s.cfg.Scenario.Workload != nil && s.cfg.Scenario.Workload.Dataset != nil && s.cfg.Scenario.Workload.Dataset.History == "recorded",
		intended: st.scheduled, due: st.scheduled,
		ordinal: st.ordinal, isl: s.body.ToolsTokens(),
	}
	if len(s.cfg.Scenario.Target.Models) > 0 {
		ss.model = s.cfg.Workload.ModelFor(st.ordinal)
	}
	if sp.Persona >= 0 { // a dataset's conversation may have no system prompt
		p := s.cfg.Workload.Personas[sp.Persona]
		ss.history = append(ss.history, protocol.NewMessage("system", p.SystemPrompt, p.Tokens))
		ss.isl, ss.persona = ss.isl+p.Tokens, metrics.Some(sp.Persona)
	}
	return ss
}

// datasetSession is the pool entry a reused session replays, for its records' metadata.
func (ss *session) datasetSession() metrics.Opt[int] {
	if ss.sr.DatasetSession == nil {
		return metrics.Opt[int]{}
	}
	return metrics.Some(*ss.sr.DatasetSession)
}

// setIntended sets turn k's intended send time.
func (ss *session) setIntended(k int, turn workload.Turn) {
	switch {
	case k > 0 && turn.AfterPrevious > 0:
		// A trace's own turn times, kept from the session's start (a late turn does not push the
		// later ones back), and never before the previous answer: then right after it, the lag
		// showing in intended_start_ns versus request_start_ns.
		ss.due = ss.due.Add(turn.AfterPrevious)
		ss.intended = ss.due
		if ss.intended.Before(ss.lastEnd) {
			ss.intended = ss.lastEnd
		}
	case k > 0:
		ss.intended = ss.lastEnd.Add(turn.ThinkBefore)
	}
}

// sendTurn sends turn k, whose user message is text (credit issued at credit), and writes its record.
// A retrieval stage's turn is its one request; a RAG turn first runs its steps, whose documents
// join the question.
func (s *stageRun) sendTurn(reqCtx context.Context, ss *session, k int, turn workload.Turn, text string, credit time.Time) *exchange {
	if s.retrieval != nil {
		return s.sendRetrieval(reqCtx, ss, k, &retrievalCall{target: s.retrieval, query: retrievalQuery(turn.RetrievalRequest())}, int(turn.UserTokens), credit)
	}
	tokens, turnStart := int(turn.UserTokens), metrics.Opt[int64]{}
	if turn.RetrievalRequest() != nil && len(s.ragSteps) > 0 {
		message, n, started, last, ok := s.ragTurn(reqCtx, ss, k, turn, text, credit)
		if !ok {
			return last
		}
		text, tokens, turnStart, credit = message, n, metrics.Some(started), time.Now()
	}
	if ss.pending == nil { // a prepared turn's message is in the history already
		s.dropImages(ss)
		ss.history = append(ss.history, protocol.NewUserMessageWithImages(text, tokens, turn.Images()))
		ss.isl += tokens
	}
	ex := s.sendRequest(reqCtx, ss, k, 0, turn, credit, turnStart)
	return ex
}

// prepareTurn adds turn's user message to the history and builds its request's body ahead of its
// time, under the request id it will go with.
func (s *stageRun) prepareTurn(ss *session, turn workload.Turn, text string) {
	if s.retrieval != nil || turn.RetrievalRequest() != nil && len(s.ragSteps) > 0 {
		return // no chat body: a retrieval request, or a RAG turn's message, known after its steps
	}
	s.dropImages(ss)
	ss.history = append(ss.history, protocol.NewUserMessageWithImages(text, int(turn.UserTokens), turn.Images()))
	ss.isl += int(turn.UserTokens)
	id := newUUID()
	ss.pending = &pendingBody{id: id,
		body: s.body.Build(nil, ss.model, withNonce(ss.history, s.cfg.Scenario.NonceAt(), id), int(turn.MaxOutputTokens), turn.ExactOutput)}
}

// expectConn tells the connection pool that a prepared arrival's request is to go soon, so that the
// pool opens a connection for it ahead when it has none idle (a burst of 16 arrivals at one instant
// would dial 16 when due); at most the stage's in-flight cap of connections. It returns the func
// that ends the expectation; nil where the transport keeps no such pool (net/http's, for https://
// targets) or the stage has no cap.
func (s *stageRun) expectConn(ctx context.Context) func() {
	tr, ok := s.client.Transport.(*h1client.Transport)
	if !ok || s.connAddr == "" || s.slots == nil || s.cfg.NoConnAhead {
		return nil
	}
	return tr.Expect(ctx, s.connAddr, cap(s.slots))
}

// awaitDue waits, for a prepared first turn, until the dispatcher says it is due (never early), then for its in-flight
// slot; true with the slot held. The wait for the slot, and the dispatcher's wait for a place among
// the prepared past the due time, are the request's slot wait. false when the stage stopped issuing
// first: an arrival that was due by then never started, and is recorded so.
func (s *stageRun) awaitDue(issueCtx context.Context, st *sessionStart, ss *session) bool {
	defer st.prepared.release()
	select {
	case <-st.prepared.due:
	case <-issueCtx.Done():
	}
	if issueCtx.Err() == nil {
		ready := time.Now()
		if s.acquireSlot(issueCtx) {
			st.slotHeld = true
			ss.slotWait = metrics.Some(int64(time.Since(ready) + st.prepared.tokenLate))
			return true
		}
	}
	ss.pending = nil
	ss.sr.Outcome = metrics.SessionStageEnd // no session record of its own: never started, or never due
	if !ss.intended.After(time.Now()) {
		s.neverStarted(st.sessionPick, st.scheduled)
	}
	return false
}

// acquireSlotTimed is acquireSlot that keeps the wait as the next request's slot wait.
func (s *stageRun) acquireSlotTimed(ctx context.Context, ss *session) bool {
	ask := time.Now()
	if !s.acquireSlot(ctx) {
		return false
	}
	ss.slotWait = metrics.Some(int64(time.Since(ask)))
	return true
}

// pendingBody is a request built ahead of its time: its id and body bytes.
type pendingBody struct {
	id   string
	body []byte
}

// sendRequest sends the session's history as a request of turn k — round 0 the user's message,
// round r > 0 the r-th after tool results — and writes its record.
// turnStart is a RAG turn's first step's start, for the turn's whole latency (absent otherwise).
func (s *stageRun) sendRequest(reqCtx context.Context, ss *session, k, round int, turn workload.Turn, credit time.Time, turnStart metrics.Opt[int64]) *exchange {
	if round > 0 {
		ss.intended = ss.lastEnd // no think time before a tool round
	}
	id, body := "", []byte(nil)
	if p := ss.pending; p != nil && round == 0 {
		id, body, ss.pending = p.id, p.body, nil
	} else {
		id = newUUID()
	}
	ex := &exchange{rec: metrics.Record{
		SessionNum:      int(s.counts.issued.Add(1) - 1),
		XRequestID:      id,
		SlotWaitNs:      ss.slotWait,
		XCorrelationID:  ss.sr.XCorrelationID,
		ConversationID:  ss.sr.ConversationID,
		DatasetSession:  ss.datasetSession(),
		TurnIndex:       k,
		CreditIssuedNs:  s.clock.ns(credit),
		IntendedStartNs: metrics.Some(s.clock.ns(ss.intended)),
		Persona:         ss.persona,
		Model:           ss.model,
		NotStreamed:     !s.cfg.Scenario.Streamed(),
		RAGTurnStartNs:  turnStart,
	}}
	if s.cfg.Workload.MaxToolRounds() > 0 {
		ex.rec.ToolRound = metrics.Some(round)
	}
	ss.slotWait = metrics.Opt[int64]{}
	if body == nil {
		// A fresh buffer per request (nil: build sizes it): the transport may still hold the last one.
		body = s.body.BuildAfter(nil, ss.model, withNonce(ss.history, s.cfg.Scenario.NonceAt(), ex.rec.XRequestID), ss.previous, int(turn.MaxOutputTokens), turn.ExactOutput)
	}
	s.send(reqCtx, ex, body, ss.isl)
	if ex.rec.Error == nil { // an error record carries error_isl alone (docs/records.md, AIPerf's layout)
		ex.rec.RequestBytes = metrics.Some(len(body))
		s.recordImages(&ex.rec, ss.history)
	}
	ss.remember(ex)
	if ex.rec.ClientPromptTokens.OK { // the messages those tokens came in: a chat template adds some per message
		ex.rec.ClientPromptMessages = metrics.Some(len(ss.history))
	}
	s.judgeAnswer(ex)
	s.finishRecord(ss, ex)
	return ex
}

// finishRecord ends a request of session ss: its end is the session's last and maybe the stage's,
// it is counted, watched and written.
func (s *stageRun) finishRecord(ss *session, ex *exchange) {
	ss.lastEnd = s.clock.at(ex.rec.RequestEndNs.V)
	for end := ex.rec.RequestEndNs.V; ; {
		if last := s.lastEndNs.Load(); end <= last || s.lastEndNs.CompareAndSwap(last, end) {
			break
		}
	}
	s.counts.count(ex)
	s.watch(&ex.rec, ss.lastEnd)
	s.records.Write(&ex.rec)
	ss.sr.Requests++
}

// remember keeps what the server holds after ex: an answer with an id stands for the history sent
// and itself, the one message (its text, or its tool calls) the session adds next; without an
// answer, or an id, the next request sends the whole history again.
func (ss *session) remember(ex *exchange) {
	if !ex.ok() || ex.responseID == "" {
		ss.previous = protocol.Previous{}
		return
	}
	ss.previous = protocol.Previous{ID: ex.responseID, Held: len(ss.history) + 1}
}

// addAnswer adds turn's answer to the history: the file's own (history: recorded) or the server's,
// whose tokens count counts (the scenario's tokenizer: the client's share of the next request's
// length, between turns and never on the timing path).
func (ss *session) addAnswer(turn workload.Turn, ex *exchange, count func(string) int) {
	if ss.recorded && turn.Recorded != nil && len(turn.Recorded.Messages) > 0 {
		// The file's own answer — text, or an agent's tool calls and their results — verbatim:
		// the next turn was written against it.
		ss.history = append(ss.history, recordedMessages(turn)...)
		ss.isl += turn.Recorded.Tokens
		return
	}
	if ss.recorded && turn.RecordedText() != "" {
		ss.history = append(ss.history, protocol.NewMessage("assistant", turn.Recorded.Text, turn.Recorded.Tokens))
		ss.isl += turn.Recorded.Tokens
		return
	}
	answer := ex.answer.String()
	tokens := count(answer)
	ss.history = append(ss.history, protocol.NewMessage("assistant", answer, tokens))
	ss.isl += tokens
}

// withNonce returns the messages to send with a short string unique to the request — its request
// id's first 8 characters in brackets — at the start of the first message (workload.nonce: true) or
// of the first message after the system prompt (after_system), so that no prefix cache can match a
// request beyond what the workload shares on purpose. The history itself is left as it is.
func withNonce(history []protocol.Message, at workload.Nonce, requestID string) []protocol.Message {
	if at == "" || len(history) == 0 {
		return history
	}
	i := 0
	if at == workload.NonceAfterSystem {
		for i < len(history)-1 && history[i].Role() == "system" {
			i++
		}
	}
	out := append([]protocol.Message(nil), history...)
	m := history[i]
	out[i] = m.WithText("[" + requestID[:min(8, len(requestID))] + "] " + m.Text()) // images kept
	return out
}

// recordedMessages are a turn's recorded messages as history entries, sent exactly as the file has
// them (compacted). Their content, for the completions endpoint's transcript, is the text only.
func recordedMessages(turn workload.Turn) []protocol.Message {
	out := make([]protocol.Message, 0, len(turn.Recorded.Messages))
	for _, raw := range turn.Recorded.Messages {
		var m struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		}
		_ = json.Unmarshal(raw, &m)
		var buf bytes.Buffer
		if json.Compact(&buf, raw) != nil {
			text, _ := m.Content.(string)
			out = append(out, protocol.NewMessage(m.Role, text, 0))
			continue
		}
		out = append(out, protocol.NewRawMessage(m.Role, buf.Bytes()))
	}
	return out
}
