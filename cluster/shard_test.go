package cluster

import (
	"strings"
	"testing"

	"github.com/plload/plload/workload"
)

// TestParseShard: i/N, and auto from each job system's environment; every bad value says what is
// accepted.
func TestParseShard(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		flag   string
		shards int
		getenv func(string) string
		want   workload.Shard
		err    string
	}{
		{"", 0, env(), workload.Shard{}, ""},
		{"2/4", 0, env(), workload.Shard{Index: 2, Count: 4}, ""},
		{"4/4", 0, env(), workload.Shard{}, "index 4 of 4; accepted: 0 ≤ index < count"},
		{"two", 0, env(), workload.Shard{}, "accepted: INDEX/COUNT such as 0/4, or auto"},
		{"auto", 8, env("JOB_COMPLETION_INDEX", "3"), workload.Shard{Index: 3, Count: 8}, ""},
		{"auto", 0, env("JOB_COMPLETION_INDEX", "3"), workload.Shard{}, "accepted: --shards N"},
		{"auto", 0, env("SLURM_PROCID", "1", "SLURM_NTASKS", "2"), workload.Shard{Index: 1, Count: 2}, ""},
		{"auto", 0, env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "3"), workload.Shard{Index: 0, Count: 3}, ""},
		{"auto", 0, env(), workload.Shard{}, "none of JOB_COMPLETION_INDEX"},
	} {
		got, err := ParseShard(c.flag, c.shards, c.getenv)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error containing %q", c.flag, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.flag, got, err, c.want)
		}
	}
}

// TestShardsSumToTheWhole: every ordinal has exactly one owner, and the parts of a figure sum to it.
func TestShardsSumToTheWhole(t *testing.T) {
	for _, n := range []int{1, 3, 4} {
		for total := range 11 {
			sum := 0
			for i := range n {
				sum += workload.Shard{Index: i, Count: n}.Split(total)
			}
			if sum != total {
				t.Errorf("%d shards: parts of %d sum to %d", n, total, sum)
			}
		}
		for ordinal := range 50 {
			owners := 0
			for i := range n {
				if (workload.Shard{Index: i, Count: n}).Owns(ordinal) {
					owners++
				}
			}
			if owners != 1 {
				t.Errorf("%d shards: ordinal %d has %d owners", n, ordinal, owners)
			}
		}
	}
}
