package deploy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/plload/plload/workload"
)

// stream is WriteK8s's output decoded back, strictly, into the typed objects, in order.
type stream struct {
	header string
	objs   []metav1.Object
	kinds  []string
}

func (s stream) job(component string) *batchv1.Job {
	for _, o := range s.objs {
		if j, ok := o.(*batchv1.Job); ok && j.Labels["app.kubernetes.io/component"] == component {
			return j
		}
	}
	return nil
}

func (s stream) jobs() []*batchv1.Job {
	var js []*batchv1.Job
	for _, o := range s.objs {
		if j, ok := o.(*batchv1.Job); ok {
			js = append(js, j)
		}
	}
	return js
}

func testPlan(t *testing.T, shards int) *Plan {
	t.Helper()
	sc, issues := workload.Parse("t.yaml", []byte(scenarioHead+`session: {user_input_tokens: {min: 5, max: 10}, turns: 1, think_time: {min: 1s, max: 1s}, max_output_tokens: {min: 40, max: 40}}
load: {mode: concurrency, drain_timeout: 30s, stages: [{concurrency: 8, warmup: 10s, duration: 60s}, {concurrency: 4, duration: 120s}]}
`), workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(sc, Options{Shards: shards, Name: "load"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testOptions() K8sOptions {
	return K8sOptions{Image: "ghcr.io/plload/plload:v1", TokenSecret: "plload-token", ResultsPVC: "results", RunID: "r1"}
}

func generate(t *testing.T, p *Plan, o K8sOptions) stream {
	t.Helper()
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteK8s(&b, p, o); err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(b.String(), "\n---\n")
	s := stream{header: docs[0]}
	for i, doc := range docs[1:] {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		var obj metav1.Object
		switch tm.Kind {
		case "Namespace":
			obj = &corev1.Namespace{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		case "Service":
			obj = &corev1.Service{}
		case "Job":
			obj = &batchv1.Job{}
		default:
			t.Fatalf("document %d: unexpected kind %q", i+1, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("document %d (%s): %v", i+1, tm.Kind, err)
		}
		s.objs, s.kinds = append(s.objs, obj), append(s.kinds, tm.Kind)
	}
	return s
}

// TestK8sLostShardLeavesOthers: one failed index must not fail the shard Job (which would stop the
// other shards mid-run): each index fails on its own, up to all but one, and the Job-wide backoff
// stays unset (backoffLimit: 0 fails the Job at the first failed pod, whatever the per-index limit).
func TestK8sLostShardLeavesOthers(t *testing.T) {
	for _, shards := range []int{2, 5} {
		s := generate(t, testPlan(t, shards), testOptions())
		j := s.job(ComponentShard)
		spec := j.Spec
		if spec.BackoffLimit != nil {
			t.Errorf("%d shards: backoffLimit %d; want unset, so one failed index does not fail the Job", shards, *spec.BackoffLimit)
		}
		if spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex != 0 {
			t.Errorf("%d shards: backoffLimitPerIndex %v, want 0 (a failed shard is not run again after the barrier)", shards, spec.BackoffLimitPerIndex)
		}
		if spec.MaxFailedIndexes == nil || *spec.MaxFailedIndexes != int32(shards-1) {
			t.Errorf("%d shards: maxFailedIndexes %v, want %d (any shard may fail and the rest go on)", shards, spec.MaxFailedIndexes, shards-1)
		}
		if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("restartPolicy %s: per-index backoff needs Never", spec.Template.Spec.RestartPolicy)
		}
		for _, c := range []string{ComponentCoordinator, ComponentMerge} {
			if b := s.job(c).Spec.BackoffLimit; b == nil || *b != 0 {
				t.Errorf("%s Job: backoffLimit %v, want 0", c, b)
			}
		}
	}
}

// TestK8sAllowPartial: --allow-partial reaches plload merge; without it the merge refuses a lost shard.
func TestK8sAllowPartial(t *testing.T) {
	p := testPlan(t, 3)
	for _, allow := range []bool{false, true} {
		o := testOptions()
		o.AllowPartial = allow
		args := generate(t, p, o).job(ComponentMerge).Spec.Template.Spec.Containers[0].Args
		if got := slices.Contains(args, "--allow-partial"); got != allow {
			t.Errorf("AllowPartial %v: merge args %q", allow, args)
		}
	}
}

// TestK8sNamespaceFirst: with a namespace, the stream creates it before anything that lives in it,
// and does not label it as the run's (deleting a run by its label must not delete the namespace).
func TestK8sNamespaceFirst(t *testing.T) {
	p := testPlan(t, 2)
	o := testOptions()
	o.Namespace = "bench"
	s := generate(t, p, o)
	if s.kinds[0] != "Namespace" || s.objs[0].GetName() != "bench" {
		t.Fatalf("first object %s %q, want the Namespace bench (kinds %v)", s.kinds[0], s.objs[0].GetName(), s.kinds)
	}
	if _, ok := s.objs[0].GetLabels()["app.kubernetes.io/instance"]; ok {
		t.Errorf("the Namespace carries the run's instance label: kubectl delete -l would delete it")
	}
	for _, obj := range s.objs[1:] {
		if obj.GetNamespace() != "bench" {
			t.Errorf("%s: namespace %q", obj.GetName(), obj.GetNamespace())
		}
	}
	if s := generate(t, p, testOptions()); slices.Contains(s.kinds, "Namespace") {
		t.Errorf("a Namespace without --namespace: %v", s.kinds)
	}
}

// TestK8sRunID: two outputs of one name with different run ids share no object name and no results
// directory, and the merge reads only its own run's shards.
func TestK8sRunID(t *testing.T) {
	p := testPlan(t, 2)
	names := map[string]string{}
	for _, id := range []string{"a1", "b2"} {
		o := testOptions()
		o.RunID = id
		s := generate(t, p, o)
		run := "load-" + id
		for i, obj := range s.objs {
			key := s.kinds[i] + "/" + obj.GetName()
			if prev, ok := names[key]; ok {
				t.Errorf("%s is in runs %s and %s: a re-run would leave it unchanged", key, prev, id)
			}
			names[key] = id
			if !strings.HasPrefix(obj.GetName(), run) {
				t.Errorf("%s: name does not start with the run %s", key, run)
			}
			if l := obj.GetLabels(); l["app.kubernetes.io/instance"] != run || l["app.kubernetes.io/part-of"] != "load" {
				t.Errorf("%s: labels %v, want instance %s and part-of load", key, l, run)
			}
		}
		shard := s.job(ComponentShard).Spec.Template.Spec.Containers[0].Args
		if got := shard[len(shard)-1]; got != "/results/"+run+"/shard-$(JOB_COMPLETION_INDEX)" {
			t.Errorf("shard --out %s", got)
		}
		if got := shard[slices.Index(shard, "--coordinator")+1]; got != run+"-coordinator:7070" {
			t.Errorf("shard --coordinator %s, want the run's Service", got)
		}
		merge := s.job(ComponentMerge).Spec.Template.Spec.Containers[0].Args
		want := []string{"merge", "/results/" + run + "/shard-*/*", "--out", "/results/" + run + "/merged"}
		if !slices.Equal(merge, want) {
			t.Errorf("merge args %q, want %q", merge, want)
		}
	}
	for _, bad := range []string{"", "A1", "a-1", "123456789", "a b"} {
		o := testOptions()
		o.RunID = bad
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), "--run-id") {
			t.Errorf("RunID %q: %v, want an error naming --run-id", bad, err)
		}
	}
}

// TestK8sPullPolicy: the policy is on every container, init containers included; unset leaves
// Kubernetes' default; anything else is refused.
func TestK8sPullPolicy(t *testing.T) {
	p := testPlan(t, 2)
	for _, policy := range []string{"", "Never", "IfNotPresent", "Always"} {
		o := testOptions()
		o.PullPolicy, o.ResultsInit = policy, "busybox:1.36"
		n := 0
		for _, j := range generate(t, p, o).jobs() {
			pod := j.Spec.Template.Spec
			for _, c := range append(pod.InitContainers, pod.Containers...) {
				n++
				if string(c.ImagePullPolicy) != policy {
					t.Errorf("%s/%s: imagePullPolicy %q, want %q", j.Name, c.Name, c.ImagePullPolicy, policy)
				}
			}
		}
		if n != 4 {
			t.Errorf("%d containers, want 4 (coordinator, results init, shard, merge)", n)
		}
	}
	o := testOptions()
	o.PullPolicy = "always"
	if err := o.Check(); err == nil || !strings.Contains(err.Error(), "--image-pull-policy") {
		t.Errorf("PullPolicy always: %v, want an error naming --image-pull-policy", err)
	}
}

// TestK8sResultsInit: the init container runs as root, only in the shard pods, and makes the run's
// directory on the claim the pods' uid's; it needs a claim.
func TestK8sResultsInit(t *testing.T) {
	p := testPlan(t, 2)
	o := testOptions()
	if pod := generate(t, p, o).job(ComponentShard).Spec.Template.Spec; len(pod.InitContainers) != 0 {
		t.Errorf("an init container without --results-init: %+v", pod.InitContainers)
	}
	o.ResultsInit = "busybox:1.36"
	s := generate(t, p, o)
	pod := s.job(ComponentShard).Spec.Template.Spec
	if len(pod.InitContainers) != 1 {
		t.Fatalf("init containers %+v, want one", pod.InitContainers)
	}
	ic := pod.InitContainers[0]
	if ic.Image != "busybox:1.36" {
		t.Errorf("init image %s", ic.Image)
	}
	sc := ic.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.RunAsNonRoot == nil || *sc.RunAsNonRoot {
		t.Errorf("init security context %+v: want uid 0 and runAsNonRoot false (the pod's is true)", sc)
	}
	if sc != nil && (sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Add, "CHOWN") || !slices.Contains(sc.Capabilities.Drop, "ALL")) {
		t.Errorf("init capabilities %+v: want ALL dropped and CHOWN added", sc.Capabilities)
	}
	script := strings.Join(append(ic.Command, ic.Args...), " ")
	for _, want := range []string{"mkdir -p /results/load-r1", fmt.Sprintf("chown %d:%d /results/load-r1", nonRootID, nonRootID)} {
		if !strings.Contains(script, want) {
			t.Errorf("init command %q does not %q", script, want)
		}
	}
	if !slices.ContainsFunc(ic.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "results" && m.MountPath == "/results" }) {
		t.Errorf("init mounts %+v, want results at /results", ic.VolumeMounts)
	}
	for _, c := range []string{ComponentCoordinator, ComponentMerge} {
		if n := len(s.job(c).Spec.Template.Spec.InitContainers); n != 0 {
			t.Errorf("%s Job: %d init containers", c, n)
		}
	}
	o.ResultsPVC = ""
	if err := o.Check(); err == nil || !strings.Contains(err.Error(), "--results-pvc") {
		t.Errorf("ResultsInit without a claim: %v, want an error naming --results-pvc", err)
	}
}

// TestK8sResultsVolumeNamed: the containers that write to the claim carry its name in
// workload.ResultsVolumeEnv, so plload run, refused by the directory, names the claim; with no claim
// (an emptyDir) there is nothing to name.
// Catches: a shard refused with only "mkdir /results/…: permission denied", the claim unnamed.
func TestK8sResultsVolumeNamed(t *testing.T) {
	p := testPlan(t, 2)
	o := testOptions()
	s := generate(t, p, o)
	for _, component := range []string{ComponentShard, ComponentMerge} {
		env := s.job(component).Spec.Template.Spec.Containers[0].Env
		if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool {
			return e.Name == workload.ResultsVolumeEnv && strings.Contains(e.Value, "PersistentVolumeClaim results")
		}) {
			t.Errorf("%s container env %+v: no %s naming the claim", component, env, workload.ResultsVolumeEnv)
		}
	}
	o.ResultsPVC = ""
	env := generate(t, p, o).job(ComponentShard).Spec.Template.Spec.Containers[0].Env
	if slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == workload.ResultsVolumeEnv }) {
		t.Errorf("an emptyDir named as a claim: %+v", env)
	}
}
