package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plload/plload/cluster"
	"github.com/plload/plload/metrics"
)

// The real-cluster tier: a one-node Kubernetes that .ci/kube-node.sh started on this machine (etcd,
// kube-apiserver, the controller manager's Job controller, the scheduler, a kubelet on containerd
// and runc, CoreDNS). PLLOAD_KUBE_NODE=require fails where there is none; off skips.
const (
	kubeNodeEnv = "PLLOAD_KUBE_NODE"
	// kubeBridge is the node's pod bridge (.ci/kube-node.sh): the pods reach the mock there. It is an
	// address of this machine, on a bridge of this machine's own; no traffic leaves it.
	kubeBridge = "10.88.0.1"
)

// realKube is the one-node cluster's kubectl, kubeconfig and node script, or a skip saying why.
type realKube struct {
	kubectl, kubeconfig, nodeScript string
}

func newRealKube(t *testing.T) realKube {
	t.Helper()
	skip := func(why string) {
		t.Helper()
		if os.Getenv(kubeNodeEnv) == "require" {
			t.Fatalf("%s=require, but %s", kubeNodeEnv, why)
		}
		t.Skipf("%s (.ci/kube-node.sh up starts a one-node Kubernetes here; %s=require fails instead of skipping)", why, kubeNodeEnv)
	}
	if os.Getenv(kubeNodeEnv) == "off" {
		skip(kubeNodeEnv + "=off")
	}
	if testing.Short() {
		skip("-short")
	}
	state := os.Getenv("PLLOAD_KUBE_NODE_DIR")
	if state == "" {
		state = "/tmp/plload-kube-node"
	}
	bin := os.Getenv("PLLOAD_KUBE_BIN")
	if bin == "" {
		home, _ := os.UserHomeDir()
		bin = filepath.Join(home, ".cache", "plload", "k8s", "bin")
	}
	k := realKube{kubectl: filepath.Join(bin, "kubectl"), kubeconfig: filepath.Join(state, "kubeconfig")}
	abs, err := filepath.Abs(filepath.Join(".ci", "kube-node.sh"))
	if err != nil {
		t.Fatal(err)
	}
	k.nodeScript = abs
	for _, p := range []string{k.kubectl, k.kubeconfig} {
		if _, err := os.Stat(p); err != nil {
			skip(fmt.Sprintf("no %s", p))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := k.run(ctx, nil, "get", "nodes", "-o", `jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}`)
	if err != nil || strings.TrimSpace(out) != "True" {
		skip(fmt.Sprintf("no one Ready node (kubectl get nodes: %v %q)", err, out))
	}
	return k
}

// env is kubectl's environment, for it and for the header's commands run under sh.
func (k realKube) env() []string {
	return append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "PATH="+filepath.Dir(k.kubectl)+":"+os.Getenv("PATH"))
}

func (k realKube) run(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.kubectl, args...)
	cmd.Env, cmd.Stdin = k.env(), bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

func (k realKube) must(ctx context.Context, t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, err := k.run(ctx, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sh runs one of the header's commands as a user would paste it, and returns its exit status and
// what it printed.
func (k realKube) sh(ctx context.Context, command string) (int, string) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = k.env()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, string(out)
}

// headerWaits are the generated header's two waits: the shards' (ending in the merge's resumption)
// and the merge's.
func headerWaits(t *testing.T, stream string) (shards, merge string) {
	t.Helper()
	for _, l := range strings.Split(stream, "\n") {
		cmd, ok := strings.CutPrefix(l, "#   ( end=")
		if !ok {
			continue
		}
		if strings.Contains(cmd, "patch job") {
			shards = "( end=" + cmd
		} else if shards != "" {
			merge = "( end=" + cmd
		}
	}
	if shards == "" || merge == "" {
		t.Fatalf("the header lacks its waits:\n%s", stream)
	}
	return shards, merge
}

// realKubeScenario: two short stages against the mock on the node's bridge; the first long enough
// for a shard to be killed in it.
const realKubeScenario = `name: chat
seed: 7
target: {base_url: "http://%s/v1", model: plload-mock, timeout: 10s}
personas: {count: 3, system_prompt_tokens: {min: 50, max: 100}}
session: {turns: {min: 2, max: 3}, user_input_tokens: {min: 10, max: 30}, max_output_tokens: {min: 10, max: 20}, think_time: {min: 200ms, max: 400ms}}
load:
  mode: concurrency
  drain_timeout: 10s
  session_pool_factor: 5
  stages:
    - {concurrency: 6, warmup: 2s, duration: 15s}
    - {concurrency: 6, duration: 8s}
`

// TestK8sRealKilledShardAndRerun runs plload k8s's output on a real one-node Kubernetes, as
// docs/deployment.md tells a user to: the namespace, Secret and a ReadWriteMany hostPath claim
// (root-owned, so --results-init makes the run's folder writable), apply, the header's waits.
//   - Run 1, --allow-partial: shard 1 is SIGKILLed in stage 1. The Job controller fails its index
//     only; shards 0 and 2 run both stages; the shard Job ends Failed and the printed wait says so and
//     resumes the merge, which merges partial, counting every whole record the killed shard wrote.
//   - Run 2, the same --name and no --run-id, beside run 1's objects: it runs and merges by itself.
func TestK8sRealKilledShardAndRerun(t *testing.T) {
	k := newRealKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// plload, static, as the Dockerfile builds it, loaded into the node as an image of its own.
	exe := filepath.Join(dir, "plload")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", exe, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // the tests run from the repository's root (TestMain)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tag := "plload:real-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if out, err := exec.CommandContext(ctx, k.nodeScript, "image", tag, exe).CombinedOutput(); err != nil {
		t.Fatalf("loading %s: %v\n%s", tag, err, out)
	}

	// The mock on the bridge, where the pods reach it.
	ln, err := net.Listen("tcp", kubeBridge+":0")
	if err != nil {
		t.Fatalf("no bridge %s to serve the mock on: %v", kubeBridge, err)
	}
	mockAddr := ln.Addr().String()
	ln.Close()
	var mockLog bytes.Buffer
	plloadProcess(t, &mockLog, "mockserver", "--addr", mockAddr, "--ttft", "20ms", "--tps", "200")
	scenario := filepath.Join(dir, "chat.yaml")
	if err := os.WriteFile(scenario, fmt.Appendf(nil, realKubeScenario, mockAddr), 0o644); err != nil {
		t.Fatal(err)
	}

	// The namespace, the token Secret and the claim, as docs/deployment.md says.
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	ns, pv := "plload-real-"+suffix, "plload-real-"+suffix
	// The claim's folder; the pods' uid must be able to reach it through the test's folders (0700).
	results := filepath.Join(dir, "results")
	if err := os.Mkdir(results, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	k.must(ctx, t, nil, "create", "namespace", ns)
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		k.run(c, nil, "delete", "namespace", ns, "--wait=true")
		k.run(c, nil, "delete", "pv", pv)
	})
	k.must(ctx, t, nil, "-n", ns, "create", "secret", "generic", "plload-token", "--from-literal=token=real-kube-secret")
	k.must(ctx, t, fmt.Appendf(nil, `apiVersion: v1
kind: PersistentVolume
metadata: {name: %[1]s}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteMany], persistentVolumeReclaimPolicy: Retain, storageClassName: %[1]s, hostPath: {path: %[2]s, type: Directory}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: results, namespace: %[3]s}
spec: {accessModes: [ReadWriteMany], storageClassName: %[1]s, volumeName: %[1]s, resources: {requests: {storage: 1Gi}}}
`, pv, results, ns), "apply", "-f", "-")

	generate := func(extra ...string) string {
		args := append([]string{"k8s", scenario, "--shards", "3", "--name", "chat", "--image", tag, "--image-pull-policy", "IfNotPresent",
			"--namespace", ns, "--results-pvc", "results", "--results-init", "busybox:stable"}, extra...)
		out, err := exec.CommandContext(ctx, exe, args...).Output()
		if err != nil {
			t.Fatalf("plload %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}

	// Run 1: a shard killed mid-stage.
	stream := generate("--allow-partial", "--run-id", "r1")
	k.must(ctx, t, []byte(stream), "apply", "-f", "-")
	runDir := filepath.Join(results, "chat-r1")
	victim := filepath.Join(runDir, "shard-1")
	t.Cleanup(func() {
		if t.Failed() { // what the cluster saw, for the failure
			out, _ := k.run(context.Background(), nil, "-n", ns, "get", "jobs,pods", "-o", "wide")
			events, _ := k.run(context.Background(), nil, "-n", ns, "get", "events", "--sort-by=.lastTimestamp")
			t.Logf("the namespace %s:\n%s\n%s", ns, out, events)
		}
	})
	waitFor(t, 2*time.Minute, "shard 1's first records on the claim", func() bool {
		files, _ := filepath.Glob(filepath.Join(victim, "*", "stage_01", "profile_export.jsonl"+metrics.WritingSuffix))
		info, err := os.Stat(strings.Join(files, ""))
		return len(files) == 1 && err == nil && info.Size() > 0
	})
	pid := shardProcess(t, "/results/chat-r1/shard-1")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing shard 1 (pid %d): %v", pid, err)
	}
	killedAt := time.Now()
	waitShards, waitMerge := headerWaits(t, stream)
	code, out := k.sh(ctx, waitShards)
	if code != 0 || !strings.Contains(out, "plload: job/chat-r1 failed") {
		t.Fatalf("the shards' wait with a shard lost: exit %d; want 0 after saying the Job failed and resuming the merge:\n%s", code, out)
	}
	if took := time.Since(killedAt); took > 3*time.Minute {
		t.Errorf("the wait ended %v after the kill; want it to end when the Job fails", took)
	}
	if code, out := k.sh(ctx, waitMerge); code != 0 {
		logs, _ := k.run(ctx, nil, "-n", ns, "logs", "job/chat-r1-merge")
		t.Fatalf("the merge's wait: exit %d\n%s\nthe merge's log:\n%s", code, out, logs)
	}
	conds := k.must(ctx, t, nil, "-n", ns, "get", "job", "chat-r1", "-o", `jsonpath={.status.succeeded}/{.status.failed}/{.status.failedIndexes}`)
	if conds != "2/1/1" {
		t.Errorf("shard Job: succeeded/failed/failedIndexes %s; want 2/1/1 (only index 1 failed)", conds)
	}
	var man cluster.MergeManifest
	readJSON(t, filepath.Join(runDir, "merged", "merge.json"), &man)
	if !man.AllowPartial || len(man.Shards) != 3 || man.Shards[1].Problem == "" || man.Shards[0].Problem != "" || man.Shards[2].Problem != "" {
		t.Fatalf("merge.json: %+v; want partial, only shard 1 with a problem", man)
	}
	for stage := 1; stage <= 2; stage++ {
		name := fmt.Sprintf("stage_%02d", stage)
		sum := 0
		for i, s := range man.Shards {
			file := filepath.Join(s.Dir, name, "profile_export.jsonl")
			if i == 1 {
				file += metrics.WritingSuffix
				if stage == 2 {
					continue
				}
			}
			sum += countLines(t, strings.Replace(file, "/results", results, 1))
		}
		if merged := countLines(t, filepath.Join(runDir, "merged", name, "profile_export.jsonl")); merged == 0 || merged != sum {
			t.Errorf("run 1 %s: merged holds %d records, the shards %d", name, merged, sum)
		}
	}

	// Run 2: the same name, a new run id, beside run 1's Jobs; nothing killed, nothing cleaned up.
	stream = generate()
	run := strings.Fields(strings.TrimPrefix(stream, "# plload k8s: "))[0]
	if run == "chat-r1" || !strings.HasPrefix(run, "chat-") {
		t.Fatalf("the second generation's run is %q; want chat-<a new run id>", run)
	}
	k.must(ctx, t, []byte(stream), "apply", "-f", "-")
	waitShards, waitMerge = headerWaits(t, stream)
	if code, out := k.sh(ctx, waitShards); code != 0 || strings.Contains(out, "failed") {
		t.Fatalf("run 2's shards' wait: exit %d\n%s", code, out)
	}
	if code, out := k.sh(ctx, waitMerge); code != 0 {
		t.Fatalf("run 2's merge's wait: exit %d\n%s", code, out)
	}
	var man2 cluster.MergeManifest
	readJSON(t, filepath.Join(results, run, "merged", "merge.json"), &man2)
	if len(man2.Shards) != 3 {
		t.Fatalf("run 2's merge.json lists %d shards; want 3", len(man2.Shards))
	}
	for _, s := range man2.Shards {
		if s.Problem != "" {
			t.Errorf("run 2: shard %d: %s; want every shard whole", s.Index, s.Problem)
		}
	}
	sum := 0
	for _, s := range man2.Shards {
		sum += countLines(t, strings.Replace(filepath.Join(s.Dir, "stage_01", "profile_export.jsonl"), "/results", results, 1))
	}
	if merged := countLines(t, filepath.Join(results, run, "merged", "stage_01", "profile_export.jsonl")); merged == 0 || merged != sum {
		t.Errorf("run 2 stage_01: merged holds %d records, the shards %d", merged, sum)
	}
	t.Logf("run 1: shard 1 killed, the others whole, merged partial (%s); run 2 (%s) whole", man.Shards[1].Problem, run)
}

// shardProcess finds the pid of the shard process (a container's, seen from the node) whose
// results go to out.
func shardProcess(t *testing.T, out string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmd, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if len(args) > 2 && args[1] == "run" && bytes.Contains(cmd, []byte("\x00"+out+"\x00")) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	t.Fatalf("no process writes to %s", out)
	return 0
}
