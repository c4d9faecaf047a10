package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written equivalents of the split regexes that nearly every byte-level BPE uses. The regexes
// are alternations tried left to right by a backtracking engine, and every character starts a match
// of one alternative, so the matches tile the text; each function below returns the end of the
// match that starts at i, as regexp2 (and Oniguruma / fancy-regex) would. TestScannersMatchRegex
// and FuzzScanners check them against regexp2 on the same patterns.

const (
	// cl100k_base, Llama 3: \p{N}{1,3}; Qwen2/3: \p{N}.
	cl100kStyleRegex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwenRegex        = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

type scanKind int

const (
	scanCl100k scanKind = iota // digits up to 3
	scanQwen                   // digits one at a time
	scanO200k
	scanGPT2
)

// knownScanners maps regex source (as written in tokenizer.json / tiktoken) to a scanner.
var knownScanners = map[string]scanKind{
	cl100kStyleRegex: scanCl100k,
	qwenRegex:        scanQwen,
	o200kPattern:     scanO200k,
	gpt2Regex:        scanGPT2,
}

type scanPattern struct{ kind scanKind }

func (p scanPattern) findMatches(s string, out []match) []match {
	if s == "" {
		return append(out, match{0, 0, false})
	}
	p.each(s, func(st, en int) { out = append(out, match{st, en, true}) })
	return out
}

// each calls yield with every match of the pattern in s, in order.
func (p scanPattern) each(s string, yield func(st, en int)) {
	for i := 0; i < len(s); {
		var e int
		switch p.kind {
		case scanCl100k:
			e = scanCl100kAt(s, i, 3)
		case scanQwen:
			e = scanCl100kAt(s, i, 1)
		case scanO200k:
			e = scanO200kAt(s, i)
		default:
			e = scanGPT2At(s, i)
		}
		if e <= i { // cannot happen; never loop forever
			_, w := utf8.DecodeRuneInString(s[i:])
			e = i + w
		}
		yield(i, e)
		i = e
	}
}

func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isL(r rune) bool {
	if r < utf8.RuneSelf {
		return (r|0x20) >= 'a' && (r|0x20) <= 'z'
	}
	return unicode.IsLetter(r)
}

func isN(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isS(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return r >= 0 && unicode.IsSpace(r)
}

// isPunct: [^\s\p{L}\p{N}]
func isPunct(r rune) bool { return r >= 0 && !isS(r) && !isL(r) && !isN(r) }

// isPre: [^\r\n\p{L}\p{N}]
func isPre(r rune) bool { return r >= 0 && r != '\r' && r != '\n' && !isL(r) && !isN(r) }

// contraction returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or 0.
func contraction(s string, i int, fold bool) int {
	if i >= len(s) || s[i] != '\'' {
		return 0
	}
	c, w := runeAt(s, i+1)
	if c < 0 {
		return 0
	}
	low := func(r rune) rune {
		if fold && r >= 'A' && r <= 'Z' {
			return r + 32
		}
		return r
	}
	switch low(c) {
	case 's', 't', 'm', 'd':
		return 1 + w
	case 'ſ':
		if fold {
			return 1 + w
		}
	case 'r', 'v':
		if c2, _ := runeAt(s, i+1+w); c2 >= 0 && low(c2) == 'e' {
			return 2 + w
		}
	case 'l':
		if c2, _ := runeAt(s, i+1+w); c2 >= 0 && low(c2) == 'l' {
			return 2 + w
		}
	}
	return 0
}

// whitespace handles \s*[\r\n]+|\s+(?!\S)|\s+ at i (s[i] is \s); nl: try the first alternative.
func whitespace(s string, i int, nl bool) int {
	j, lastNL, prev := i, -1, i
	for j < len(s) {
		r, w := runeAt(s, j)
		if !isS(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = j + w
		}
		prev = j
		j += w
	}
	if nl && lastNL >= 0 {
		return lastNL
	}
	if j == len(s) {
		return j
	}
	if prev > i { // \s+(?!\S): give back the last whitespace character
		return prev
	}
	return j
}

func scanCl100kAt(s string, i int, maxDigits int) int {
	if n := contraction(s, i, true); n > 0 {
		return i + n
	}
	r, w := runeAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isPre(r) {
		if r2, w2 := runeAt(s, i+w); isL(r2) {
			j := i + w + w2
			for {
				r3, w3 := runeAt(s, j)
				if !isL(r3) {
					return j
				}
				j += w3
			}
		}
	}
	if isL(r) {
		j := i + w
		for {
			r3, w3 := runeAt(s, j)
			if !isL(r3) {
				return j
			}
			j += w3
		}
	}
	if isN(r) {
		j := i + w
		for k := 1; k < maxDigits; k++ {
			r3, w3 := runeAt(s, j)
			if !isN(r3) {
				break
			}
			j += w3
		}
		return j
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	if j := punctRun(s, i, r, w, false); j > 0 {
		return j
	}
	return whitespace(s, i, true)
}

// punctRun matches " ?[^\s\p{L}\p{N}]+[\r\n]*" (slash: [\r\n/]*) at i, or returns 0.
func punctRun(s string, i int, r rune, w int, slash bool) int {
	j := i
	if r == ' ' {
		if r2, _ := runeAt(s, i+w); isPunct(r2) {
			j = i + w
		}
	}
	r2, w2 := runeAt(s, j)
	if !isPunct(r2) {
		return 0
	}
	j += w2
	for {
		r3, w3 := runeAt(s, j)
		if !isPunct(r3) {
			break
		}
		j += w3
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || (slash && s[j] == '/')) {
		j++
	}
	return j
}

// o200k classes: U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W = [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isU(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'A' && r <= 'Z'
	}
	return r >= 0 && (unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M))
}

