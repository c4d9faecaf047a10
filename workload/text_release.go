package workload

import (
	"math/rand/v2"
	"sync"

	"github.com/plload/plload/tokenizer"
)

// textSource writes a stage's released synthetic text again; safe for concurrent use (a TextGen is
// not, so each caller borrows one).
type textSource struct {
	lang string
	gens sync.Pool
}

func newTextSource(lang string, tok tokenizer.Tokenizer) *textSource {
	ts := &textSource{lang: lang}
	ts.gens.New = func() any {
		g, err := NewTextGen(lang, tok)
		if err != nil {
			return nil // cannot happen: the same language built the pool
		}
		return g
	}
	return ts
}

// UserText is the turn's user message: as stored (text from files), or, for synthetic text, which
// the pool does not keep (buildStage releases it once the dataset line holds it), written again from
// its seed — the same bytes the dataset file holds. A stage's pool holds every session for the whole
// run (session_pool_factor × the sessions running, 50 KiB of text each in a 50-turn chat), while
// only the sessions running need text.
func (p *StagePool) UserText(t *Turn) string {
	if t.User != "" || !t.seed.synthetic || p.text == nil {
		return t.User
	}
	g, _ := p.text.gens.Get().(*TextGen)
	if g == nil {
		return ""
	}
	defer p.text.gens.Put(g)
	return t.seed.write(g, p.text.lang)
}

// write replays the generator from the states buildStage kept, piece by piece.
func (s *textSeed) write(g *TextGen, lang string) string {
	question := s.question
	if s.docTokens == 0 {
		return g.ProseWith(rand.New(&question), int(s.questTok), nil)
	}
	doc := s.doc
	return g.ProseWith(rand.New(&doc), int(s.docTokens), docOpening(lang, int(s.index)+1)) +
		" " + g.ProseWith(rand.New(&question), int(s.questTok), questionOpening(lang))
}

// DropTurns drops a synthetic pool's turns, which Turns draws again for each session as it starts:
// a stage's pool holds session_pool_factor × the sessions running (three times, by default), and a
// turn's plan is 112 bytes, so a pool of 50-turn chats held 16 KiB of plans per running session for
// sessions that were not running (issue 19). Each session keeps its ID and persona. A pool from
// files keeps its turns (their text is not drawn from a seed).
func (p *StagePool) DropTurns() {
	if p.rebuild == nil {
		return
	}
	for i := range p.Sessions {
		sp := &p.Sessions[i]
		sp.planned, sp.Turns = len(sp.Turns), nil
	}
	p.turnsDropped = true
}

// PlannedTurns is how many turns the session plans, whether or not the pool still holds them.
func (sp *SessionPlan) PlannedTurns() int {
	if sp.Turns != nil {
		return len(sp.Turns)
	}
	return sp.planned
}

// Turns is session i's turns: the pool's own, or after DropTurns drawn again (user text released,
// as UserText expects), a slice of the caller's own. Safe for concurrent use.
func (p *StagePool) Turns(i int) []Turn {
	if !p.turnsDropped {
		return p.Sessions[i].Turns
	}
	g, _ := p.text.gens.Get().(*TextGen)
	if g == nil {
		return nil
	}
	defer p.text.gens.Put(g)
	turns := p.rebuild(g, i)
	for k := range turns {
		turns[k].User = ""
	}
	return turns
}
