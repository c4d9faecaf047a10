package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// A span is a piece of the text being encoded. first reports that it begins at offset 0 of the
// original text (Metaspace's prepend_scheme "first" asks that).
type span struct {
	s     string
	first bool
}

// match is one split of a piece: [start, end) in bytes, and whether the pattern matched it.
type match struct {
	start, end int
	isMatch    bool
}

// pattern finds the splits of a piece as Hugging Face's Pattern::find_matches does: matches and the
// gaps between them, in order, covering the whole piece.
type pattern interface {
	findMatches(s string, out []match) []match
}

// regexPattern is a Split or Replace regex (Oniguruma syntax in HF; regexp2 here).
type regexPattern struct{ re *regexp2.Regexp }

// findAll returns the byte offsets of the successive non-overlapping matches of re in s.
func findAll(re *regexp2.Regexp, s string, yield func(start, end int)) {
	if s == "" {
		return
	}
	idx, err := re.FindAllStringIndex(s, -1)
	if err != nil {
		// Only a backtracking limit can fail here; treat the rest as one unmatched piece.
		return
	}
	for _, m := range idx {
		yield(m[0], m[1])
	}
}

func (p regexPattern) findMatches(s string, out []match) []match {
	if s == "" {
		return append(out, match{0, 0, false})
	}
	prev := 0
	findAll(p.re, s, func(st, en int) {
		if prev != st {
			out = append(out, match{prev, st, false})
		}
		out = append(out, match{st, en, true})
		prev = en
	})
	if prev != len(s) {
		out = append(out, match{prev, len(s), false})
	}
	return out
}

// stringPattern is a literal pattern.
type stringPattern string

func (p stringPattern) findMatches(s string, out []match) []match {
	if s == "" {
		return append(out, match{0, 0, false})
	}
	prev := 0
	if p != "" {
		for i := 0; i <= len(s); {
			j := strings.Index(s[i:], string(p))
			if j < 0 {
				break
			}
			st := i + j
			en := st + len(p)
			if prev != st {
				out = append(out, match{prev, st, false})
			}
			out = append(out, match{st, en, true})
			prev = en
			i = en
		}
	}
	if prev != len(s) {
		out = append(out, match{prev, len(s), false})
	}
	return out
}

// charPattern matches single characters for which f is true.
type charPattern func(rune) bool

func (f charPattern) findMatches(s string, out []match) []match {
	if s == "" {
		return append(out, match{0, 0, false})
	}
	last := 0
	for b, c := range s {
		if f(c) {
			w := utf8.RuneLen(c)
			if w < 0 {
				w = 1
			}
			if _, sz := utf8.DecodeRuneInString(s[b:]); sz != w {
				w = sz
			}
			if last < b {
				out = append(out, match{last, b, false})
			}
			out = append(out, match{b, b + w, true})
			last = b + w
		}
	}
	if len(s) > last {
		out = append(out, match{last, len(s), false})
	}
	return out
}

// invertPattern flips which splits are matches.
type invertPattern struct{ p pattern }

func (p invertPattern) findMatches(s string, out []match) []match {
	n := len(out)
	out = p.p.findMatches(s, out)
	for i := n; i < len(out); i++ {
		out[i].isMatch = !out[i].isMatch
	}
	return out
}

type behavior int

const (
	removed behavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

// splitSpan splits sp by p with the given behavior (HF NormalizedString::split), appending the
// non-empty pieces to out.
func splitSpan(sp span, p pattern, b behavior, out []span, scratch *[]match) []span {
	ms := p.findMatches(sp.s, (*scratch)[:0])
	*scratch = ms
	if b == isolated {
		for _, m := range ms {
			if m.end > m.start {
				out = append(out, span{s: sp.s[m.start:m.end], first: sp.first && m.start == 0})
			}
		}
		return out
	}
	type piece struct {
		start, end int
		remove     bool
	}
	var pieces []piece
	switch b {
	case removed:
		pieces = make([]piece, 0, len(ms))
		for _, m := range ms {
			pieces = append(pieces, piece{m.start, m.end, m.isMatch})
		}
	case contiguous:
		prev := false
		for _, m := range ms {
			if m.isMatch == prev && len(pieces) > 0 {
				pieces[len(pieces)-1].end = m.end
			} else {
				pieces = append(pieces, piece{m.start, m.end, false})
			}
			prev = m.isMatch
		}
	case mergedWithPrevious:
		prev := false
		for _, m := range ms {
			if m.isMatch && !prev && len(pieces) > 0 {
				pieces[len(pieces)-1].end = m.end
			} else {
				pieces = append(pieces, piece{m.start, m.end, false})
			}
			prev = m.isMatch
		}
	case mergedWithNext:
		prev := false
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			if m.isMatch && !prev && len(pieces) > 0 {
				pieces[len(pieces)-1].start = m.start
			} else {
				pieces = append(pieces, piece{m.start, m.end, false})
			}
			prev = m.isMatch
		}
		for i, j := 0, len(pieces)-1; i < j; i, j = i+1, j-1 {
			pieces[i], pieces[j] = pieces[j], pieces[i]
		}
	}
	for _, pc := range pieces {
		if pc.remove || pc.end <= pc.start {
			continue
		}
		out = append(out, span{s: sp.s[pc.start:pc.end], first: sp.first && pc.start == 0})
	}
	return out
}

