package tokenizer

// pairTable maps a pair of token ids (a<<32|b) to rank<<32|new id: open addressing with linear
// probing, faster to build and to query than a Go map for the ~10⁵–10⁶ merges of a tokenizer.json.
type pairTable struct {
	keys  []uint64
	vals  []uint64
	shift uint
	n     int
}

const emptyPair = ^uint64(0)

func newPairTable(hint int) *pairTable {
	size, shift := 16, uint(60)
	for size < 2*hint {
		size <<= 1
		shift--
	}
	t := &pairTable{keys: make([]uint64, size), vals: make([]uint64, size), shift: shift}
	for i := range t.keys {
		t.keys[i] = emptyPair
	}
	return t
}

func (t *pairTable) slot(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> t.shift }

func (t *pairTable) get(k uint64) (uint64, bool) {
	mask := uint64(len(t.keys) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			return t.vals[i], true
		case emptyPair:
			return 0, false
		}
	}
}

// put sets k to v (a later merge of the same pair replaces the earlier, as HF's HashMap does).
func (t *pairTable) put(k, v uint64) {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	mask := uint64(len(t.keys) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			t.vals[i] = v
			return
		case emptyPair:
			t.keys[i], t.vals[i] = k, v
			t.n++
			return
		}
	}
}

func (t *pairTable) grow() {
	old := *t
	*t = *newPairTable(len(old.keys))
	for i, k := range old.keys {
		if k != emptyPair {
			t.put(k, old.vals[i])
		}
	}
}
