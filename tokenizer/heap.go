package tokenizer

// mergeHeap is a binary min-heap of candidate merges in the order their before method gives: both
// BPE merges (Hugging Face's, by merge rank) and tiktoken's byte-pair merges (by token rank) take
// the lowest rank first, the leftmost among equals.
type mergeHeap[T interface{ before(T) bool }] []T

func (h *mergeHeap[T]) push(x T) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *mergeHeap[T]) pop() T {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && s[r].before(s[l]) {
			c = r
		}
		if !s[c].before(s[i]) {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	*h = s
	return top
}
