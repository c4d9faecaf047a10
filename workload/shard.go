package workload

import "fmt"

// Shard is one shard's place in a sharded run: it runs the sessions (and open-loop arrivals) whose
// global ordinal ≡ Index (mod Count). The zero value, Count 0, is an unsharded run.
type Shard struct {
	Index, Count int
}

// Sharded reports whether the run is split at all.
func (s Shard) Sharded() bool { return s.Count > 1 }

// Owns reports whether this shard runs the session or arrival of global ordinal n.
func (s Shard) Owns(n int) bool { return !s.Sharded() || n%s.Count == s.Index }

// Split is this shard's part of a whole-run figure (concurrency, say) so that the shards' parts sum to
// it: the remainder goes one each to the lowest indexes.
func (s Shard) Split(total int) int {
	if !s.Sharded() {
		return total
	}
	part := total / s.Count
	if s.Index < total%s.Count {
		part++
	}
	return part
}

// String is "i/N" (or "" unsharded).
func (s Shard) String() string {
	if !s.Sharded() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}
