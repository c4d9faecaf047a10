package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// runSession plays one session from the pool: each turn waits for its intended send time (the
// previous answer's end plus think time), sends the whole history with the new user message, and
// adds the answer exactly as streamed. The session ends at its last turn, at its first failed
// request (a user whose message failed does not carry on as if answered), or when the stage stops
// issuing. It returns the session's last exchange (nil when it sent nothing), for the slot's backoff.
func (s *stageRun) runSession(issueCtx, reqCtx context.Context, scheduled time.Time) (last *exchange) {
	sp, reused := s.nextSession()
	sr := &metrics.SessionRecord{ConversationID: sp.ID, XCorrelationID: newUUID(), Persona: sp.Persona,
		ScheduledNs: s.clock.ns(scheduled), PlannedTurns: len(sp.Turns), Reused: reused, Outcome: metrics.SessionCompleted}
	history := make([]message, 0, 1+2*len(sp.Turns))
	isl := 0
	var persona metrics.Opt[int]
	if sp.Persona >= 0 { // a dataset's conversation may have no system prompt
		p := s.cfg.Workload.Personas[sp.Persona]
		history = append(history, newMessage("system", p.SystemPrompt, p.Tokens))
		isl, persona = p.Tokens, metrics.Some(sp.Persona)
	}
	recorded := s.cfg.Scenario.Workload != nil && s.cfg.Scenario.Workload.Dataset != nil && s.cfg.Scenario.Workload.Dataset.History == "recorded"
	intended, lastEnd := scheduled, time.Time{}
	due := scheduled // the trace's own time of the turn, for turns due AfterPrevious
	bodyHint := 4096
	defer func() {
		if sr.Requests == 0 && sr.Outcome == metrics.SessionStageEnd {
			return // the stage ended before this slot's next session began: it never existed
		}
		if !lastEnd.IsZero() {
			sr.EndNs = s.clock.ns(lastEnd)
		}
		s.sessions.Write(sr)
	}()
	for k, turn := range sp.Turns {
		switch {
		case k > 0 && turn.AfterPrevious > 0:
			// A trace's own turn times, kept from the session's start (a late turn does not push the
			// later ones back), and never before the previous answer: then right after it, the lag
			// showing in intended_start_ns versus request_start_ns.
			due = due.Add(turn.AfterPrevious)
			intended = due
			if intended.Before(lastEnd) {
				intended = lastEnd
			}
		case k > 0:
			intended = lastEnd.Add(turn.ThinkBefore)
		}
		if !sleepUntil(issueCtx, intended) {
			sr.Outcome = metrics.SessionStageEnd
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
			if reused {
				s.counts.reused.Add(1)
			}
			sr.StartNs = s.clock.ns(credit)
			lag := metrics.Ms(int64(credit.Sub(scheduled)))
			sr.StartLagMs = &lag
		}
		history = append(history, newMessage("user", turn.User, turn.UserTokens))
		isl += turn.UserTokens
		ex := &exchange{rec: metrics.Record{
			SessionNum:      int(s.counts.issued.Add(1) - 1),
			XRequestID:      newUUID(),
			XCorrelationID:  sr.XCorrelationID,
			ConversationID:  sp.ID,
			TurnIndex:       k,
			CreditIssuedNs:  s.clock.ns(credit),
			IntendedStartNs: metrics.Some(s.clock.ns(intended)),
			Persona:         persona,
		}}
		// A fresh buffer per request: the transport may still hold the last one.
		body := s.body.build(make([]byte, 0, bodyHint), withNonce(history, s.cfg.Scenario.NonceAt(), ex.rec.XRequestID), turn.MaxOutputTokens, turn.ExactOutput)
		bodyHint = len(body) + len(body)/4
		s.send(reqCtx, ex, body, isl)
		last = ex
		lastEnd = s.clock.at(ex.rec.RequestEndNs.V)
		s.counts.count(ex)
		s.watch(&ex.rec, lastEnd)
		s.records.Write(&ex.rec)
		sr.Requests++
		switch {
		case ex.rec.WasCancelled:
			sr.Outcome = metrics.SessionCancelled
			return last
		case ex.rec.Error != nil:
			sr.Outcome = metrics.SessionError
			return last
		}
		if recorded && len(turn.RecordedMessages) > 0 {
			// The file's own answer — text, or an agent's tool calls and their results — verbatim:
			// the next turn was written against it.
			history = append(history, recordedMessages(turn)...)
			isl += turn.RecordedTokens
			continue
		}
		if recorded && turn.Recorded != "" {
			history = append(history, newMessage("assistant", turn.Recorded, turn.RecordedTokens))
			isl += turn.RecordedTokens
			continue
		}
		history = append(history, newMessage("assistant", ex.answer.String(), ex.answered))
		isl += ex.answered
	}
	return last
}

// withNonce returns the messages to send with a short string unique to the request — its request
// id's first 8 characters in brackets — at the start of the first message (workload.nonce: true) or
// of the first message after the system prompt (after_system), so that no prefix cache can match a
// request beyond what the workload shares on purpose. The history itself is left as it is.
func withNonce(history []message, at workload.Nonce, requestID string) []message {
	if at == "" || len(history) == 0 {
		return history
	}
	i := 0
	if at == workload.NonceAfterSystem {
		for i < len(history)-1 && history[i].role == "system" {
			i++
		}
	}
	out := append([]message(nil), history...)
	m := history[i]
	out[i] = newMessage(m.role, "["+requestID[:min(8, len(requestID))]+"] "+m.content, m.tokens)
	return out
}

// recordedMessages are a turn's recorded messages as history entries, sent exactly as the file has
// them (compacted). Their content, for the completions endpoint's transcript, is the text only.
func recordedMessages(turn workload.Turn) []message {
	out := make([]message, 0, len(turn.RecordedMessages))
	for _, raw := range turn.RecordedMessages {
		var m struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		}
		_ = json.Unmarshal(raw, &m)
		text, _ := m.Content.(string)
		var buf bytes.Buffer
		if json.Compact(&buf, raw) != nil {
			buf.Reset()
			buf.Write(newMessage(m.Role, text, 0).encoded)
		}
		out = append(out, message{role: m.Role, content: text, encoded: buf.Bytes()})
	}
	return out
}
