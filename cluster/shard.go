// Package cluster runs one scenario as N shards that add up to the unsharded run (docs/deployment.md): which
// sessions a shard runs, the coordinator that gives every shard one start and one clock, and the
// merge of their results. It imports engine and metrics; manifests for Kubernetes and Slurm live in
// their own package so nothing else links their types.
package cluster

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/plload/plload/workload"
)

// ParseShard reads --shard: "i/N", or "auto" — the index and count from the job system's
// environment: JOB_COMPLETION_INDEX with the count from --shards (Kubernetes does not give pods the
// Job's completions), SLURM_PROCID/SLURM_NTASKS, or OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE.
// shards is --shards (0: not given). Errors say what is accepted.
func ParseShard(flag string, shards int, getenv func(string) string) (workload.Shard, error) {
	if flag == "" {
		return workload.Shard{}, nil
	}
	if flag != "auto" {
		i, n, ok := strings.Cut(flag, "/")
		index, err1 := strconv.Atoi(strings.TrimSpace(i))
		count, err2 := strconv.Atoi(strings.TrimSpace(n))
		if !ok || err1 != nil || err2 != nil {
			return workload.Shard{}, fmt.Errorf("--shard %q; accepted: INDEX/COUNT such as 0/4, or auto", flag)
		}
		return checked(workload.Shard{Index: index, Count: count}, "--shard "+flag)
	}
	for _, env := range [][2]string{{"SLURM_PROCID", "SLURM_NTASKS"}, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}} {
		if i, n := getenv(env[0]), getenv(env[1]); i != "" && n != "" {
			index, err1 := strconv.Atoi(i)
			count, err2 := strconv.Atoi(n)
			if err1 != nil || err2 != nil {
				return workload.Shard{}, fmt.Errorf("--shard auto: %s=%q %s=%q; accepted: whole numbers", env[0], i, env[1], n)
			}
			return checked(workload.Shard{Index: index, Count: count}, fmt.Sprintf("--shard auto (%s=%s, %s=%s)", env[0], i, env[1], n))
		}
	}
	if i := getenv("JOB_COMPLETION_INDEX"); i != "" {
		index, err := strconv.Atoi(i)
		if err != nil {
			return workload.Shard{}, fmt.Errorf("--shard auto: JOB_COMPLETION_INDEX=%q; accepted: a whole number", i)
		}
		if shards < 1 {
			return workload.Shard{}, fmt.Errorf("--shard auto with JOB_COMPLETION_INDEX=%s: the count is missing; accepted: --shards N (the Job's completions; Kubernetes does not tell pods)", i)
		}
		return checked(workload.Shard{Index: index, Count: shards}, fmt.Sprintf("--shard auto (JOB_COMPLETION_INDEX=%s, --shards %d)", i, shards))
	}
	return workload.Shard{}, fmt.Errorf("--shard auto: none of JOB_COMPLETION_INDEX (with --shards N), SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE is set; accepted: --shard INDEX/COUNT, or run under a Kubernetes Indexed Job, Slurm or MPI")
}

func checked(s workload.Shard, what string) (workload.Shard, error) {
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return workload.Shard{}, fmt.Errorf("%s: index %d of %d; accepted: 0 ≤ index < count, count ≥ 1", what, s.Index, s.Count)
	}
	return s, nil
}