func isW(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z'
	}
	return r >= 0 && (unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M))
}

// o200kWord1 matches U*W+C? at j, or returns -1.
func o200kWord1(s string, j int) int {
	start := j
	for {
		r, w := runeAt(s, j)
		if !isU(r) {
			break
		}
		j += w
	}
	// Backtrack U* from its end until W+ can start.
	for k := j; k >= start; {
		if r, w := runeAt(s, k); isW(r) {
			e := k + w
			for {
				r2, w2 := runeAt(s, e)
				if !isW(r2) {
					break
				}
				e += w2
			}
			return e + contraction(s, e, true)
		}
		if k == start {
			break
		}
		_, w := utf8.DecodeLastRuneInString(s[:k])
		k -= w
	}
	return -1
}

// o200kWord2 matches U+W*C? at j, or returns -1.
func o200kWord2(s string, j int) int {
	r, w := runeAt(s, j)
	if !isU(r) {
		return -1
	}
	j += w
	for {
		r, w := runeAt(s, j)
		if !isU(r) {
			break
		}
		j += w
	}
	for {
		r, w := runeAt(s, j)
		if !isW(r) {
			break
		}
		j += w
	}
	return j + contraction(s, j, true)
}

func scanO200kAt(s string, i int) int {
	r, w := runeAt(s, i)
	pre := isPre(r)
	if pre {
		if e := o200kWord1(s, i+w); e >= 0 {
			return e
		}
	}
	if e := o200kWord1(s, i); e >= 0 {
		return e
	}
	if pre {
		if e := o200kWord2(s, i+w); e >= 0 {
			return e
		}
	}
	if e := o200kWord2(s, i); e >= 0 {
		return e
	}
	if isN(r) {
		j := i + w
		for k := 1; k < 3; k++ {
			r3, w3 := runeAt(s, j)
			if !isN(r3) {
				break
			}
			j += w3
		}
		return j
	}
	if j := punctRun(s, i, r, w, true); j > 0 {
		return j
	}
	return whitespace(s, i, true)
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func scanGPT2At(s string, i int) int {
	if n := contraction(s, i, false); n > 0 {
		return i + n
	}
	r, w := runeAt(s, i)
	j := i
	if r == ' ' {
		j = i + w
	}
	r2, w2 := runeAt(s, j)
	for _, class := range [...]func(rune) bool{isL, isN, isPunct} {
		if class(r2) {
			e := j + w2
			for {
				r3, w3 := runeAt(s, e)
				if !class(r3) {
					return e
				}
				e += w3
			}
		}
	}
	return whitespace(s, i, false)
}
