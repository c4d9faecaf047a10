package cli

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
	"github.com/urfave/cli/v3"
)

// shardFlags are run's flags for one shard of a sharded run (docs/deployment.md).
func shardFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "shard", Usage: "run one shard: INDEX/COUNT (0/4), the sessions and arrivals whose ordinal ≡ INDEX mod COUNT; or auto (JOB_COMPLETION_INDEX with --shards, SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/SIZE)"},
		&cli.IntFlag{Name: "shards", Usage: "with --shard auto in a Kubernetes Indexed Job: the shard count (the Job's completions)"},
		&cli.StringFlag{Name: "coordinator", Usage: "with --shard: host:port of plload coordinate; every shard starts each stage at its one start time"},
		&cli.StringFlag{Name: "token-env", Usage: "with --coordinator: environment variable holding the coordinator's shared secret"},
		&cli.DurationFlag{Name: "join-timeout", Value: cluster.DefaultJoinTimeout, Usage: "with --coordinator: the longest wait for every shard at the start barrier"},
		&cli.BoolFlag{Name: "coordinate", Usage: "with --shard 0/N and --coordinator ADDR: also be the coordinator, listening on ADDR (no separate plload coordinate)"},
	}
}

// shardRun is this run's place in a sharded run: its shard and the coordinator it joins ("": none).
type shardRun struct {
	shard              workload.Shard
	coordinator, token string
	joinTimeout        time.Duration
	// coordinate: this shard (index 0) also runs the coordinator, listening on coordinator.
	coordinate bool
}

// shardOptions reads and checks the shard flags; every refusal is exit 2 naming the flag, before
// anything is built or sent.
func shardOptions(cmd *cli.Command, getenv func(string) string) (shardRun, error) {
	o := shardRun{coordinator: cmd.String("coordinator"), joinTimeout: cmd.Duration("join-timeout"), coordinate: cmd.Bool("coordinate")}
	flag, shards := cmd.String("shard"), cmd.Int("shards")
	if cmd.IsSet("shards") && shards < 1 {
		return o, badInput("--shards %d; accepted: the shard count, 1 or more", shards)
	}
	sh, err := cluster.ParseShard(flag, shards, getenv)
	if err != nil {
		return o, badInput("%v; nothing was sent", err)
	}
	if cmd.IsSet("shards") && flag != "" && sh.Count != shards {
		return o, badInput("--shard %s names %d shards but --shards is %d; accepted: the same count", flag, sh.Count, shards)
	}
	o.shard = sh
	switch {
	case o.coordinator == "" && cmd.IsSet("token-env"):
		return o, badInput("--token-env without --coordinator; accepted: --coordinator host:port --token-env VAR")
	case o.coordinator != "" && flag == "":
		return o, badInput("--coordinator %s without --shard; accepted: --shard INDEX/COUNT or auto with it", o.coordinator)
	case o.coordinate && (o.coordinator == "" || sh.Index != 0):
		return o, badInput("--coordinate on shard %s; accepted: --coordinate on shard 0 with --coordinator ADDR, the address it listens on", sh)
	case o.joinTimeout <= 0:
		return o, badInput("--join-timeout %s; accepted: a positive duration such as 60s", o.joinTimeout)
	}
	if env := cmd.String("token-env"); env != "" {
		if o.token, err = cluster.TokenFromEnv(env, getenv); err != nil {
			return o, badInput("--token-env: %v", err)
		}
	}
	if o.coordinate && o.token == "" && !cluster.IsLoopback(o.coordinator) {
		return o, badInput("--coordinate --coordinator %s listens beyond loopback; accepted: a shared secret with --token-env VAR (every shard passes the same), or a loopback address", o.coordinator)
	}
	return o, nil
}

// dirSuffix goes on the results directory's name, so shards writing to one shared volume never
// collide: "-shard0of4" ("" unsharded).
func (o shardRun) dirSuffix() string {
	if !o.shard.Sharded() {
		return ""
	}
	return fmt.Sprintf("-shard%dof%d", o.shard.Index, o.shard.Count)
}

// flags are the shard flags as report.json's command repeats them (never the token).
func (o shardRun) flags() string {
	out := ""
	if o.shard.Count > 0 {
		out = " --shard " + strconv.Itoa(o.shard.Index) + "/" + strconv.Itoa(o.shard.Count)
	}
	if o.coordinator != "" {
		out += " --coordinator " + o.coordinator
	}
	return out
}

// shardMember is the coordinator's barrier for this run; nil without a coordinator (its methods
// then do nothing). With --coordinate it holds the coordinator this process runs, too.
type shardMember struct {
	m     *cluster.Member
	coord *cluster.Coordinator

	mu sync.Mutex
	// interrupted says where a signal stopped this shard's wait for the coordinator ("": it did not).
	interrupted string
}

// join joins the coordinator (nil, nil without one): a shard that cannot join, or that the others
// did not join within --join-timeout, fails the run (exit 1) with the coordinator's reason.
func (o shardRun) join(ctx context.Context, sc *workload.Scenario) (*shardMember, error) {
	if o.coordinator == "" {
		return nil, nil
	}
	sha, err := cluster.ScenarioSHA(sc)
	if err != nil {
		return nil, err
	}
	s := &shardMember{}
	addr := o.coordinator
	if o.coordinate {
		if s.coord, err = cluster.Start(ctx, cluster.ServeOptions{Listen: o.coordinator, Shards: o.shard.Count, Token: o.token, JoinTimeout: o.joinTimeout}); err != nil {
			return nil, &exitError{code: exitBadInput, err: fmt.Errorf("shard %s: --coordinate: %w; nothing was sent", o.shard, err)}
		}
		addr = s.coord.Addr()
	}
	if s.m, err = cluster.Join(ctx, cluster.JoinOptions{Addr: addr, Token: o.token, Shard: o.shard, ScenarioSHA: sha, Timeout: o.joinTimeout}); err != nil {
		if ctx.Err() != nil { // Ctrl+C (or SIGTERM) while the others were awaited: an interrupt, as run's
			return nil, &exitError{code: exitInterrupted, err: fmt.Errorf("shard %s: interrupted while waiting for the coordinator %s (the join); nothing was sent", o.shard, addr)}
		}
		return nil, &exitError{code: exitFailed, err: fmt.Errorf("shard %s: joining the coordinator: %w; nothing was sent", o.shard, err)}
	}
	return s, nil
}

// writeInfo writes the shard block to DIR/shard.json as soon as the results directory exists, so a
// shard killed during its first stage (no stage.json, no report.json) still says which shard it was
// and its clock offset, and merge --allow-partial can place its records.
func (o shardRun) writeInfo(dir string, in *resultfiles.ShardInfo) error {
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
func (s *shardMember) Close(log *slog.Logger) {
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
func (s *shardMember) stageStart() func(context.Context, int) (time.Time, error) {
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
func (o shardRun) info(s *shardMember) *resultfiles.ShardInfo {
	if !o.shard.Sharded() {
		return nil
	}
	in := &resultfiles.ShardInfo{Index: o.shard.Index, Count: o.shard.Count}
	if s != nil {
		in.ClockOffsetNs, in.OffsetUncertaintyNs = s.m.Offset()
	}
	return in
}
