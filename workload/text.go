package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/plload/plload/tokenizer"
)

// pieceAnchor is the text a piece is counted after (see TextGen.count): a word that ends a
// pre-tokenizer piece in every tokenizer family plload reads.
const pieceAnchor = "Word"

// TextGen writes deterministic synthetic prose of an exact token length in the scenario's tokenizer.
//
// Byte-level tokenizers (o200k_base, Qwen3, Llama 3, …) first split text into pieces with a regular
// expression (a word with its leading space, a run of punctuation, ...) and then encode each piece on
// its own, so the token count of text built from whole pieces is the sum of the pieces' counts.
// TextGen builds sentences from words that are whole pieces, keeps a running sum from a per-piece
// cache, and closes the last sentence with one-token filler words, so the result lands exactly on
// the target without re-encoding the text. A tokenizer without that split (a SentencePiece-style
// vocabulary that encodes the whole text at once) is found by a probe when the generator is made;
// its text is then counted whole and settled onto the target (settle).
type TextGen struct {
	lang      string
	tok       tokenizer.Tokenizer
	counts    map[string]int // a piece's tokens after pieceAnchor
	firsts    map[string]int // a piece's tokens at the start of a text
	additive  bool           // the pieces' counts add up to the text's (the probe says so)
	fillers   []string       // one-token words, written after a space
	starters  []string       // one-token words that can open a sentence (capitalised for en, no leading space)
	words     map[string][]string
	templates [][]string
}

// NewTextGen returns a generator for language "en" or "ko" counting in tok.
func NewTextGen(lang string, tok tokenizer.Tokenizer) (*TextGen, error) {
	if tok == nil {
		return nil, fmt.Errorf("synthetic text: no tokenizer")
	}
	g := &TextGen{lang: lang, tok: tok, counts: map[string]int{}, firsts: map[string]int{}, additive: true}
	fillers := enFillers
	switch lang {
	case "en":
		g.words, g.templates = enWords, enTemplates
	case "ko":
		g.words, g.templates, fillers = koWords, koTemplates, koFillers
	default:
		return nil, fmt.Errorf("language %q: accepted: en, ko", lang)
	}
	g.pickFillers(fillers)
	if len(g.fillers) == 0 || len(g.starters) == 0 {
		// A small vocabulary can have no whole word of the language as one token (Korean in a 32k
		// SentencePiece vocabulary costs 2× o200k_base): then any of its words, or single
		// syllables of them, that are.
		g.pickFillers(g.syllables())
	}
	if len(g.fillers) == 0 || len(g.starters) == 0 || g.count(".") != 1 {
		return nil, fmt.Errorf("language %q: the tokenizer %s has no word or letter of the language that is one token after a space, or splits \".\" unexpectedly, so synthetic text cannot be sized in it; use a dataset (workload.dataset) for this language and tokenizer", lang, tok.Name())
	}
	g.additive = g.probeAdditive()
	return g, nil
}

// pickFillers keeps the candidates that are one token after a space (fillers) and also one at the
// start of a text (starters).
func (g *TextGen) pickFillers(candidates []string) {
	for _, f := range candidates {
		if g.count(" "+f) == 1 {
			g.fillers = append(g.fillers, f)
		}
		if s := capitalizeFor(g.lang, f); g.countFirst(s) == 1 && g.count(" "+s) == 1 {
			g.starters = append(g.starters, s)
		}
	}
}

// syllables is every letter of the language's words, once each, in a fixed order.
func (g *TextGen) syllables() []string {
	slots := make([]string, 0, len(g.words))
	for slot := range g.words {
		slots = append(slots, slot)
	}
	slices.Sort(slots)
	seen := map[rune]bool{}
	var out []string
	for _, slot := range slots {
		for _, w := range g.words[slot] {
			for _, r := range w {
				if unicode.IsLetter(r) && !seen[r] {
					seen[r] = true
					out = append(out, string(r))
				}
			}
		}
	}
	return out
}

// probeAdditive writes a few texts by piece arithmetic and counts them whole: equal counts mean the
// tokenizer encodes the pieces on their own, and texts need no second count.
func (g *TextGen) probeAdditive() bool {
	r := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{1, 2, 17, 64, 301} {
		if t := g.proseByPieces(r, n, nil); g.Count(t) != n {
			return false
		}
	}
	return true
}

// count is piece's tokens where it follows other text: the count of pieceAnchor+piece less the
// anchor's. For a tokenizer that splits before the piece this is the piece's own count; for one that
// encodes whole texts it is the piece's share in context (a leading space is not a lone "▁").
func (g *TextGen) count(piece string) int {
	if n, ok := g.counts[piece]; ok {
		return n
	}
	n := g.tok.Count(pieceAnchor+piece) - g.tok.Count(pieceAnchor)
	g.counts[piece] = n
	return n
}

// countFirst is piece's tokens at the start of a text.
func (g *TextGen) countFirst(piece string) int {
	if n, ok := g.firsts[piece]; ok {
		return n
	}
	n := g.tok.Count(piece)
	g.firsts[piece] = n
	return n
}

// Count is the token count of any text in the generator's tokenizer.
func (g *TextGen) Count(s string) int { return g.tok.Count(s) }

// writer appends whole pieces and keeps the running token count.
type writer struct {
	g      *TextGen
	b      strings.Builder
	tokens int
}

