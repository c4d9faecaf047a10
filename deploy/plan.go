// Package deploy turns a scenario into what runs it sharded on an existing distributed engine:
// Kubernetes manifests (built from the typed k8s.io/api structs) and Slurm sbatch scripts (docs/deployment.md).
// Only the root CLI imports it, so nothing else links the Kubernetes API types.
//
// Both targets run the same shape: one `plload coordinate` (the start barrier and the clock, no load),
// N shards of `plload run --shard auto`, each writing its own results directory, then one
// `plload merge` over the shards' directories.
package deploy

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/plload/plload/workload"
)

// CoordinatorPort is the port `plload coordinate` listens on and the shards dial on Kubernetes (its
// own pod and Service); a Slurm job lets the system pick a free port, as jobs may share a node.
const CoordinatorPort = 7070

// TokenEnv is the environment variable that carries the coordinator's shared secret on both sides
// (`--token-env`): beyond loopback the coordinator refuses shards without it (docs/deployment.md).
const TokenEnv = "PLLOAD_TOKEN"

// MinShards is the least --shards: a run of one shard is no sharded run (see NewPlan).
const MinShards = 2

// MaxShards bounds --shards: Kubernetes refuses an Indexed Job of more than 100,000 completions.
const MaxShards = 100000

// Options are what the user chose on the command line.
type Options struct {
	Shards int
	// Name names every object (and the results folder); "" derives it from the scenario's name.
	Name string
}

// Plan is what both targets need: the run's name, the resolved scenario and each shard's size.
type Plan struct {
	Name     string
	Shards   int
	Scenario []byte // scenario.resolved.yaml: defaults filled, secrets masked, file paths absolute
	// StreamsPerShard is the most streams one shard holds at once (index 0's share of the peak).
	StreamsPerShard int
	// SessionsPerShard is the most sessions one shard holds open at once, thinking ones included
	// (never fewer than StreamsPerShard).
	SessionsPerShard int
	// TokensPerSec is the stream speed the sizing assumes (the mock's tps, else the real-server figure).
	TokensPerSec float64
	Resources    Resources
	// APIKeyEnv is the scenario's target.api_key_env ("" none): the shards need that variable too.
	APIKeyEnv string
	// Files are the files the scenario names (personas, dataset, trace, CA): the shards must see
	// them at the same absolute paths; deploy does not carry them.
	Files []string
	// Seconds is the run's planned length (warmups, durations, drains); 0 when a stage has no
	// fixed end (a replay of a whole trace, a stage ended by count).
	Seconds float64
}

// NewPlan checks the options against the scenario and sizes the shards.
func NewPlan(sc *workload.Scenario, opt Options) (*Plan, error) {
	if opt.Shards == 1 {
		// plload merge refuses a run of one shard ("not a sharded run"), so it would fail at the end.
		return nil, fmt.Errorf("--shards 1 is not a sharded run (plload merge needs 2 or more shards); run the scenario unsharded with `plload run SCENARIO` in one pod or job, or give --shards 2 or more")
	}
	if opt.Shards < MinShards || opt.Shards > MaxShards {
		return nil, fmt.Errorf("--shards: %d is not a shard count; give %d to %d", opt.Shards, MinShards, MaxShards)
	}
	name := opt.Name
	if name == "" {
		name = DNSName(sc.Name)
	} else if !nameRE.MatchString(name) || len(name) > maxNameLen {
		return nil, fmt.Errorf("--name: %q is not usable as a Kubernetes name; use at most %d lowercase letters, digits and '-', starting with a letter and ending with a letter or digit", name, maxNameLen)
	}
	resolved, err := sc.ResolvedYAML()
	if err != nil {
		return nil, fmt.Errorf("%s: writing the resolved scenario: %w", sc.File, err)
	}
	p := &Plan{Name: name, Shards: opt.Shards, Scenario: resolved, APIKeyEnv: sc.Target.APIKeyEnv,
		Files: scenarioFiles(sc), Seconds: plannedSeconds(sc)}
	first := workload.Shard{Index: 0, Count: opt.Shards}
	p.StreamsPerShard = first.Split(PeakStreams(sc))
	p.SessionsPerShard = first.Split(PeakSessions(sc))
	p.TokensPerSec = assumedTPS
	if m := sc.Target.Mock; m != nil && m.TPS > 0 {
		p.TokensPerSec = m.TPS
	}
	p.Resources = SizeShard(p.StreamsPerShard, p.SessionsPerShard, p.TokensPerSec)
	return p, nil
}

