package workload

import (
	"sync"

	"github.com/plload/plload/tokenizer"
)

// textSource lends the text generators a synthetic pool draws its sessions again with; safe for
// concurrent use (a TextGen is not, so each caller borrows one).
type textSource struct {
	gens sync.Pool
}

func newTextSource(lang string, tok tokenizer.Tokenizer) *textSource {
	ts := &textSource{}
	ts.gens.New = func() any {
		g, err := NewTextGen(lang, tok)
		if err != nil {
			return nil // cannot happen: the same language built the pool
		}
		return g
	}
	return ts
}

// TurnCursor walks one session's turns in order, each with its user text: a pool from files gives
// its own; a synthetic pool draws each turn from the session's generator as it is asked for, so a
// running session holds neither its later turns nor their text (bench/README.md's third pass), and its first request
// waits for one turn's drawing, not all of them. Not safe for concurrent use; each session has its
// own.
type TurnCursor struct {
	pool  *StagePool
	turns []Turn       // a pool from files
	draw  *sessionDraw // a synthetic pool
	k     int
}

// Cursor starts session i's turns.
func (p *StagePool) Cursor(i int) *TurnCursor {
	if p.start == nil {
		return &TurnCursor{pool: p, turns: p.Sessions[i].Turns}
	}
	_, d := p.start(i)
	return &TurnCursor{pool: p, draw: d}
}

// DrawsPastPool reports whether the stage draws new sessions once it has started its pool's
// (load.session_reuse: fresh, on a synthetic pool): Session and Cursor then take any index.
func (p *StagePool) DrawsPastPool() bool { return p.start != nil && p.Reuse == ReuseFresh }

// Session is the plan of the stage's session i: the pool's entry, or past the pool (DrawsPastPool)
// session i drawn from (seed, stage, i) as the pool drew its own — persona and turn count here, its
// turns by Cursor(i) — and kept nowhere, so a stage of 100,000 sessions holds only those running.
func (p *StagePool) Session(i int) SessionPlan {
	if i < len(p.Sessions) || !p.DrawsPastPool() {
		return p.Sessions[i]
	}
	sp, _ := p.start(i)
	return sp
}

// FirstRepeat is the first pool entry whose conversation the run already sent in an earlier entry
// (a dataset or trace shorter than the sessions its stages take starts over, each stage going on
// where the last stopped); len(Sessions) when no entry repeats one.
func (p *StagePool) FirstRepeat() int { return max(0, len(p.Sessions)-p.repeats) }

// NoncesRepeats reports whether a session that repeats a conversation carries a nonce of its own
// after the system prompt (load.session_reuse: wrap), so the server cannot answer it from its cache
// beyond the persona.
func (p *StagePool) NoncesRepeats() bool { return p.Reuse == ReuseWrap }

// Next is the next turn (its User left empty: the text is returned beside it) and its user text;
// false after the last turn.
func (c *TurnCursor) Next() (Turn, string, bool) {
	if c.draw == nil {
		if c.k >= len(c.turns) {
			return Turn{}, "", false
		}
		c.k++
		t := c.turns[c.k-1]
		return t, t.User, true
	}
	g, _ := c.pool.text.gens.Get().(*TextGen)
	if g == nil {
		return Turn{}, "", false
	}
	defer c.pool.text.gens.Put(g)
	t, ok := c.draw.next(g)
	text := t.User
	t.User = ""
	return t, text, ok
}

// Turns is session i's turns; a synthetic pool's without their text (a Cursor gives it).
func (p *StagePool) Turns(i int) []Turn {
	c := p.Cursor(i)
	var turns []Turn
	for t, _, ok := c.Next(); ok; t, _, ok = c.Next() {
		turns = append(turns, t)
	}
	return turns
}

// PlannedTurns is how many turns the session plans, whether or not the pool keeps them.
func (sp *SessionPlan) PlannedTurns() int {
	if sp.Turns != nil {
		return len(sp.Turns)
	}
	return sp.planned
}