// piece returns the text word becomes at this point: punctuation sticks to the word before it,
// anything else gets a leading space (except at the very start).
func (w *writer) piece(word string) string {
	if w.b.Len() == 0 || word == "," || word == "." || word == "?" {
		return word
	}
	return " " + word
}

func (w *writer) write(p string) {
	if w.b.Len() == 0 {
		w.tokens += w.g.countFirst(p)
	} else {
		w.tokens += w.g.count(p)
	}
	w.b.WriteString(p)
}

// cost is what writing p next adds to the count.
func (w *writer) cost(p string) int {
	if w.b.Len() == 0 {
		return w.g.countFirst(p)
	}
	return w.g.count(p)
}

// Prose returns sentences of exactly n tokens (n ≥ 1) ending with end ("." or "?").
func (g *TextGen) Prose(r *rand.Rand, n int) string {
	return g.ProseWith(r, n, nil)
}

// ProseWith is Prose that starts with the given words (a persona's introduction, a document title).
// When the opening alone is longer than n, it is cut short; the result still has exactly n tokens
// (within settle's bound in a tokenizer whose pieces do not add up).
func (g *TextGen) ProseWith(r *rand.Rand, n int, opening []string) string {
	text := g.proseByPieces(r, n, opening)
	if g.additive || n <= 0 {
		return text
	}
	return g.settle(text, n)
}

// proseByPieces is ProseWith by piece arithmetic alone.
func (g *TextGen) proseByPieces(r *rand.Rand, n int, opening []string) string {
	if n <= 0 {
		return ""
	}
	w := &writer{g: g}
	if n == 1 {
		w.write(pick(r, g.starters))
		return w.b.String()
	}
	avail := n - 1 // the closing period takes the last token
	sentence := opening
	startOfSentence := true
	for {
		if len(sentence) == 0 {
			sentence = g.sentence(r)
			startOfSentence = true
		}
		word := sentence[0]
		sentence = sentence[1:]
		if startOfSentence && g.lang == "en" {
			word = capitalize(word)
		}
		startOfSentence = word == "."
		p := w.piece(word)
		// A comma right before the closing period would merge with it into one token (",.").
		if w.tokens+w.cost(p) > avail || (word == "," && w.tokens+1 >= avail) {
			break
		}
		w.write(p)
		if w.tokens == avail {
			break
		}
	}
	for w.tokens < avail {
		if w.b.Len() == 0 || strings.HasSuffix(w.b.String(), ".") {
			w.write(w.piece(pick(r, g.starters)))
		} else {
			w.write(w.piece(pick(r, g.fillers)))
		}
	}
	if strings.HasSuffix(w.b.String(), ".") {
		// The text already ends a sentence at n−1 tokens: one more word, then the period would make
		// n+1, so end with a one-token word instead.
		w.write(w.piece(pick(r, g.starters)))
		return w.b.String()
	}
	w.write(".")
	return w.b.String()
}

// settle moves text, written by piece arithmetic, onto n tokens counted whole: it takes words off
// the end, or puts one-token fillers before the closing period, one at a time and a bounded number of
// times, and keeps the closest text. Deterministic: the same text and n give the same result.
func (g *TextGen) settle(text string, n int) string {
	c := g.Count(text)
	best, bestOff := text, abs(c-n)
	for step := 0; c != n && step < min(64, 2*abs(c-n)+4); step++ {
		body, end := text, ""
		if strings.HasSuffix(text, ".") {
			body, end = text[:len(text)-1], "."
		}
		if c > n {
			i := strings.LastIndexByte(body, ' ')
			if i <= 0 {
				break
			}
			text = body[:i] + end
		} else {
			text = body + " " + g.fillers[(len(body)+step)%len(g.fillers)] + end
		}
		if c = g.Count(text); abs(c-n) < bestOff {
			best, bestOff = text, abs(c-n)
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// sentence draws one sentence: its words, then ".".
func (g *TextGen) sentence(r *rand.Rand) []string {
	tpl := g.templates[r.IntN(len(g.templates))]
	out := make([]string, 0, len(tpl)+1)
	for _, slot := range tpl {
		switch slot {
		case ",":
			out = append(out, ",")
		case "subj", "obj":
			last := len(out) - 1
			out[last] += koParticle(out[last], slot)
		default:
			list := g.words[slot]
			out = append(out, list[r.IntN(len(list))])
		}
	}
	if g.lang == "en" {
		for i := 0; i+1 < len(out); i++ {
			if out[i] == "a" && strings.ContainsRune("aeiou", rune(out[i+1][0])) {
				out[i] = "an"
			}
		}
	}
	return append(out, ".")
}

// koParticle picks 은/는-style particles by whether the noun ends in a final consonant.
func koParticle(noun, slot string) string {
	last, _ := utf8.DecodeLastRuneInString(noun)
	batchim := last >= 0xAC00 && last <= 0xD7A3 && (last-0xAC00)%28 != 0
	switch {
	case slot == "subj" && batchim:
		return "은"
	case slot == "subj":
		return "는"
	case batchim:
		return "을"
	}
	return "를"
}

func capitalize(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[size:]
}

func capitalizeFor(lang, s string) string {
	if lang == "en" {
		return capitalize(s)
	}
	return s
}
