package mock

import (
	"sync"
	"sync/atomic"
	"time"
)

// tokenMeter counts generated tokens: every token sent, streamed or not, on every endpoint. Its total
// is vllm:generation_tokens_total and the GPU model's energy; its last second is the GPU's power.
type tokenMeter struct {
	total atomic.Int64
	start time.Time // slices are counted from here, on the monotonic clock
	mu    sync.Mutex
	// slices holds the tokens of each rateSlice of the last rateSlices ones, slice k at k % rateSlices.
	slices [rateSlices]struct{ index, tokens int64 }
}

// The rate window: one second in 10 ms slices, so the rate moves in steps of at most 1 % of its window.
const (
	rateSlice  = 10 * time.Millisecond
	rateSlices = int64(time.Second / rateSlice)
)

func newTokenMeter() *tokenMeter { return &tokenMeter{start: time.Now()} }

// add counts n tokens generated now.
func (t *tokenMeter) add(n int) {
	t.total.Add(int64(n))
	k := int64(time.Since(t.start) / rateSlice)
	t.mu.Lock()
	sl := &t.slices[k%rateSlices]
	if sl.index != k {
		sl.index, sl.tokens = k, 0
	}
	sl.tokens += int64(n)
	t.mu.Unlock()
}

// lastSecond is the tokens generated in the rateSlices slices up to now's, now's partial one included:
// a window between 0.99 s and 1 s long that ends at now.
func (t *tokenMeter) lastSecond(now time.Time) int64 {
	k := int64(now.Sub(t.start) / rateSlice)
	var n int64
	t.mu.Lock()
	for _, sl := range t.slices {
		if sl.index > k-rateSlices && sl.index <= k {
			n += sl.tokens
		}
	}
	t.mu.Unlock()
	return n
}
