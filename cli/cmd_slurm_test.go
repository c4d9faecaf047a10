package cli

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var updateSlurm = flag.Bool("update-slurm", false, "rewrite testdata/slurm/*.sbatch from the current output")

// TestSlurmGolden: the script for a fixed scenario, reviewed by eye (-update-slurm to rewrite).
func TestSlurmGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"tiny-4", []string{"--shards", "4"}},
		{"tiny-2-gpu", []string{"--shards", "2", "--partition", "gpu", "--time", "1-02:00:00", "--name", "nightly"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := plload(t, append([]string{"slurm", "cli/testdata/tiny.yaml"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden := filepath.Join("cli", "testdata", "slurm", c.name+".sbatch")
			if *updateSlurm {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-slurm to write it)", err)
			}
			if d := cmp.Diff(string(want), out); d != "" {
				t.Errorf("script differs from %s (-want +got):\n%s", golden, d)
			}
		})
	}
}

// TestSlurmScriptRuns runs the generated script under bash with srun, scontrol and plload replaced
// by recorders: srun starts each task with its SLURM_PROCID, as Slurm does, so the test sees the
// command lines the shards, the coordinator and the merge really get after the shell's expansions.
func TestSlurmScriptRuns(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	code, script, errOut := plload(t, "slurm", "cli/testdata/tiny.yaml", "--shards", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	dir := t.TempDir()
	bin, results, log := filepath.Join(dir, "bin"), filepath.Join(dir, "results"), filepath.Join(dir, "calls")
	stubs := map[string]string{
		"scontrol": "#!/bin/bash\necho node-a; echo node-b\n",
		// srun [--opt=v...] CMD...: run CMD once per task, as Slurm's tasks 0..N-1.
		"srun": "#!/bin/bash\nn=1\nwhile [[ $1 == --* ]]; do [[ $1 == --ntasks=* ]] && n=${1#--ntasks=}; shift; done\n" +
			"for ((i=0; i<n; i++)); do SLURM_PROCID=$i SLURM_NTASKS=$n \"$@\" || exit $?; done\n",
		// plload: record the call; run makes its results directory as plload run does.
		"plload": "#!/bin/bash\necho \"$*\" >> \"$CALLS\"\nif [ \"$1\" = run ]; then while [ $# -gt 1 ]; do [ \"$1\" = --out ] && mkdir -p \"$2/tiny-20261202-000000\"; shift; done; fi\n",
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "job.sbatch")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, path)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "CALLS=" + log, "PLLOAD_TOKEN=s3cret", "PLLOAD_TINY_KEY=k",
		"PLLOAD_RESULTS=" + results, "SLURM_JOB_NODELIST=node-[a-b]", "SLURM_SUBMIT_DIR=" + dir, "SLURM_JOB_ID=7"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the script failed: %v\n%s", err, out)
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(calls)), "\n")
	sort.Strings(got) // the coordinator runs in the background: its line may come anywhere
	sc := results + "/scenario.yaml"
	run := "run " + sc + " --shard auto --shards 3 --coordinator node-a:7070 --token-env PLLOAD_TOKEN --out " + results + "/shard-"
	want := []string{
		"coordinate --shards 3 --listen 0.0.0.0:7070 --token-env PLLOAD_TOKEN",
		"merge " + results + "/shard-0/tiny-20261202-000000 " + results + "/shard-1/tiny-20261202-000000 " +
			results + "/shard-2/tiny-20261202-000000 --out " + results + "/merged",
		run + "0", run + "1", run + "2",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	resolved, err := os.ReadFile(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resolved), "name: tiny\n") || !strings.Contains(string(resolved), "***") {
		t.Errorf("the scenario the shards read is not the resolved, masked one:\n%s", resolved)
	}
}
