package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// MergeOptions are the inputs of Merge: the shards' results directories and where the merged one goes.
type MergeOptions struct {
	Dirs []string
	Out  string
	// AllowPartial merges what the shards left when one is missing or stopped early; the report then
	// names those shards. Without it they are refused.
	AllowPartial bool
	Tool         string // "plload v1.2.3", for stage.json and report.json
	Command      string // the merge command line, for report.json
	// Render writes the merged run's report.md, report.html and charts beside its report.json (the
	// command hands in report.Render); nil writes report.json alone.
	Render resultfiles.Renderer
}

// ShardStatus is one shard as merge.json lists it.
type ShardStatus struct {
	Index         int    `json:"index"`
	Dir           string `json:"dir,omitempty"`
	ClockOffsetNs int64  `json:"clock_offset_ns"`
	UncertaintyNs int64  `json:"offset_uncertainty_ns"`
	// Problem is why the shard is missing or partial ("" when it ran every stage to the end).
	Problem string `json:"problem,omitempty"`
}

// MergeManifest is merge.json in the merged directory: which shards went in and how.
type MergeManifest struct {
	Count          int           `json:"count"`
	ScenarioSHA256 string        `json:"scenario_sha256"`
	AllowPartial   bool          `json:"allow_partial"`
	Shards         []ShardStatus `json:"shards"`
}

// MergeResult is a finished merge.
type MergeResult struct {
	Dir      string
	Scenario *workload.Scenario
	Report   *resultfiles.Report
	Manifest MergeManifest
}

// Merge writes one results directory from N shards' (docs/deployment.md): every record of every shard, its
// times corrected by the shard's clock offset, in global order, and stage.json/report computed
// over the union by the same code as one process's run. Nothing is written unless every check
// passes, and the directory appears whole or not at all (it is built beside Out, then renamed).
// Input it refuses is a *MergeInputError.
func Merge(opt MergeOptions) (*MergeResult, error) {
	if len(opt.Dirs) == 0 {
		return nil, inputErr("no shard directories given; %s", acceptedDirs)
	}
	if opt.Out == "" {
		return nil, inputErr("--out DIR is required (a new or empty directory)")
	}
	if entries, err := os.ReadDir(opt.Out); err == nil && len(entries) > 0 {
		return nil, inputErr("--out %s: the directory exists and is not empty; accepted: a new or empty directory", opt.Out)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, inputErr("--out %s: %v; accepted: a new or empty directory", opt.Out, err)
	}
	var dirs []*shardDir
	for _, p := range opt.Dirs {
		d, err := readShardDir(p)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, d)
	}
	sc := dirs[0].scenario
	set, err := checkShards(dirs, len(sc.Load.Stages), opt.AllowPartial)
	if err != nil {
		return nil, err
	}
	parent := filepath.Dir(filepath.Clean(opt.Out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, inputErr("--out %s: %v", opt.Out, err)
	}
	tmp, err := mkdirBeside(parent, "."+filepath.Base(filepath.Clean(opt.Out))+".merge-")
	if err != nil {
		return nil, inputErr("--out %s: %v", opt.Out, err)
	}
	res, err := mergeInto(tmp, sc, set, opt)
	if err == nil {
		os.Remove(opt.Out) // an empty directory given as --out; a non-empty one was refused above
		err = os.Rename(tmp, opt.Out)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	res.Dir = opt.Out
	return res, nil
}

// mkdirBeside makes a new directory in parent named prefix and a random suffix, with the mode a
// run's directories get (0755 less the umask): it is renamed into place as the merged directory,
// and os.MkdirTemp's 0700 would keep other users and the cluster's collectors out of it.
func mkdirBeside(parent, prefix string) (string, error) {
	for range 100 {
		dir := filepath.Join(parent, prefix+strconv.FormatUint(rand.Uint64(), 36))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("no free name for a directory %s* in %s", prefix, parent)
}

// mergeInto writes the merged directory's files into dir.
func mergeInto(dir string, sc *workload.Scenario, set *shardSet, opt MergeOptions) (*MergeResult, error) {
	first := firstShard(set)
	if err := os.WriteFile(filepath.Join(dir, "scenario.resolved.yaml"), first.resolved, 0o644); err != nil {
		return nil, err
	}
	var stages []*resultfiles.StageReport
	for n := 1; n <= len(sc.Load.Stages); n++ {
		st, err := mergeStage(dir, sc, set, n, opt.Tool)
		if err != nil {
			return nil, err
		}
		if st == nil {
			break // no shard reached this stage: later stages were skipped, as in one process
		}
		stages = append(stages, st)
	}
	outAbs, err := filepath.Abs(opt.Out)
	if err != nil {
		outAbs = opt.Out
	}
	meta := resultfiles.Meta{Tool: opt.Tool, ScenarioFile: filepath.Join(outAbs, "scenario.resolved.yaml"), Command: opt.Command}
	for _, d := range set.shards {
		if d == nil || d.report == nil {
			continue
		}
		if meta.Started.IsZero() || d.report.Started.Add(offsetDur(d)).Before(meta.Started) {
			meta.Started = d.report.Started.Add(offsetDur(d))
		}
		if f := d.report.Finished.Add(offsetDur(d)); f.After(meta.Finished) {
			meta.Finished = f
		}
		meta.Interrupted = meta.Interrupted || d.report.Interrupted
	}
	rep := resultfiles.New(sc, stages, meta)
	err = rep.Write(dir)
	if err == nil && opt.Render != nil {
		err = opt.Render(dir, sc, rep)
	}
	if err != nil {
		return nil, fmt.Errorf("writing the merged report: %w", err)
	}
	man := MergeManifest{Count: set.count, ScenarioSHA256: first.sha, AllowPartial: opt.AllowPartial}
	for i, d := range set.shards {
		s := ShardStatus{Index: i, Problem: set.missing[i]}
		if d != nil {
			s.Dir, s.ClockOffsetNs, s.UncertaintyNs = d.path, d.block.ClockOffsetNs, d.block.OffsetUncertaintyNs
		}
		man.Shards = append(man.Shards, s)
	}
	data, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "merge.json"), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return &MergeResult{Scenario: sc, Report: rep, Manifest: man}, nil
}

func firstShard(set *shardSet) *shardDir {
	for _, d := range set.shards {
		if d != nil {
			return d
		}
	}
	return nil
}

func offsetDur(d *shardDir) time.Duration { return time.Duration(d.block.ClockOffsetNs) }

// stageOffset is a shard's clock offset for a stage: the stage's own shard block when it has one,
// else the run's.
func stageOffset(d *shardDir, st *shardStage) int64 {
	if st.block != nil {
		return st.block.ClockOffsetNs
	}
	return d.block.ClockOffsetNs
}
