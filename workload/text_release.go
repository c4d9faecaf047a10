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
// the pool does not keep, written again from its seed — the same bytes the dataset file holds. A
// stage's pool holds every session for the whole run (session_pool_factor × the sessions running,
// 50 KiB of text each in a 50-turn chat), while only the sessions running need text.
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

// Turns is session i's turns: a pool from files keeps them; a synthetic pool draws them again from
// the session's generator (user text released, as UserText expects), a slice of the caller's own.
// Safe for concurrent use.
func (p *StagePool) Turns(i int) []Turn {
	if p.draw == nil {
		return p.Sessions[i].Turns
	}
	g, _ := p.text.gens.Get().(*TextGen)
	if g == nil {
		return nil
	}
	defer p.text.gens.Put(g)
	turns := p.draw(g, i).Turns
	for k := range turns {
		turns[k].User = ""
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
