package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/cluster"
	"github.com/plload/plload/metrics"
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

// slurmStubs are srun and scontrol as one node runs them: srun starts its N tasks at once (the
// shards meet at the coordinator's barrier) with SLURM_PROCID and SLURM_NTASKS set, as Slurm does,
// and exits non-zero when a task did; scontrol names this machine by its loopback address.
var slurmStubs = map[string]string{
	"scontrol": "#!/bin/bash\necho 127.0.0.1; echo node-b\n",
	"srun": "#!/bin/bash\nn=1\nwhile [[ $1 == --* ]]; do [[ $1 == --ntasks=* ]] && n=${1#--ntasks=}; shift; done\n" +
		"pids=()\nfor ((i=0; i<n; i++)); do SLURM_PROCID=$i SLURM_NTASKS=$n \"$@\" & pids+=($!); done\n" +
		"rc=0\nfor p in \"${pids[@]}\"; do wait \"$p\" || rc=$?; done\nexit $rc\n",
}

// writeStubs writes the named scripts into a new bin directory and returns it.
func writeStubs(t *testing.T, stubs map[string]string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// slurmScript writes `plload slurm ARGS` into dir/job.sbatch.
func slurmScript(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, script, errOut := plload(t, append([]string{"slurm"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	path := filepath.Join(dir, "job.sbatch")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSlurmScriptRuns runs the generated script under bash with srun, scontrol and plload replaced
// by recorders, so the test sees the command lines the shards, the coordinator and the merge really
// get after the shell's expansions: the coordinator binds a port the system picks, and the shards
// dial the port it logged.
func TestSlurmScriptRuns(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	results, log := filepath.Join(dir, "results"), filepath.Join(dir, "calls")
	stubs := map[string]string{
		// plload: record the call; coordinate logs the address it bound and stays up until killed;
		// run makes its results directory as plload run does.
		"plload": "#!/bin/bash\necho \"$*\" >> \"$CALLS\"\n" +
			"if [ \"$1\" = coordinate ]; then echo 'time=2026-12-02T00:00:00Z level=INFO msg=\"coordinator listening\" addr=0.0.0.0:40123 shards=3 join_timeout=1m0s token=true' >&2; exec sleep 60; fi\n" +
			"if [ \"$1\" = run ]; then while [ $# -gt 1 ]; do [ \"$1\" = --out ] && mkdir -p \"$2/tiny-20261202-000000\"; shift; done; fi\n",
	}
	maps.Copy(stubs, slurmStubs)
	bin := writeStubs(t, stubs)
	path := slurmScript(t, dir, "cli/testdata/tiny.yaml", "--shards", "3")
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
	sort.Strings(got) // the coordinator and the shards run at once: their lines come in any order
	runDir := results + "/plload-tiny-7"
	sc := runDir + "/scenario.yaml"
	run := "run " + sc + " --shard auto --shards 3 --coordinator 127.0.0.1:40123 --token-env PLLOAD_TOKEN --out " + runDir + "/shard-"
	want := []string{
		"coordinate --shards 3 --listen 0.0.0.0:0 --token-env PLLOAD_TOKEN",
		"merge " + runDir + "/shard-0/tiny-20261202-000000 " + runDir + "/shard-1/tiny-20261202-000000 " +
			runDir + "/shard-2/tiny-20261202-000000 --out " + runDir + "/merged",
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

// TestSlurmScriptCoordinatorFails: a coordinator that cannot start fails the job at once, with
// its own message in the job's log, and no shard is started (they would dial nothing, or another
// job's coordinator).
func TestSlurmScriptCoordinatorFails(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	stubs := map[string]string{
		"plload": "#!/bin/bash\necho \"$*\" >> \"$CALLS\"\n" +
			"if [ \"$1\" = coordinate ]; then echo 'coordinate: --listen 0.0.0.0:0: listen tcp: no room' >&2; exit 2; fi\n",
	}
	maps.Copy(stubs, slurmStubs)
	bin := writeStubs(t, stubs)
	path := slurmScript(t, dir, "cli/testdata/tiny.yaml", "--shards", "2")
	cmd := exec.Command(bash, path)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "CALLS=" + log, "PLLOAD_TOKEN=s3cret", "PLLOAD_TINY_KEY=k",
		"SLURM_JOB_NODELIST=node-a", "SLURM_SUBMIT_DIR=" + dir, "SLURM_JOB_ID=8"}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the script succeeded with a coordinator that never started:\n%s", out)
	}
	for _, want := range []string{"the coordinator did not start", "no room"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the job's log does not say %q:\n%s", want, out)
		}
	}
	calls, _ := os.ReadFile(log)
	if got := strings.TrimSpace(string(calls)); got != "coordinate --shards 2 --listen 0.0.0.0:0 --token-env PLLOAD_TOKEN" {
		t.Errorf("plload was called for more than the coordinator:\n%s", got)
	}
}

// TestSlurmTwoJobsOnOneNode runs the generated script for real, twice at once on this machine as
// two jobs on one node with the same --name and different secrets: the real plload (built here)
// coordinates, runs both shards against its in-process mock and merges. Both jobs complete, each
// in its own folder, and each merge holds its own two shards' records, no more (with one fixed
// port, the second coordinator could not bind and its shards joined the first job's).
func TestSlurmTwoJobsOnOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plload and runs two sharded jobs")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	exe := buildBinary(t)
	dir := t.TempDir()
	bin := writeStubs(t, slurmStubs)
	sc := filepath.Join(dir, "two.yaml")
	text := "name: two\nseed: 4\ntarget: {base_url: mock, model: m, mock: {ttft: 5ms, tps: 500}, timeout: 5s}\n" +
		"personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}\n" +
		"session: {turns: {min: 1, max: 2}, user_input_tokens: {min: 5, max: 15}, max_output_tokens: {min: 5, max: 10}, think_time: {min: 5ms, max: 10ms}}\n" +
		"load: {mode: concurrency, drain_timeout: 5s, stages: [{concurrency: 4, duration: 500ms}]}\n"
	if err := os.WriteFile(sc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	path := slurmScript(t, dir, sc, "--shards", "2", "--name", "nightly")
	jobs := []string{"101", "102"}
	cmds := make([]*exec.Cmd, len(jobs))
	outs := make([]bytes.Buffer, len(jobs))
	for i, id := range jobs {
		cmd := exec.Command(bash, path)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "PLLOAD=" + exe, "PLLOAD_TOKEN=secret-of-" + id,
			"SLURM_JOB_NODELIST=localhost", "SLURM_SUBMIT_DIR=" + dir, "SLURM_JOB_ID=" + id, "HOME=" + dir}
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("job %s failed: %v\n%s", jobs[i], err, outs[i].String())
		}
	}
	if t.Failed() {
		return
	}
	for _, id := range jobs {
		runDir := filepath.Join(dir, "nightly-"+id)
		var man cluster.MergeManifest
		readJSON(t, filepath.Join(runDir, "merged", "merge.json"), &man)
		if man.Count != 2 || len(man.Shards) != 2 {
			t.Fatalf("job %s: merge.json counts %d shards, lists %d; want 2 and 2", id, man.Count, len(man.Shards))
		}
		sum := 0
		for _, s := range man.Shards {
			if s.Problem != "" || !strings.HasPrefix(s.Dir, runDir+string(filepath.Separator)) {
				t.Errorf("job %s: shard %d from %q (problem %q); want its own folder, whole", id, s.Index, s.Dir, s.Problem)
			}
			sum += countLines(t, filepath.Join(s.Dir, "stage_01", "profile_export.jsonl"))
		}
		merged := countLines(t, filepath.Join(runDir, "merged", "stage_01", "profile_export.jsonl"))
		if merged == 0 || merged != sum {
			t.Errorf("job %s: merged holds %d records, its shards %d", id, merged, sum)
		}
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

// realSlurm skips, saying why, where no Slurm answers on this machine (unless PLLOAD_SLURM=require,
// which fails instead), and returns a context that bounds the test.
func realSlurm(t *testing.T) context.Context {
	t.Helper()
	skip := func(why string) {
		t.Helper()
		if os.Getenv("PLLOAD_SLURM") == "require" {
			t.Fatalf("PLLOAD_SLURM=require, but %s", why)
		}
		t.Skipf("%s (.ci/slurm.sh starts a one-node Slurm here; PLLOAD_SLURM=require fails instead of skipping)", why)
	}
	if os.Getenv("PLLOAD_SLURM") == "off" {
		skip("PLLOAD_SLURM=off")
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		skip("no sbatch on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	nodes, err := exec.CommandContext(ctx, "sinfo", "-h", "-t", "idle", "-o", "%n").Output()
	if err != nil || len(strings.Fields(string(nodes))) == 0 {
		skip(fmt.Sprintf("no idle Slurm node (sinfo: %v %s)", err, nodes))
	}
	// The shards dial the first node by name: it must be this machine on loopback.
	for _, n := range strings.Fields(string(nodes)) {
		addrs, err := net.LookupHost(n)
		if err != nil {
			skip(fmt.Sprintf("node %s does not resolve: %v", n, err))
		}
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
				skip(fmt.Sprintf("node %s is %s, not loopback: this test sends traffic to this machine only", n, a))
			}
		}
	}
	return ctx
}

// sbatchWait submits the script from dir (its $SLURM_SUBMIT_DIR) with env added, waits for the
// job (it calls no t.Fatal: tests run two at once) and returns its id, its folder, and sbatch's error (the job's exit status); the job's log
// is <name>-<id>.log in dir.
func sbatchWait(ctx context.Context, dir, script string, env ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, "sbatch", "--parsable", "--wait", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if id == "" {
		return "", "", fmt.Errorf("sbatch gave no job id: %v %s", err, stderr.Bytes())
	}
	if ctx.Err() != nil {
		exec.Command("scancel", id).Run()
		return id, "", fmt.Errorf("not done in time: %w", ctx.Err())
	}
	if err != nil {
		err = fmt.Errorf("sbatch --wait: %w %s", err, stderr.Bytes())
	}
	return id, filepath.Join(dir, "slurm-real-"+id), err
}

// realSlurmScenario is two short stages against each shard's in-process mock; the first is long
// enough for a shard to be killed in it.
const realSlurmScenario = "name: real\nseed: 5\ntarget: {base_url: mock, model: m, mock: {ttft: 5ms, tps: 500}, timeout: 5s}\n" +
	"personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}\n" +
	"session: {turns: {min: 1, max: 2}, user_input_tokens: {min: 5, max: 15}, max_output_tokens: {min: 5, max: 10}, think_time: {min: 5ms, max: 10ms}}\n" +
	"load: {mode: concurrency, drain_timeout: 5s, stages: [{concurrency: 4, duration: 1500ms}, {concurrency: 2, duration: 300ms}]}\n"

// realSlurmSetup is the real tier's start: a Slurm to submit to (or the skip), the plload binary
// the job runs, a folder for the job and realSlurmScenario written in it.
func realSlurmSetup(t *testing.T) (ctx context.Context, exe, dir, scenario string) {
	t.Helper()
	ctx = realSlurm(t)
	exe = buildBinary(t)
	dir = t.TempDir()
	scenario = filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(scenario, []byte(realSlurmScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return ctx, exe, dir, scenario
}

// TestSlurmReal submits the generated script to a real Slurm (.ci/slurm.sh starts a one-node one
// on this machine) for 2 shards and waits for the job: both shards run against their in-process
// mocks, the merge holds both, and its records are the shards' own.
func TestSlurmReal(t *testing.T) {
	ctx, exe, dir, sc := realSlurmSetup(t)
	script := slurmScript(t, dir, sc, "--shards", "2", "--name", "slurm-real", "--time", "00:05:00")
	id, runDir, err := sbatchWait(ctx, dir, script, "PLLOAD="+exe, "PLLOAD_TOKEN=real-slurm-secret")
	if err != nil {
		jobLog, _ := os.ReadFile(filepath.Join(dir, "slurm-real-"+id+".log"))
		t.Fatalf("job %s: %v\nthe job's log:\n%s", id, err, jobLog)
	}
	var man cluster.MergeManifest
	readJSON(t, filepath.Join(runDir, "merged", "merge.json"), &man)
	if man.Count != 2 || len(man.Shards) != 2 {
		t.Fatalf("merge.json counts %d shards, lists %d; want 2 and 2", man.Count, len(man.Shards))
	}
	for stage := 1; stage <= 2; stage++ {
		name := fmt.Sprintf("stage_%02d", stage)
		sum := 0
		for _, s := range man.Shards {
			if s.Problem != "" || !strings.HasPrefix(s.Dir, runDir+string(filepath.Separator)) {
				t.Fatalf("shard %d from %q (problem %q); want the job's own folder, whole", s.Index, s.Dir, s.Problem)
			}
			sum += countLines(t, filepath.Join(s.Dir, name, "profile_export.jsonl"))
		}
		if merged := countLines(t, filepath.Join(runDir, "merged", name, "profile_export.jsonl")); merged == 0 || merged != sum {
			t.Errorf("%s: merged holds %d records, the shards %d", name, merged, sum)
		}
	}
	t.Logf("job %s: both shards ran and merged in %s", id, runDir)
}

// TestSlurmRealKilledShard: on a real Slurm, shard 1's process is killed (SIGKILL, a lost node)
// once its first stage has records. The job exits non-zero, shard 0 still runs both stages, and
// with PLLOAD_ALLOW_PARTIAL=1 the job merges what is there: merge.json names shard 1's problem,
// and stage 2's merged records are shard 0's.
func TestSlurmRealKilledShard(t *testing.T) {
	ctx, exe, dir, sc := realSlurmSetup(t)
	// plload as the job sees it: task 1's run is killed once its stage 1 records file has a line
	// (under the name it has until the stage ends: the kill falls in the middle of stage 1).
	wrapper := filepath.Join(dir, "plload-killing-1")
	body := "#!/bin/bash\nif [ \"$1\" = run ] && [ \"$SLURM_PROCID\" = 1 ]; then\n" +
		"  prev=; for a in \"$@\"; do [ \"$prev\" = --out ] && out=$a; prev=$a; done\n" +
		"  \"$REAL_PLLOAD\" \"$@\" & pid=$!\n" +
		"  until [ -s \"$(compgen -G \"$out/*/stage_01/profile_export.jsonl" + metrics.WritingSuffix + "\" | head -n 1)\" ]; do\n" +
		"    kill -0 $pid 2>/dev/null || { echo 'shard 1 ended before it could be killed' >&2; exit 99; }\n" +
		"    sleep 0.02\n  done\n  kill -9 $pid; echo 'shard 1 killed' >&2; exit 137\nfi\n" +
		"exec \"$REAL_PLLOAD\" \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	script := slurmScript(t, dir, sc, "--shards", "2", "--name", "slurm-real", "--time", "00:05:00")
	id, runDir, err := sbatchWait(ctx, dir, script, "PLLOAD="+wrapper, "REAL_PLLOAD="+exe,
		"PLLOAD_TOKEN=real-slurm-secret", "PLLOAD_ALLOW_PARTIAL=1")
	if err == nil {
		t.Errorf("job %s exited 0 with a shard killed", id)
	}
	jobLog, _ := os.ReadFile(filepath.Join(dir, "slurm-real-"+id+".log"))
	if !strings.Contains(string(jobLog), "shard 1 killed") {
		t.Fatalf("job %s: shard 1 was not killed mid-run; the job's log:\n%s", id, jobLog)
	}
	var man cluster.MergeManifest
	readJSON(t, filepath.Join(runDir, "merged", "merge.json"), &man)
	if !man.AllowPartial || len(man.Shards) != 2 || man.Shards[0].Problem != "" || man.Shards[1].Problem == "" {
		t.Fatalf("merge.json: %+v; want partial, shard 0 whole, shard 1 with its problem", man)
	}
	// Stage 1: shard 0's records and every whole line the killed shard had written.
	killed := countLines(t, filepath.Join(man.Shards[1].Dir, "stage_01", "profile_export.jsonl"+metrics.WritingSuffix))
	both := countLines(t, filepath.Join(man.Shards[0].Dir, "stage_01", "profile_export.jsonl")) + killed
	if merged := countLines(t, filepath.Join(runDir, "merged", "stage_01", "profile_export.jsonl")); killed == 0 || merged != both {
		t.Errorf("stage 1: merged holds %d records; want shard 0's and the killed shard's %d, %d in all", merged, killed, both)
	}
	shard0 := countLines(t, filepath.Join(man.Shards[0].Dir, "stage_02", "profile_export.jsonl"))
	if merged := countLines(t, filepath.Join(runDir, "merged", "stage_02", "profile_export.jsonl")); shard0 == 0 || merged != shard0 {
		t.Errorf("stage 2: merged holds %d records, shard 0 ran %d; want shard 0's, and some", merged, shard0)
	}
	t.Logf("job %s: shard 1 lost (%s); shard 0 ran both stages; merged partial", id, man.Shards[1].Problem)
}

// TestSlurmRealTwoJobsOnOneNode: two jobs of the same script (same --name, different secrets) run at
// once on a real Slurm's one node (.ci/slurm.sh lets two jobs share its cores): both complete, each
// merges its own two shards in its own folder. With one fixed port, the second coordinator could not
// bind and its shards dialled the first job's ("token does not match").
func TestSlurmRealTwoJobsOnOneNode(t *testing.T) {
	ctx, exe, dir, sc := realSlurmSetup(t)
	script := slurmScript(t, dir, sc, "--shards", "2", "--name", "slurm-real", "--time", "00:05:00")
	type job struct {
		id, dir string
		err     error
	}
	jobs := make([]job, 2)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			j := &jobs[i]
			j.id, j.dir, j.err = sbatchWait(ctx, dir, script, "PLLOAD="+exe, fmt.Sprintf("PLLOAD_TOKEN=secret-of-job-%d", i))
		})
	}
	wg.Wait()
	var spans [2][2]time.Time
	for i, j := range jobs {
		if j.err != nil {
			jobLog, _ := os.ReadFile(filepath.Join(dir, "slurm-real-"+j.id+".log"))
			t.Fatalf("job %s: %v\nthe job's log:\n%s", j.id, j.err, jobLog)
		}
		var man cluster.MergeManifest
		readJSON(t, filepath.Join(j.dir, "merged", "merge.json"), &man)
		for _, s := range man.Shards {
			if s.Problem != "" || !strings.HasPrefix(s.Dir, j.dir+string(filepath.Separator)) {
				t.Errorf("job %s: shard %d from %q (problem %q); want the job's own folder, whole", j.id, s.Index, s.Dir, s.Problem)
			}
		}
		var rep struct{ Started, Finished time.Time }
		readJSON(t, filepath.Join(j.dir, "merged", "report.json"), &rep)
		spans[i] = [2]time.Time{rep.Started, rep.Finished}
	}
	if !spans[0][0].Before(spans[1][1]) || !spans[1][0].Before(spans[0][1]) {
		t.Errorf("the jobs did not run at once (%v and %v): the node ran them one after the other, so the port was not shared", spans[0], spans[1])
	}
}
