package tokenizer

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// bpeModel is Hugging Face's BPE model (models/bpe/model.rs) without dropout.
type bpeModel struct {
	vocab        map[string]int32
	merges       *pairTable // a<<32|b → rank<<32|new id
	unk          int32      // -1: no unk_token
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix
	// byteLevel: pieces arrive as raw bytes, each standing for its GPT-2 byte-level character.
	byteLevel   bool
	byteIDs     [256]int32 // id of each byte's byte-level character, -1 if not in vocab
	fallbackIDs [256]int32 // id of "<0xXX>", -1 if absent

	cache pieceCache
}

// pieceCache remembers the ids of pre-tokenized pieces (up to cacheMaxPiece bytes); it is emptied
// when it holds cacheMaxEntries pieces.
type pieceCache struct {
	m sync.Map // piece → []int32
	n atomic.Int64
}

func (c *pieceCache) get(piece string) ([]int32, bool) {
	if len(piece) > cacheMaxPiece {
		return nil, false
	}
	v, ok := c.m.Load(piece)
	if !ok {
		return nil, false
	}
	return v.([]int32), true
}

// appendIDs appends piece's ids to out: from the cache, else from encode, whose result it keeps.
func (c *pieceCache) appendIDs(piece string, out []int, encode func(string, []int) []int) []int {
	if ids, ok := c.get(piece); ok {
		for _, id := range ids {
			out = append(out, int(id))
		}
		return out
	}
	n := len(out)
	out = encode(piece, out)
	c.put(piece, out[n:])
	return out
}

func (c *pieceCache) put(piece string, ids []int) {
	if len(piece) > cacheMaxPiece {
		return
	}
	v := make([]int32, len(ids))
	for i, id := range ids {
		v[i] = int32(id)
	}
	if c.n.Add(1) > cacheMaxEntries {
		c.m.Clear()
		c.n.Store(0)
	}
	c.m.Store(strings.Clone(piece), v)
}

const (
	cacheMaxEntries = 1 << 18
	cacheMaxPiece   = 256
)

func (m *bpeModel) init() {
	for b := 0; b < 256; b++ {
		m.byteIDs[b] = -1
		if id, ok := m.vocab[byteCharStr[b]]; ok {
			m.byteIDs[b] = id
		}
		m.fallbackIDs[b] = -1
		if id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.fallbackIDs[b] = id
		}
	}
}

type bpeSymbol struct {
	id         int32
	prev, next int32
	alive      bool
}

type bpeMerge struct {
	rank  uint32
	pos   int32
	newID int32
}

// before orders candidate merges: the lowest rank first, the leftmost among equals.
//
//lint:ignore U1000 used through mergeHeap's type constraint, which staticcheck does not follow (dominikh/go-tools#1294)
func (m bpeMerge) before(o bpeMerge) bool {
	if m.rank != o.rank {
		return m.rank < o.rank
	}
	return m.pos < o.pos
}

type bpeScratch struct {
	syms []bpeSymbol
	heap mergeHeap[bpeMerge]
}

var bpeScratchPool = sync.Pool{New: func() any { return &bpeScratch{} }}

// tokenize appends the ids of one pre-tokenized piece to out.
func (m *bpeModel) tokenize(piece string, out []int) []int {
	if piece == "" {
		return out
	}
	return m.cache.appendIDs(piece, out, m.tokenizeUncached)
}

func (m *bpeModel) tokenizeUncached(piece string, out []int) []int {
	if m.ignoreMerges {
		w := piece
		if m.byteLevel {
			w = byteLevelString(piece)
		}
		if id, ok := m.vocab[w]; ok {
			return append(out, int(id))
		}
	}
	sc := bpeScratchPool.Get().(*bpeScratch)
	syms := sc.syms[:0]
	add := func(id int32) {
		syms = append(syms, bpeSymbol{id: id, prev: int32(len(syms) - 1), next: int32(len(syms) + 1), alive: true})
	}
	unkID, unkPending := int32(-1), false
	flushUnk := func() {
		if unkPending {
			add(unkID)
			unkPending = false
		}
	}
	plain := m.prefix == "" && m.suffix == ""
	for i := 0; i < len(piece); {
		var w int
		var s string
		if m.byteLevel {
			w = 1
			if plain {
				if id := m.byteIDs[piece[0+i]]; id >= 0 {
					flushUnk()
					add(id)
					i++
					continue
				}
			}
			s = byteCharStr[piece[i]]
		} else {
			_, w = utf8.DecodeRuneInString(piece[i:])
			s = piece[i : i+w]
		}
		isFirst, isLast := i == 0, i+w >= len(piece)
		i += w
		if !isFirst && m.prefix != "" {
			s = m.prefix + s
		}
		if isLast && m.suffix != "" {
			s += m.suffix
		}
		if id, ok := m.vocab[s]; ok {
			flushUnk()
			add(id)
			continue
		}
		if m.byteFallback {
			ok := true
			for j := 0; j < len(s); j++ {
				if m.fallbackIDs[s[j]] < 0 {
					ok = false
					break
				}
			}
			if ok {
				// HF adds the byte tokens without flushing a pending unk first.
				for j := 0; j < len(s); j++ {
					add(m.fallbackIDs[s[j]])
				}
				continue
			}
		}
		if m.unk >= 0 {
			if unkPending && m.fuseUnk {
				continue
			}
			flushUnk()
			unkID, unkPending = m.unk, true
		}
	}
	flushUnk()
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	// merge_all
	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if v, ok := m.merges.get(uint64(uint32(syms[i].id))<<32 | uint64(uint32(syms[i+1].id))); ok {
			h.push(bpeMerge{rank: uint32(v >> 32), pos: int32(i), newID: int32(uint32(v))})
		}
	}
	for len(h) > 0 {
		top := h.pop()
		cur := &syms[top.pos]
		if !cur.alive || cur.next < 0 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		v, ok := m.merges.get(uint64(uint32(cur.id))<<32 | uint64(uint32(right.id)))
		if !ok || int32(uint32(v)) != top.newID {
			continue
		}
		cur.id = top.newID
		cur.next = right.next
		syms[nextPos].alive = false
		if right.next >= 0 && int(right.next) < len(syms) {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			p := syms[cur.prev]
			if v, ok := m.merges.get(uint64(uint32(p.id))<<32 | uint64(uint32(cur.id))); ok {
				h.push(bpeMerge{rank: uint32(v >> 32), pos: cur.prev, newID: int32(uint32(v))})
			}
		}
		if cur.next >= 0 && int(cur.next) < len(syms) {
			nx := syms[cur.next]
			if v, ok := m.merges.get(uint64(uint32(cur.id))<<32 | uint64(uint32(nx.id))); ok {
				h.push(bpeMerge{rank: uint32(v >> 32), pos: top.pos, newID: int32(uint32(v))})
			}
		}
	}
	for _, s := range syms {
		if s.alive {
			out = append(out, int(s.id))
		}
	}
	sc.syms, sc.heap = syms[:0], h[:0]
	bpeScratchPool.Put(sc)
	return out
}
