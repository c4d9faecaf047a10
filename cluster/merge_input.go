package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// MergeInputError is input that merge refuses: a directory that is not a shard's results, shards of
// different scenarios or counts, a duplicate or missing index, a corrupt records line. The CLI exits 2.
type MergeInputError struct{ Err error }

func (e *MergeInputError) Error() string { return e.Err.Error() }
func (e *MergeInputError) Unwrap() error { return e.Err }

func inputErr(format string, args ...any) error {
	return &MergeInputError{Err: fmt.Errorf(format, args...)}
}

// ShardFile is the shard block a sharded run writes to its results directory as soon as it exists
// (resultfiles.ShardInfo as JSON), so that even a shard killed in its first stage is known to merge.
const ShardFile = "shard.json"

// acceptedDirs says what merge reads, for its refusals.
const acceptedDirs = "accepted: the results directories of `plload run --shard i/N` (scenario.resolved.yaml, report.json and stage_NN/{stage.json, profile_export.jsonl, sessions.jsonl, dataset.jsonl}, with a shard block in shard.json, stage.json or report.json)"

// shardStage is what one shard left of one stage.
type shardStage struct {
	dir    string                   // stage_NN
	report *resultfiles.StageReport // nil: no stage.json (the shard was killed during the stage)
	block  *resultfiles.ShardInfo   // the stage's own shard block, when it has one
	issue  string                   // why the stage is partial ("" when complete)
}

// shardDir is one shard's results directory as merge reads it.
type shardDir struct {
	path     string
	block    resultfiles.ShardInfo
	scenario *workload.Scenario
	sha      string // ScenarioSHA: the scenario without its output block
	resolved []byte
	report   *resultfiles.Report // nil when report.json is absent (the shard did not finish)
	stages   map[int]*shardStage
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// readShardDir reads one shard's directory: its scenario, its shard block and what it left of each
// of the scenario's stages (stages: the scenario's count).
func readShardDir(path string) (*shardDir, error) {
	info, err := os.Stat(path)
	if err != nil || !info.IsDir() {
		return nil, inputErr("%s: not a directory; %s", path, acceptedDirs)
	}
	resolved, err := os.ReadFile(filepath.Join(path, "scenario.resolved.yaml"))
	if err != nil {
		return nil, inputErr("%s: no scenario.resolved.yaml; %s", path, acceptedDirs)
	}
	resolvedPath := filepath.Join(path, "scenario.resolved.yaml")
	sc, issues := workload.Parse(resolvedPath, resolved, workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		return nil, inputErr("%s: %v", resolvedPath, err)
	}
	sha, err := ScenarioSHA(sc)
	if err != nil {
		return nil, inputErr("%s: %v", resolvedPath, err)
	}
	d := &shardDir{path: path, resolved: resolved, scenario: sc, sha: sha, stages: map[int]*shardStage{}}
	var runBlock *resultfiles.ShardInfo
	if data, err := os.ReadFile(filepath.Join(path, "report.json")); err == nil {
		var r resultfiles.Report
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, inputErr("%s: not a report.json: %v; %s", filepath.Join(path, "report.json"), err, acceptedDirs)
		}
		d.report, runBlock = &r, r.Shard
	}
	stageDirs, _ := filepath.Glob(filepath.Join(path, "stage_[0-9][0-9]"))
	for _, sd := range stageDirs {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(sd), "stage_%02d", &n); err != nil || n < 1 {
			continue
		}
		st, err := readShardStage(sd)
		if err != nil {
			return nil, err
		}
		d.stages[n] = st
		if runBlock == nil && st.block != nil {
			runBlock = st.block
		}
	}
	if runBlock == nil {
		// A shard killed during its first stage left neither: its shard.json (written as the run began) says.
		if data, err := os.ReadFile(filepath.Join(path, ShardFile)); err == nil {
			var b resultfiles.ShardInfo
			if err := json.Unmarshal(data, &b); err != nil {
				return nil, inputErr("%s: not a shard block: %v; %s", filepath.Join(path, ShardFile), err, acceptedDirs)
			}
			runBlock = &b
		}
	}
	if runBlock == nil {
		return nil, inputErr("%s: no shard block (index, count, clock offset) in report.json or any stage.json: not a sharded run; %s", path, acceptedDirs)
	}
	if runBlock.Count < 1 || runBlock.Index < 0 || runBlock.Index >= runBlock.Count {
		return nil, inputErr("%s: shard index %d of count %d: accepted: 0 ≤ index < count", path, runBlock.Index, runBlock.Count)
	}
	d.block = *runBlock
	for n, st := range d.stages {
		if b := st.block; b != nil && (b.Index != d.block.Index || b.Count != d.block.Count) {
			return nil, inputErr("%s: stage_%02d/stage.json says shard %d/%d but the run says %d/%d", path, n, b.Index, b.Count, d.block.Index, d.block.Count)
		}
	}
	return d, nil
}