// ---- normalizers ----

type normalizer interface {
	normalize(s string) string
}

type normSeq []normalizer

func (n normSeq) normalize(s string) string {
	for _, x := range n {
		s = x.normalize(s)
	}
	return s
}

type unicodeNorm struct{ f norm.Form }

func (n unicodeNorm) normalize(s string) string {
	if isASCII(s) || n.f.IsNormalString(s) {
		return s
	}
	return n.f.String(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

type prependNorm string

func (n prependNorm) normalize(s string) string {
	if s == "" {
		return s
	}
	return string(n) + s
}

type replaceNorm struct {
	p       pattern
	content string
}

func (n replaceNorm) normalize(s string) string {
	if sp, ok := n.p.(stringPattern); ok {
		if sp == "" {
			return s
		}
		return strings.ReplaceAll(s, string(sp), n.content)
	}
	ms := n.p.findMatches(s, nil)
	var b strings.Builder
	for _, m := range ms {
		if m.isMatch {
			b.WriteString(n.content)
		} else {
			b.WriteString(s[m.start:m.end])
		}
	}
	return b.String()
}

type stripNorm struct{ left, right bool }

func (n stripNorm) normalize(s string) string {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

// ---- pre-tokenizers ----

type preTokenizer interface {
	preTokenize(in []span, out []span, st *preState) []span
}

type preState struct {
	matches []match
}

type splitPre struct {
	p pattern
	b behavior
}

func (p splitPre) preTokenize(in, out []span, st *preState) []span {
	for _, sp := range in {
		out = splitSpan(sp, p.p, p.b, out, &st.matches)
	}
	return out
}

// byteLevelPre splits with the GPT-2 regex when useRegex; the byte-to-character mapping itself is
// done by the model when mapBytes is false (ByteLevel is the last pre-tokenizer), here otherwise.
type byteLevelPre struct {
	addPrefixSpace bool
	re             pattern // nil: use_regex false
	mapBytes       bool
}

func (p byteLevelPre) preTokenize(in, out []span, st *preState) []span {
	for _, sp := range in {
		if p.addPrefixSpace && !strings.HasPrefix(sp.s, " ") {
			sp.s = " " + sp.s
		}
		n := len(out)
		if p.re != nil {
			out = splitSpan(sp, p.re, isolated, out, &st.matches)
		} else if sp.s != "" {
			out = append(out, sp)
		}
		if p.mapBytes {
			for i := n; i < len(out); i++ {
				out[i].s = byteLevelString(out[i].s)
			}
		}
	}
	return out
}

type metaspacePre struct {
	rep    string
	scheme int // 0 always, 1 first, 2 never
	split  bool
}

func (p metaspacePre) preTokenize(in, out []span, st *preState) []span {
	for _, sp := range in {
		sp.s = strings.ReplaceAll(sp.s, " ", p.rep)
		switch p.scheme {
		case 0:
			if !strings.HasPrefix(sp.s, p.rep) {
				sp.s = p.rep + sp.s
			}
		case 1:
			if !strings.HasPrefix(sp.s, p.rep) && sp.first {
				sp.s = p.rep + sp.s
			}
		}
		if p.split {
			r, _ := utf8.DecodeRuneInString(p.rep)
			out = splitSpan(sp, charPattern(func(c rune) bool { return c == r }), mergedWithNext, out, &st.matches)
		} else if sp.s != "" {
			out = append(out, sp)
		}
	}
	return out
}

type digitsPre struct{ individual bool }

func (p digitsPre) preTokenize(in, out []span, st *preState) []span {
	b := contiguous
	if p.individual {
		b = isolated
	}
	for _, sp := range in {
		out = splitSpan(sp, charPattern(unicode.IsNumber), b, out, &st.matches)
	}
	return out
}

// ---- byte-level alphabet (GPT-2's bytes_to_unicode) ----

var byteChar [256]rune
var byteCharStr [256]string

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteChar[b] = rune(b)
		} else {
			byteChar[b] = rune(256 + n)
			n++
		}
		byteCharStr[b] = string(byteChar[b])
	}
}

func byteLevelString(s string) string {
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteChar[s[i]])
	}
	return b.String()
}
