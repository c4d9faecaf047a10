package mock

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// tokenCache remembers the o200k_base tokens of each message text, because in a multi-turn session
// every request repeats the whole history and only the newest messages are new.
type tokenCache struct {
	codec tokenizer.Codec
	mu    sync.Mutex
	byKey map[[32]byte][]uint
	held  int // tokens held; the map is dropped when it passes limit, which is cheaper than an LRU here
	limit int
}

func newTokenCache(limit int) (*tokenCache, error) {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		return nil, err
	}
	return &tokenCache{codec: c, byKey: map[[32]byte][]uint{}, limit: limit}, nil
}

// tokens returns the token ids of text.
func (t *tokenCache) tokens(text string) []uint {
	key := sha256.Sum256([]byte(text))
	t.mu.Lock()
	ids, ok := t.byKey[key]
	t.mu.Unlock()
	if ok {
		return ids
	}
	ids, _, err := t.codec.Encode(text)
	if err != nil {
		// Invalid UTF-8 and the like still take room: about one token per 4 bytes.
		ids = make([]uint, (len(text)+3)/4)
	}
	t.mu.Lock()
	if t.held+len(ids) > t.limit {
		t.byKey, t.held = map[[32]byte][]uint{}, 0
	}
	t.byKey[key] = ids
	t.held += len(ids)
	t.mu.Unlock()
	return ids
}

// prefixCache is a block-hashed prompt cache with LRU eviction, as vLLM's automatic prefix caching
// works: the prompt is cut into whole blocks, block i's key hashes block i's tokens together with the
// key of block i−1, and a request's cached prefix is its leading run of blocks already in the cache.
type prefixCache struct {
	block    int
	capacity int // in blocks
	mu       sync.Mutex
	lru      *list.List // front = most recently used; values are uint64 keys
	entries  map[uint64]*list.Element
}

func newPrefixCache(capacityTokens, block int) *prefixCache {
	return &prefixCache{block: block, capacity: capacityTokens / block, lru: list.New(), entries: map[uint64]*list.Element{}}
}

// blockKeys returns the chained key of every whole block of ids.
func (p *prefixCache) blockKeys(ids []uint) []uint64 {
	n := len(ids) / p.block
	keys := make([]uint64, n)
	var prev uint64 = 0xcbf29ce484222325
	buf := make([]byte, 8)
	for b := range n {
		h := prev
		for _, id := range ids[b*p.block : (b+1)*p.block] {
			binary.LittleEndian.PutUint64(buf, uint64(id))
			for _, c := range buf {
				h ^= uint64(c)
				h *= 0x100000001b3
			}
		}
		keys[b] = h
		prev = h
	}
	return keys
}

// lookupAndInsert returns how many leading tokens of ids were cached, then caches all of ids' blocks.
func (p *prefixCache) lookupAndInsert(ids []uint) int {
	if p.capacity == 0 {
		return 0
	}
	keys := p.blockKeys(ids)
	p.mu.Lock()
	defer p.mu.Unlock()
	hit := 0
	for hit < len(keys) {
		if _, ok := p.entries[keys[hit]]; !ok {
			break
		}
		hit++
	}
	for _, k := range keys {
		if e, ok := p.entries[k]; ok {
			p.lru.MoveToFront(e)
			continue
		}
		p.entries[k] = p.lru.PushFront(k)
		for p.lru.Len() > p.capacity {
			last := p.lru.Back()
			delete(p.entries, last.Value.(uint64))
			p.lru.Remove(last)
		}
	}
	return hit * p.block
}

// usage is the share of the cache in use, 0–1.
func (p *prefixCache) usage() float64 {
	if p.capacity == 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return float64(p.lru.Len()) / float64(p.capacity)
}
