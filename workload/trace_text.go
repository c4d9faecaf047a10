package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
)

// RNG streams of trace text, apart from the synthetic streams (dataset.go) and the source shuffle.
// rng keeps the low 16 bits of a stream, so these differ there: 0x6163 and 0x7874.
const (
	// streamTraceBlock draws the text of one hash id's block: index = the id.
	streamTraceBlock uint64 = 0x74726163
	// streamTraceText draws the unique text of a request without (enough) hash ids: index = its line.
	streamTraceText uint64 = 0x74727874
)

// traceText writes the text of trace requests from pieces of exactly one token each (in the scenario's
// tokenizer): a word after a space, "," or ".". Because a byte-level tokenizer encodes each piece of its pre-split on its own
// and every boundary here is a pre-split boundary (a space before a letter, punctuation after one),
// the token count of any run of pieces is the number of pieces. That is what a trace needs and
// TextGen's prose does not give: a block can be cut to any length by cutting pieces (so a request
// whose input is shorter than its blocks still starts with the very text of those blocks, and
// shares their prefix on the server), and blocks concatenate with exact counts without re-encoding.
//
// Text is kept in "continuation form": every piece written with its leading space (punctuation has
// none), so pieces can be counted and cut by scanning for ' ', ',' and '.' — bytes that no word
// contains, multi-byte UTF-8 included. A prompt drops the one leading space of its first piece; that
// piece always opens a sentence with a word that is one token with and without the space.
type traceText struct {
	en        bool
	templates [][]traceSlot // sentence shapes, "." closing each
}

// traceSlot is one place of a sentence template: punctuation, or the words that may stand there.
type traceSlot struct {
	punct string   // "," or "." (words nil)
	words []string // each one token after a space (capitalised at a sentence's start)
}

// newTraceText selects, from g's word lists, the words that are single tokens (slots with none take
// TextGen's one-token fillers and starters), and checks once that the piece arithmetic holds for
// this tokenizer, so a tokenizer that split differently fails loudly instead of giving wrong lengths.
func newTraceText(g *TextGen) (*traceText, error) {
	t := &traceText{en: g.lang == "en"}
	oneToken := func(w string) bool {
		for _, r := range w {
			if !unicode.IsLetter(r) {
				return false
			}
		}
		return w != "" && g.count(" "+w) == 1
	}
	words, openers := map[string][]string{}, map[string][]string{}
	for slot, list := range g.words {
		for _, w := range list {
			if oneToken(w) {
				words[slot] = append(words[slot], w)
			}
			// An opener may start a prompt, where it has no space before it.
			if c := capitalizeFor(g.lang, w); oneToken(c) && g.countFirst(c) == 1 {
				openers[slot] = append(openers[slot], c)
			}
		}
	}
	for _, tpl := range g.templates {
		var out []traceSlot
		for _, slot := range tpl {
			switch {
			case slot == "subj" || slot == "obj":
				continue // Korean particles glue onto the noun and make it two tokens
			case slot == ",":
				out = append(out, traceSlot{punct: ","})
			case len(out) == 0:
				out = append(out, traceSlot{words: cmpOr(openers[slot], g.starters)})
			default:
				out = append(out, traceSlot{words: cmpOr(words[slot], g.fillers)})
			}
		}
		t.templates = append(t.templates, append(out, traceSlot{punct: "."}))
	}
	r := rand.New(rand.NewPCG(1, 2))
	probe := string(t.appendText(nil, r, 300))
	if got := g.Count(probe[1:]); got != 300 || g.Count(cutPieces(probe, 123)[1:]) != 123 {
		return nil, fmt.Errorf("trace text: 300 one-token pieces count %d tokens in the tokenizer %s; its blocks could not be cut to exact lengths, so trace lengths would be wrong", got, g.tok.Name())
	}
	return t, nil
}

func cmpOr(list, fallback []string) []string {
	if len(list) > 0 {
		return list
	}
	return fallback
}

// appendText appends n pieces (n tokens) in continuation form, starting with a sentence.
func (t *traceText) appendText(b []byte, r *rand.Rand, n int) []byte {
	b = slices.Grow(b, n*7)
	for n > 0 {
		tpl := t.templates[r.IntN(len(t.templates))]
		article := false // "a" just written (en): "an" before a vowel
		for _, slot := range tpl {
			if n == 0 {
				break
			}
			n--
			if slot.words == nil {
				b = append(b, slot.punct...)
				continue
			}
			w := slot.words[r.IntN(len(slot.words))]
			if article && strings.ContainsRune("aeiou", rune(w[0])) {
				b = append(b, 'n')
			}
			b = append(b, ' ')
			b = append(b, w...)
			article = t.en && (w == "a" || w == "A")
		}
	}
	return b
}

// cutPieces returns the first k pieces of s (continuation form): s up to its (k+1)-th boundary.
func cutPieces(s string, k int) string {
	seen := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ' ' || c == ',' || c == '.' {
			if seen == k {
				return s[:i]
			}
			seen++
		}
	}
	return s
}
