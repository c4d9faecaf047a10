package tokenizer

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer/codec"
)

// Split patterns of OpenAI's tiktoken (tiktoken_ext/openai_public.py), written as tiktoken-go
// writes them so that regexp2 finds the engines tiktoken-go generated for them (possessive
// quantifiers in cl100k's original pattern cannot change its matches and are dropped).
const (
	o200kPattern  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// tiktokenEncoding is an OpenAI byte-level BPE (tiktoken's CoreBPE) over a rank table: a piece of
// the split that is a token is that token; otherwise its bytes are merged, lowest rank first
// (leftmost on ties), while the merged bytes are a token. Special tokens are not matched.
type tiktokenEncoding struct {
	name  string
	sha   string
	ranks map[string]int32
	re    *regexp2.Regexp // the split regex; scan is its hand-written equivalent
	scan  scanPattern
	cache pieceCache // pieces of more than one token → their ids
}

func (e *tiktokenEncoding) Name() string   { return e.name }
func (e *tiktokenEncoding) SHA256() string { return e.sha }

func (e *tiktokenEncoding) Encode(text string) []int {
	out := make([]int, 0, len(text)/4+1)
	e.scan.each(text, func(st, en int) {
		out = e.encodePiece(text[st:en], out)
	})
	return out
}

func (e *tiktokenEncoding) Count(text string) int {
	n := 0
	var buf []int
	e.scan.each(text, func(st, en int) {
		p := text[st:en]
		if _, ok := e.ranks[p]; ok {
			n++
			return
		}
		if ids, ok := e.cache.get(p); ok {
			n += len(ids)
			return
		}
		buf = e.bytePairMerge(p, buf[:0])
		e.cache.put(p, buf)
		n += len(buf)
	})
	return n
}

func (e *tiktokenEncoding) encodePiece(p string, out []int) []int {
	if r, ok := e.ranks[p]; ok {
		return append(out, int(r))
	}
	return e.cache.appendIDs(p, out, e.bytePairMerge)
}

type ttSym struct {
	start, end int32 // byte range in the piece; end < 0: merged away
	prev, next int32
}

type ttMerge struct {
	rank     int32
	pos      int32 // index of the left symbol (= its start byte)
	mid, end int32
}

type ttScratch struct {
	syms []ttSym
	heap mergeHeap[ttMerge]
}

var ttPool = sync.Pool{New: func() any { return &ttScratch{} }}

// before orders candidate merges: the lowest rank first, the leftmost among equals.
//
//lint:ignore U1000 used through mergeHeap's type constraint, which staticcheck does not follow (dominikh/go-tools#1294)
func (m ttMerge) before(o ttMerge) bool {
	if m.rank != o.rank {
		return m.rank < o.rank
	}
	return m.pos < o.pos
}

// bytePairMerge is tiktoken's byte_pair_merge with a heap: each step merges the adjacent pair
// whose concatenation has the lowest rank, the leftmost among equals.
func (e *tiktokenEncoding) bytePairMerge(p string, out []int) []int {
	sc := ttPool.Get().(*ttScratch)
	syms := sc.syms[:0]
	for i := 0; i < len(p); i++ {
		syms = append(syms, ttSym{start: int32(i), end: int32(i + 1), prev: int32(i - 1), next: int32(i + 1)})
	}
	syms[len(syms)-1].next = -1
	h := sc.heap[:0]
	push, pop := h.push, h.pop
	for i := 0; i+1 < len(p); i++ {
		if r, ok := e.ranks[p[i:i+2]]; ok {
			push(ttMerge{rank: r, pos: int32(i), mid: int32(i + 1), end: int32(i + 2)})
		}
	}
	for len(h) > 0 {
		m := pop()
		l := &syms[m.pos]
		if l.end != m.mid || l.next < 0 || syms[l.next].end != m.end {
			continue
		}
		r := syms[l.next]
		syms[l.next].end = -1
		l.end = r.end
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = m.pos
		}
		if l.prev >= 0 {
			pv := syms[l.prev]
			if rk, ok := e.ranks[p[pv.start:l.end]]; ok {
				push(ttMerge{rank: rk, pos: pv.start, mid: l.start, end: l.end})
			}
		}
		if l.next >= 0 {
			nx := syms[l.next]
			if rk, ok := e.ranks[p[l.start:nx.end]]; ok {
				push(ttMerge{rank: rk, pos: l.start, mid: l.end, end: nx.end})
			}
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		s := syms[i]
		out = append(out, int(e.ranks[p[s.start:s.end]]))
	}
	sc.syms, sc.heap = syms[:0], h[:0]
	ttPool.Put(sc)
	return out
}

// newTiktoken rebuilds the rank table of a tiktoken-go codec by decoding every id (tiktoken-go keeps
// the table unexported). Ids that codec cannot decode and single bytes that no id gives are paired
// up in order (tiktoken-go v0.10.0's o200k_base lacks the DEL byte 0x7f). SHA256 is the sha256 of the
// table in tiktoken's own file format, "base64(token bytes) rank\n" by ascending rank, i.e. of
// OpenAI's o200k_base.tiktoken / cl100k_base.tiktoken.
func newTiktoken(name string, c *codec.Codec, nTokens int, pattern string, scan scanKind) (*tiktokenEncoding, error) {
	ranks := make(map[string]int32, nTokens)
	tokens := make([]string, nTokens)
	var missing []int
	for id := 0; id < nTokens; id++ {
		s, err := c.Decode([]uint{uint(id)})
		if err != nil || s == "" {
			missing = append(missing, id)
			continue
		}
		tokens[id] = s
		ranks[s] = int32(id)
	}
	var missingBytes []string
	for b := 0; b < 256; b++ {
		if _, ok := ranks[string([]byte{byte(b)})]; !ok {
			missingBytes = append(missingBytes, string([]byte{byte(b)}))
		}
	}
	if len(missing) != len(missingBytes) {
		return nil, fmt.Errorf("tokenizer: %s: %d ranks without bytes but %d bytes without a rank", name, len(missing), len(missingBytes))
	}
	for i, id := range missing {
		tokens[id] = missingBytes[i]
		ranks[missingBytes[i]] = int32(id)
	}
	h := sha256.New()
	var line []byte
	for id, t := range tokens {
		line = base64.StdEncoding.AppendEncode(line[:0], []byte(t))
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(id), 10)
		line = append(line, '\n')
		h.Write(line)
	}
	re, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	return &tiktokenEncoding{name: name, sha: hex.EncodeToString(h.Sum(nil)), ranks: ranks, re: re, scan: scanPattern{scan}}, nil
}

var (
	o200kOnce, cl100kOnce sync.Once
	o200kEnc, cl100kEnc   *tiktokenEncoding
	o200kErr, cl100kErr   error
)

func o200kBase() (Tokenizer, error) {
	o200kOnce.Do(func() {
		o200kEnc, o200kErr = newTiktoken("o200k_base", codec.NewO200kBase(), 199998, o200kPattern, scanO200k)
	})
	return o200kEnc, o200kErr
}

func cl100kBase() (Tokenizer, error) {
	cl100kOnce.Do(func() {
		cl100kEnc, cl100kErr = newTiktoken("cl100k_base", codec.NewCl100kBase(), 100256, cl100kPattern, scanCl100k)
	})
	return cl100kEnc, cl100kErr
}
