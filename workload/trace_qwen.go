package workload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
)

// qwenLine is one turn of a Qwen/Bailian multi-turn trace. Each turn has a chat_id of its own and
// names the turn before it in parent_chat_id (−1 on a first turn). As for mooncakeLine, NaN and
// noChat mark keys the line did not give.
type qwenLine struct {
	ChatID       int64   `json:"chat_id"`
	ParentChatID int64   `json:"parent_chat_id"`
	Timestamp    float64 `json:"timestamp"`
	InputLength  float64 `json:"input_length"`
	OutputLength float64 `json:"output_length"`
	Turn         int64   `json:"turn"`
	HashIDs      []int64 `json:"hash_ids"`
	Type         string  `json:"type"`
}

const noChat = math.MinInt64

const qwenAccepted = `{"chat_id": id, "parent_chat_id": id or -1, "timestamp": s, "input_length": tokens, "output_length": tokens, "hash_ids": [ids]}`

// readQwen reads a Qwen/Bailian JSONL trace: timestamps in seconds from the trace's start.
func readQwen(tf *traceFile, in *bufio.Reader) error {
	tf.dropped = map[int64]bool{}
	var l qwenLine
	return eachJSONLine(tf, in, func(line int, b []byte) error {
		l = qwenLine{ChatID: noChat, ParentChatID: noChat, Timestamp: math.NaN(), InputLength: math.NaN(),
			OutputLength: math.NaN(), HashIDs: l.HashIDs[:0]}
		if err := json.Unmarshal(b, &l); err != nil {
			return jsonLineError(tf.path, line, err, qwenAccepted)
		}
		for key, v := range map[string]int64{"chat_id": l.ChatID, "parent_chat_id": l.ParentChatID} {
			if v == noChat {
				return fmt.Errorf("%s line %d: key %q is missing or null; accepted: %s", tf.path, line, key, traceKeyAccepted[key])
			}
		}
		if l.Type != "" && l.Type != "text" {
			// Image and file turns carry tokens plload cannot send as text; their lengths still count.
			tf.nonText++
		}
		return tf.addRow(traceRow{line: line, chat: l.ChatID, parent: l.ParentChatID}, l.Timestamp, 1000,
			"a number of seconds from the trace's start", l.InputLength, l.OutputLength, l.HashIDs)
	})
}

// qwenChat is what the session builder knows of one chat_id (one turn).
type qwenChat struct {
	session int // index into Source.Sessions; −1: the turn is not replayed (out of the slice, dropped)
	line    int
	next    bool // a later turn already continues this one
}

// qwenSessions chains the turns of each chat through parent_chat_id into one session, in time order.
// The engine sends a session's history itself (its earlier user messages and the server's live
// answers), so a later turn's message is only its new part: input_length less the earlier turn's
// input and output. Its text comes from the hash ids past that history (the history's own blocks are
// what the engine resends). A session is in the slice when its first turn is; its turns stop at the
// slice's end or at max_requests.
func qwenSessions(tf *traceFile, src *Source, tp *tracePrompts, w sliceWindow) error {
	chats := make(map[int64]*qwenChat, len(tf.rows))
	type last struct{ in, out int }
	var prev []last // per session: its latest turn's lengths
	var pending []tracePending
	turns := 0
	orphans, branches, shorter, goneWith := 0, 0, 0, 0
	for i := range tf.rows {
		r := &tf.rows[i]
		if c, seen := chats[r.chat]; seen {
			return fmt.Errorf("%s line %d: chat_id %d is already the chat_id of line %d; accepted: one row per chat_id (each turn has its own, parent_chat_id names the turn before)",
				tf.path, r.line, r.chat, c.line)
		}
		c := &qwenChat{session: -1, line: r.line}
		chats[r.chat] = c
		var parent *qwenChat
		if r.parent >= 0 {
			switch p, ok := chats[r.parent]; {
			case tf.dropped[r.parent]:
				tf.dropped[r.chat] = true
				goneWith++
				continue
			case !ok:
				orphans++ // its first turns are not in the file (a cut trace): it starts a session
			case p.next:
				branches++ // a second answer to one turn: a session of its own
			default:
				parent = p
			}
		}
		if r.ms >= w.to || w.max > 0 && turns == w.max {
			continue
		}
		if parent == nil {
			if !w.holds(r.ms) {
				continue
			}
			c.session = len(src.Sessions)
			prev = append(prev, last{r.in, r.out})
			pending = append(pending, tracePending{sess: c.session, idsAt: r.idsAt, idsN: r.idsN, n: r.in, line: r.line})
			src.Sessions = append(src.Sessions, SourceSession{ID: fmt.Sprintf("chat-%d", r.chat), Turns: []SourceTurn{{
				UserTokens: r.in, OutputTokens: r.out, ExactOutput: true, AtMs: r.ms - w.from, DelayMs: -1, Line: r.line}}})
			turns++
			continue
		}
		parent.next = true
		if parent.session < 0 {
			continue // its session is not replayed
		}
		c.session = parent.session
		h := prev[c.session]
		history := h.in + h.out
		n := r.in - history
		if n < 1 {
			// The service cut the history (or the lengths disagree): the prompt the engine sends will
			// be longer than the trace says; one new token keeps the turn.
			shorter++
			n = 1
		}
		from := min(r.idsN, history/tp.blockTokens)
		ss := &src.Sessions[c.session]
		pending = append(pending, tracePending{sess: c.session, turn: len(ss.Turns), idsAt: r.idsAt + from, idsN: r.idsN - from, n: n, line: r.line})
		ss.Turns = append(ss.Turns, SourceTurn{UserTokens: n, OutputTokens: r.out, ExactOutput: true, AtMs: r.ms - w.from, DelayMs: -1, Line: r.line})
		prev[c.session] = last{r.in, r.out}
		turns++
	}
	tp.fill(tf, src, pending)
	say := func(n int, format string) {
		if n > 0 {
			src.Warnings = append(src.Warnings, fmt.Sprintf("%s: "+format, tf.path, n))
		}
	}
	say(goneWith, "%d later turns of chats left out for a length of 0 are left out with them")
	say(orphans, "%d turns name a parent_chat_id that is not in the file: each starts a session, its whole input_length its first message")
	say(branches, "%d turns continue a turn that another turn already continues: each starts a session of its own")
	say(shorter, "%d turns have an input_length under their history (the earlier turn's input + output): their new message is 1 token, so what the engine sends is longer than the trace says")
	say(tf.nonText, "%d turns have a type other than text: their lengths are replayed as text")
	return nil
}
