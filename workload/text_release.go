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

// ReleaseText drops the pool's synthetic text, which UserText writes again when a session sends
// the turn: a stage's pool holds every session for the whole run (session_pool_factor × the
// sessions running, 50 KiB each in a 50-turn chat), while only the sessions running need text.
// Text from files is kept.
func (p *StagePool) ReleaseText() {
	if p.text == nil {
		return
	}
	for i := range p.Sessions {
		for k := range p.Sessions[i].Turns {
			if t := &p.Sessions[i].Turns[k]; t.seed.synthetic {
				t.User = ""
			}
		}
	}
}

// UserText is the turn's user message: as stored, or written again from its seed after
// ReleaseText — the same bytes the dataset file holds.
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
