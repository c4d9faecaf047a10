package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// trieNode is a byte trie over added-token contents; tok ≥ 0 where a token ends.
type trieNode struct {
	next map[byte]*trieNode
	tok  int
}

// addedMatcher finds added tokens in text as HF's AddedVocabulary::find_matches does (aho-corasick,
// leftmost-longest, then single_word / lstrip / rstrip).
type addedMatcher struct {
	root   *trieNode
	first  [256]bool
	tokens []addedToken // tok index → token (ID already resolved)
}

func newAddedMatcher() *addedMatcher {
	return &addedMatcher{root: &trieNode{tok: -1}}
}

func (a *addedMatcher) add(key string, t addedToken) {
	if key == "" {
		return
	}
	n := a.root
	for i := 0; i < len(key); i++ {
		if n.next == nil {
			n.next = map[byte]*trieNode{}
		}
		c := n.next[key[i]]
		if c == nil {
			c = &trieNode{tok: -1}
			n.next[key[i]] = c
		}
		n = c
	}
	if n.tok >= 0 {
		return // the first token with this content wins
	}
	n.tok = len(a.tokens)
	a.tokens = append(a.tokens, t)
	a.first[key[0]] = true
}

func (a *addedMatcher) empty() bool { return len(a.tokens) == 0 }

// longestAt returns the longest token starting at s[i:], and its end.
func (a *addedMatcher) longestAt(s string, i int) (tok, end int) {
	tok, end = -1, -1
	n := a.root
	for j := i; j < len(s); j++ {
		n = n.next[s[j]]
		if n == nil {
			break
		}
		if n.tok >= 0 {
			tok, end = n.tok, j+1
		}
		if n.next == nil {
			break
		}
	}
	return
}

// split splits sp into pieces: added tokens (id ≥ 0) and text between them (id = -1).
func (a *addedMatcher) split(sp span, yield func(s span, id int)) {
	s := sp.s
	if a.empty() || s == "" {
		if s != "" {
			yield(sp, -1)
		}
		return
	}
	startOffset := 0
	emit := func(st, en, id int) {
		if en <= st || st < 0 || en > len(s) {
			return
		}
		yield(span{s: s[st:en], first: sp.first && st == 0}, id)
	}
	for i := 0; i < len(s); {
		if !a.first[s[i]] {
			i++
			continue
		}
		tok, end := a.longestAt(s, i)
		if tok < 0 {
			i++
			continue
		}
		start, stop := i, end
		i = end
		t := &a.tokens[tok]
		if t.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if t.LStrip {
			ns := len(strings.TrimRightFunc(s[:start], unicode.IsSpace))
			start = max(ns, startOffset)
		}
		if t.RStrip {
			stop += len(s[stop:]) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
		}
		if startOffset < start {
			emit(startOffset, start, -1)
		}
		emit(start, stop, t.ID)
		startOffset = stop
		if stop > i {
			i = stop
		}
	}
	if startOffset < len(s) {
		emit(startOffset, len(s), -1)
	}
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isAlnum(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isAlnum(r)
}