// readShardStage reads a stage_NN directory; a missing stage.json is a partial stage, not an error.
func readShardStage(dir string) (*shardStage, error) {
	st := &shardStage{dir: dir}
	path := filepath.Join(dir, "stage.json")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		st.issue = "no stage.json (the shard stopped during the stage)"
		return st, nil
	}
	r, err := resultfiles.ReadStage(path)
	if err != nil {
		return nil, inputErr("%v; %s", err, acceptedDirs)
	}
	st.report, st.block = r, r.Shard
	if r.Partial {
		st.issue = "stage.json says partial (interrupted)"
	}
	// An aborted stage (the target unreachable) is a result, not a partial shard: its failure is
	// in Engine.Aborted, which the merged stage names by shard.
	return st, nil
}

// shardSet is the shards of one run, checked: one scenario, one count, distinct indexes.
type shardSet struct {
	count   int
	shards  []*shardDir    // by index; nil where missing
	missing map[int]string // index → why it is missing or partial, for the report
}

// checkShards refuses shards of different scenarios or counts and duplicate indexes; a missing index
// or a partial shard is refused unless allowPartial, and then listed in missing.
func checkShards(dirs []*shardDir, stages int, allowPartial bool) (*shardSet, error) {
	first := dirs[0]
	set := &shardSet{count: first.block.Count, shards: make([]*shardDir, first.block.Count), missing: map[int]string{}}
	for _, d := range dirs {
		if d.sha != first.sha {
			return nil, inputErr("%s ran a different scenario than %s (sha256 of scenario.resolved.yaml without output: %s vs %s): accepted: the shards of one run", d.path, first.path, d.sha[:12], first.sha[:12])
		}
		if d.block.Count != set.count {
			return nil, inputErr("%s is shard %d of %d but %s is of %d: accepted: the shards of one run, all of the same count", d.path, d.block.Index, d.block.Count, first.path, set.count)
		}
		if prev := set.shards[d.block.Index]; prev != nil {
			return nil, inputErr("shard index %d given twice: %s and %s: accepted: each index once", d.block.Index, prev.path, d.path)
		}
		set.shards[d.block.Index] = d
	}
	var problems []string
	for i, d := range set.shards {
		why := shardProblem(d, stages)
		if why == "" {
			continue
		}
		set.missing[i] = why
		problems = append(problems, fmt.Sprintf("shard %d/%d: %s", i, set.count, why))
	}
	if len(problems) > 0 && !allowPartial {
		return nil, inputErr("%s; merge the shards that finished with --allow-partial (the report then names these)", strings.Join(problems, "; "))
	}
	return set, nil
}

// shardProblem says why a shard is missing or partial ("" when it ran every stage to the end).
func shardProblem(d *shardDir, stages int) string {
	if d == nil {
		return "no directory given for this index"
	}
	var why []string
	if d.report == nil {
		why = append(why, "no report.json (the shard did not finish)")
	}
	for n := 1; n <= stages; n++ {
		st, ok := d.stages[n]
		switch {
		case !ok && !skipped(d, n):
			why = append(why, fmt.Sprintf("stage %02d missing", n))
		case st.issue != "":
			why = append(why, fmt.Sprintf("stage %02d: %s", n, st.issue))
		}
	}
	return strings.Join(why, ", ")
}

// skipped: the shard finished (report.json) without stage n, as a run does after a stage that
// stopped it — a result, not a lost stage.
func skipped(d *shardDir, n int) bool {
	if d.report == nil || d.report.Interrupted {
		return false
	}
	for _, st := range d.report.Stages {
		if st.Stage == n {
			return false
		}
	}
	return true
}
