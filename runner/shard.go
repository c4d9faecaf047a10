package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/plload/plload/cluster"
	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// Shard is this run's place in a sharded run: its shard and the coordinator it joins ("": none).
type Shard struct {
	Part               workload.Shard
	Coordinator, Token string
	JoinTimeout        time.Duration
	// Coordinate: this shard (index 0) also runs the coordinator, listening on Coordinator.
	Coordinate bool
}

// dirSuffix goes on the results directory's name, so shards writing to one shared volume never
// collide: "-shard0of4" ("" unsharded).
func (o Shard) dirSuffix() string {
	if !o.Part.Sharded() {
		return ""
	}
	return fmt.Sprintf("-shard%dof%d", o.Part.Index, o.Part.Count)
}

// flags are the shard flags as report.json's command repeats them (never the token).
func (o Shard) flags() string {
	out := ""
	if o.Part.Count > 0 {
		out = " --shard " + strconv.Itoa(o.Part.Index) + "/" + strconv.Itoa(o.Part.Count)
	}
	if o.Coordinator != "" {
		out += " --coordinator " + o.Coordinator
	}
	return out
}

// member is the coordinator's barrier for this run; nil without a coordinator (its methods
// then do nothing). With --coordinate it holds the coordinator this process runs, too.
type member struct {
	m     *cluster.Member
	coord *cluster.Coordinator

	mu sync.Mutex
	// interrupted says where a signal stopped this shard's wait for the coordinator ("": it did not).
	interrupted string
}

// join joins the coordinator (nil, nil without one): a shard that cannot join, or that the others
// did not join within --join-timeout, fails the run (exit 1) with the coordinator's reason.
func (o Shard) join(ctx context.Context, sc *workload.Scenario) (*member, error) {
	if o.Coordinator == "" {
		return nil, nil
	}
	sha, err := cluster.ScenarioSHA(sc)
	if err != nil {
		return nil, err
	}
	s := &member{}
	addr := o.Coordinator
	if o.Coordinate {
		if s.coord, err = cluster.Start(ctx, cluster.ServeOptions{Listen: o.Coordinator, Shards: o.Part.Count, Token: o.Token, JoinTimeout: o.JoinTimeout}); err != nil {
			return nil, &Error{Code: BadInput, Err: fmt.Errorf("shard %s: --coordinate: %w; nothing was sent", o.Part, err)}
		}
		addr = s.coord.Addr()
	}
	if s.m, err = cluster.Join(ctx, cluster.JoinOptions{Addr: addr, Token: o.Token, Shard: o.Part, ScenarioSHA: sha, Timeout: o.JoinTimeout}); err != nil {
		if ctx.Err() != nil { // Ctrl+C (or SIGTERM) while the others were awaited: an interrupt, as run's
			return nil, &Error{Code: Interrupted, Err: fmt.Errorf("shard %s: interrupted while waiting for the coordinator %s (the join); nothing was sent", o.Part, addr)}
		}
		return nil, &Error{Code: Failed, Err: fmt.Errorf("shard %s: joining the coordinator: %w; nothing was sent", o.Part, err)}
	}
	return s, nil
}

// writeInfo writes the shard block to DIR/shard.json as soon as the results directory exists, so a
// shard killed during its first stage (no stage.json, no report.json) still says which shard it was
// and its clock offset, and merge --allow-partial can place its records.
func (o Shard) writeInfo(dir string, in *resultfiles.ShardInfo) error {
	if in == nil {
		return nil
	}
	data, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, cluster.ShardFile), append(data, '\n'))
}

// Close leaves the coordinator; with --coordinate it then serves until every other shard has left
// too (their barriers need it), bounded by the join timeout, and logs why the coordinator failed
// (a shard that never finished) — this shard's own results stand.
func (s *member) Close(log *slog.Logger) {
	if s == nil {
		return
	}
	_ = s.m.Close()
	s.mu.Lock()
	interrupted := s.interrupted
	s.mu.Unlock()
	if interrupted != "" {
		log.Warn("interrupted while waiting for the coordinator at " + interrupted + ": later stages were skipped")
	}
	if lost := s.m.Lost(); len(lost) > 0 {
		// This shard's own results are whole (every stage ran to its end), so it exits as its own
		// stages say; the run as a whole is partial, which the coordinator's exit and merge say.
		log.Warn(fmt.Sprintf("shard(s) %v of this run were lost (the coordinator gave them up); this shard ran every stage without them and its results are whole; the coordinator fails the run, and plload merge needs --allow-partial, which names them", lost))
	}
	if s.coord == nil {
		return
	}
	log.Info("waiting for the other shards to finish (this shard is their coordinator)")
	if err := s.coord.Wait(); err != nil {
		log.Error("coordinator: " + err.Error())
	}
}

// stageStart is the engine's start hook (nil without a coordinator).
func (s *member) stageStart() func(context.Context, int) (time.Time, error) {
	if s == nil {
		return nil
	}
	return func(ctx context.Context, stage int) (time.Time, error) {
		at, err := s.m.StageStart(ctx, stage)
		if err != nil && ctx.Err() != nil {
			// A signal during the wait is the run's interrupt (exit 130), not a failed barrier.
			s.mu.Lock()
			s.interrupted = fmt.Sprintf("stage %d's barrier", stage)
			s.mu.Unlock()
			return at, fmt.Errorf("interrupted while waiting for the coordinator at stage %d's barrier: %w", stage, engine.ErrInterrupted)
		}
		return at, err
	}
}

// info is the shard block of stage.json and report.json (nil unsharded).
func (o Shard) info(s *member) *resultfiles.ShardInfo {
	if !o.Part.Sharded() {
		return nil
	}
	in := &resultfiles.ShardInfo{Index: o.Part.Index, Count: o.Part.Count}
	if s != nil {
		in.ClockOffsetNs, in.OffsetUncertaintyNs = s.m.Offset()
	}
	return in
}
