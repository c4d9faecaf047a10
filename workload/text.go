package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

var (
	codecOnce sync.Once
	codec     tokenizer.Codec
	codecErr  error
)

// o200k returns the embedded o200k_base tokenizer (loaded once; no download).
func o200k() (tokenizer.Codec, error) {
	codecOnce.Do(func() { codec, codecErr = tokenizer.Get(tokenizer.O200kBase) })
	return codec, codecErr
}

// CountTokens is the o200k_base token count of s, the count every target length in plload refers to.
func CountTokens(s string) int {
	c, err := o200k()
	if err != nil {
		return 0
	}
	n, err := c.Count(s)
	if err != nil {
		return 0
	}
	return n
}

// TextGen writes deterministic synthetic prose of an exact o200k_base token length.
//
// o200k_base first splits text into pieces with a regular expression (a word with its leading space,
// a run of punctuation, ...) and then encodes each piece on its own, so the token count of text built
// from whole pieces is the sum of the pieces' counts. TextGen builds sentences from words that are
// whole pieces, keeps a running sum from a per-piece cache, and closes the last sentence with
// one-token filler words, so the result lands exactly on the target without re-encoding the text.
type TextGen struct {
	lang      string
	codec     tokenizer.Codec
	counts    map[string]int
	fillers   []string // one-token words, written after a space
	starters  []string // one-token words that can open a sentence (capitalised for en, no leading space)
	words     map[string][]string
	templates [][]string
}

// NewTextGen returns a generator for language "en" or "ko".
func NewTextGen(lang string) (*TextGen, error) {
	c, err := o200k()
	if err != nil {
		return nil, fmt.Errorf("loading the o200k_base tokenizer: %w", err)
	}
	g := &TextGen{lang: lang, codec: c, counts: map[string]int{}}
	fillers := enFillers
	switch lang {
	case "en":
		g.words, g.templates = enWords, enTemplates
	case "ko":
		g.words, g.templates, fillers = koWords, koTemplates, koFillers
	default:
		return nil, fmt.Errorf("language %q: accepted: en, ko", lang)
	}
	for _, f := range fillers {
		if g.count(" "+f) == 1 {
			g.fillers = append(g.fillers, f)
		}
		if s := capitalizeFor(lang, f); g.count(s) == 1 && g.count(" "+s) == 1 {
			g.starters = append(g.starters, s)
		}
	}
	if len(g.fillers) == 0 || len(g.starters) == 0 || g.count(".") != 1 {
		return nil, fmt.Errorf("language %q: the tokenizer splits the filler words unexpectedly", lang)
	}
	return g, nil
}

func (g *TextGen) count(piece string) int {
	if n, ok := g.counts[piece]; ok {
		return n
	}
	n, err := g.codec.Count(piece)
	if err != nil {
		n = utf8.RuneCountInString(piece) // never reached for our own words; a safe over-estimate
	}
	g.counts[piece] = n
	return n
}

// Count is the o200k_base token count of any text.
func (g *TextGen) Count(s string) int {
	n, _ := g.codec.Count(s)
	return n
}

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
	w.b.WriteString(p)
	w.tokens += w.g.count(p)
}

// Prose returns sentences of exactly n tokens (n ≥ 1) ending with end ("." or "?").
func (g *TextGen) Prose(r *rand.Rand, n int) string {
	return g.ProseWith(r, n, nil)
}

// ProseWith is Prose that starts with the given words (a persona's introduction, a document title).
// When the opening alone is longer than n, it is cut short; the result still has exactly n tokens.
func (g *TextGen) ProseWith(r *rand.Rand, n int, opening []string) string {
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
		if w.tokens+g.count(p) > avail || (word == "," && w.tokens+1 >= avail) {
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
