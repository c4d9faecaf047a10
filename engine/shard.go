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

// sessionPick is a session the load takes from the pool: the plan, its index in the pool (past the
// pool's end for a session drawn anew, load.session_reuse: fresh), the global ordinal of this
// instance, and whether it repeats a conversation the run already sent (the pool had wrapped
// around to it, or a file's entry repeats an earlier one).
type sessionPick struct {
	plan           *workload.SessionPlan
	index, ordinal int
	reused         bool
}

// conversationID is the instance's conversation id: the plan's own, or for a reused entry the
// plan's prefix with the instance's global ordinal (`s01-000015` replaying entry 3 of a pool of
// 12), so no two instances of a run, sharded or not, share an id (docs/deployment.md); the record's
// metadata.dataset_session says which entry was replayed. A session drawn past the pool has its
// ordinal's id already.
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

// poolAt is the session of global ordinal n (an open-loop arrival's). Past the pool's end it is
// session n drawn anew (load.session_reuse: fresh), or the pool's again from its start, said to be
// a reuse.
func (s *stageRun) poolAt(n int) sessionPick {
	if n < len(s.pool.Sessions) || s.pool.DrawsPastPool() {
		return s.pick(n, n, false)
	}
	return s.pick(n%len(s.pool.Sessions), n, true)
}

// pick is pool entry (or drawn session) index as the instance of global ordinal ordinal; wrapped
// says the pool had started over to reach it.
func (s *stageRun) pick(index, ordinal int, wrapped bool) sessionPick {
	if index >= len(s.pool.Sessions) { // drawn anew: its plan is kept by the session alone
		sp := s.pool.Session(index)
		return sessionPick{plan: &sp, index: index, ordinal: ordinal}
	}
	return sessionPick{plan: &s.pool.Sessions[index], index: index, ordinal: ordinal, reused: wrapped || index >= s.pool.FirstRepeat()}
}

// nextSession takes the concurrency model's next session: the pool's next in order, and past its
// end a session drawn anew (load.session_reuse: fresh) or the pool's again from its start (and
// saying so). A shard takes only its own residue class of the pool, in order. The shard's n-th
// session is global ordinal Index + n·Count, so ordinals stay in the shard's residue class; drawn
// anew, the session is that ordinal's. Wrapping, a shard wraps within its class; a pool shorter
// than the shard count leaves a shard none of its own, and it then replays the pool's from its
// index on, every one a reuse.
func (s *stageRun) nextSession() sessionPick {
	n := int(s.counts.next.Add(1) - 1)
	sh, size := s.cfg.Shard, len(s.pool.Sessions)
	if !sh.Sharded() {
		return s.poolAt(n)
	}
	ordinal := sh.Index + n*sh.Count
	if ordinal < size || s.pool.DrawsPastPool() {
		return s.pick(ordinal, ordinal, false)
	}
	m := owned(sh, size)
	if m == 0 {
		return s.pick(ordinal%size, ordinal, true)
	}
	return s.pick(sh.Index+(n%m)*sh.Count, ordinal, n >= m)
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

// repeatNonce is a repeated session's first user message with the instance's nonce in front of it,
// and that message's tokens: `[s01-000015] ` (its conversation id, unique in the run) right after
// the system prompt, where load.session_reuse is wrap. The rest of the session follows it, so the
// server can cache the persona and the session's own history, but not the conversation it repeats.
// Counted again whole: a tokenizer may merge across the join.
func (s *stageRun) repeatNonce(ss *session, text string, tokens int) (string, int) {
	tagged := "[" + ss.sr.ConversationID + "] " + text
	count := s.cfg.Scenario.Tokenizer().Count
	return tagged, tokens + count(tagged) - count(text)
}
