package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/plload/plload/workload"
)

// A sharded run (docs/deployment.md) is the unsharded run cut by global ordinal: every shard builds the same
// pool and draws the same schedule from the seed, and runs the sessions (concurrency) or arrivals
// (arrival_rate, request_rate, replay) whose ordinal ≡ Shard.Index (mod Shard.Count). Pool index is
// the global ordinal, so conversation ids (sKK-JJJJJJ) are the unsharded run's and no two shards
// write the same one.

// owned is how many of the ordinals 0..n-1 the shard runs.
func owned(sh workload.Shard, n int) int {
	if !sh.Sharded() {
		return n
	}
	if n <= sh.Index {
		return 0
	}
	return (n - sh.Index + sh.Count - 1) / sh.Count
}

// sessionPick is a session the load takes from the pool: the plan, its index in the pool, the
// global ordinal of this instance, and whether the pool had wrapped around to it.
type sessionPick struct {
	plan           *workload.SessionPlan
	index, ordinal int
	reused         bool
}

// conversationID is the instance's conversation id: the plan's own, or for a reused entry the
// plan's prefix with the instance's global ordinal (`s01-000015` replaying entry 3 of a pool of
// 12), so no two instances of a run, sharded or not, share an id (docs/deployment.md); the record's
// metadata.dataset_session says which entry was replayed.
func (p sessionPick) conversationID() string {
	if !p.reused {
		return p.plan.ID
	}
	id := p.plan.ID
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	return fmt.Sprintf("%s%06d", id[:i], p.ordinal)
}

// poolAt is the session of global ordinal n (an open-loop arrival's), wrapping around the pool (and
// saying so) when it is shorter than the schedule.
func (s *stageRun) poolAt(n int) sessionPick {
	size := len(s.pool.Sessions)
	return sessionPick{plan: &s.pool.Sessions[n%size], index: n % size, ordinal: n, reused: n >= size}
}

// nextSession takes the concurrency model's next session: the pool's next in order, wrapping
// around (and saying so) when it runs dry. A shard takes only its own residue class of the pool,
// in order, and wraps within it; a pool shorter than the shard count leaves a shard none of its
// own, and it then replays the pool's from its index on, every one a reuse. The shard's n-th
// session is global ordinal Index + n·Count, so ordinals stay in the shard's residue class.
func (s *stageRun) nextSession() sessionPick {
	n := int(s.counts.next.Add(1) - 1)
	sh, size := s.cfg.Shard, len(s.pool.Sessions)
	if !sh.Sharded() {
		return s.poolAt(n)
	}
	ordinal := sh.Index + n*sh.Count
	m := owned(sh, size)
	if m == 0 {
		i := ordinal % size
		return sessionPick{plan: &s.pool.Sessions[i], index: i, ordinal: ordinal, reused: true}
	}
	i := sh.Index + (n%m)*sh.Count
	return sessionPick{plan: &s.pool.Sessions[i], index: i, ordinal: ordinal, reused: n >= m}
}

// split is this shard's part of a whole-run cap (concurrency, max_concurrency, max_in_flight); at
// least 1 for a cap that must admit something.
func (s *stageRun) split(total int, atLeastOne bool) int {
	n := s.cfg.Shard.Split(total)
	if atLeastOne {
		return max(1, n)
	}
	return n
}

// startInstant asks Config.StageStart (the coordinator's barrier) when the stage starts, and sleeps
// until then; the zero time when there is no barrier (the stage starts now). A start already past
// is kept as the origin, so the shards' boundaries stay the same instants: the open loop's arrivals
// due before now go at once, as late arrivals do.
func (s *stageRun) startInstant(ctx context.Context) (time.Time, error) {
	if s.cfg.StageStart == nil {
		return time.Time{}, nil
	}
	at, err := s.cfg.StageStart(ctx, s.pool.Stage)
	if err != nil {
		return time.Time{}, fmt.Errorf("start barrier: %w", err)
	}
	if at.IsZero() {
		return time.Time{}, fmt.Errorf("start barrier: no start time")
	}
	if late := time.Since(at); late > 0 {
		s.log.Warn("the stage's start time had passed when the barrier answered: the stage starts late, its boundaries kept", "late_ms", float64(late)/1e6)
	} else {
		s.log.Info("waiting for the stage's start", "start", at.UTC().Format(time.RFC3339Nano), "in_ms", float64(-late)/1e6)
	}
	timer := time.NewTimer(time.Hour) // the dispatcher's precise wait: shards wake together, not a timer tick apart
	timer.Stop()
	defer timer.Stop()
	waitPrecisely(ctx, timer, at)
	return at, nil
}