// assumedTPS is the per-stream speed of a real server, the same figure workload's estimates assume
// (see Scenario.Assumption): a chunk per token, so this many chunks per second per stream.
const assumedTPS = 50.0

// PeakStreams is the most streams the whole run has streaming at once, over its stages: a
// concurrency stage's sessions (they all start at once), arrival_rate's expected requests in flight
// (Little's law: a session that thinks between turns streams nothing), and request_rate's and
// replay's expected requests in flight (capped by load.max_in_flight — the cap itself is a bound,
// not a need, and its default of 1,000 would size a 10 req/s run like a 1,000-stream one), and a
// batch's max_in_flight; each mode says its own (workload.Scenario.AtOnce).
func PeakStreams(sc *workload.Scenario) int {
	return peakOverStages(sc, func(st workload.Stage) float64 {
		streams, _ := sc.AtOnce(st)
		return streams
	})
}

// PeakSessions is the most sessions the whole run holds open at once, streaming or thinking: a
// concurrency stage's sessions, an arrival_rate stage's open sessions (Little's law, capped by
// max_concurrency), multi-turn request_rate's arriving sessions × a session's length; never fewer
// than the streams (replay, batch and single-turn request_rate: the streams).
func PeakSessions(sc *workload.Scenario) int {
	open := peakOverStages(sc, func(st workload.Stage) float64 {
		_, sessions := sc.AtOnce(st)
		return sessions
	})
	return max(open, PeakStreams(sc))
}

// peakOverStages is the largest of per(stage) over the run's stages, rounded up, at least 1.
func peakOverStages(sc *workload.Scenario, per func(workload.Stage) float64) int {
	peak := 0.0
	for _, st := range sc.Load.Stages {
		peak = math.Max(peak, per(st))
	}
	return max(1, int(math.Ceil(peak-1e-9))) // 3.0000000001 streams are 3
}

func scenarioFiles(sc *workload.Scenario) []string {
	var files []string
	add := func(f string) {
		if f != "" {
			files = append(files, f)
		}
	}
	add(sc.Personas.File)
	add(sc.Target.TLS.CAFile)
	if w := sc.Workload; w != nil {
		if w.Dataset != nil {
			add(w.Dataset.File)
		}
		if w.Trace != nil {
			add(w.Trace.File)
		}
	}
	return files
}

func plannedSeconds(sc *workload.Scenario) float64 {
	total := 0.0
	for _, st := range sc.Load.Stages {
		if st.Duration.D() <= 0 {
			return 0
		}
		total += (st.Warmup.D() + st.Duration.D() + sc.Load.DrainTimeout.D()).Seconds()
	}
	return total
}

// maxNameLen keeps every derived name legal: a shard pod's hostname is "<name>-<index>" (63 at
// most), and the Job controller copies the Job's name into a label value (63 at most).
const maxNameLen = 40

var nameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// DNSName makes a Kubernetes name (an RFC 1123 label starting with a letter) of a scenario name:
// "plload-" and the name lowercased, anything else than a letter or digit turned into '-'.
func DNSName(s string) string {
	var b strings.Builder
	b.WriteString("plload")
	dash := true
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	name := b.String()
	if len(name) > maxNameLen {
		name = strings.TrimRight(name[:maxNameLen], "-")
	}
	return name
}
