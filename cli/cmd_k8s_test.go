package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/plload/plload/workload"
)

// k8sObjects is `plload k8s`'s stream decoded back into the typed objects, strictly: a field the
// types do not have fails the decode.
type k8sObjects struct {
	namespace *corev1.Namespace
	configMap *corev1.ConfigMap
	service   *corev1.Service
	jobs      map[string]*batchv1.Job // by app.kubernetes.io/component
	header    string
	kinds     []string
}

func decodeK8s(t *testing.T, stream string) k8sObjects {
	t.Helper()
	objs := k8sObjects{jobs: map[string]*batchv1.Job{}}
	docs := strings.Split(stream, "\n---\n")
	objs.header = docs[0]
	for i, doc := range docs[1:] {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %d: %v\n%s", i+1, err, doc)
		}
		objs.kinds = append(objs.kinds, tm.Kind)
		var into any
		switch tm.Kind {
		case "Namespace":
			objs.namespace = &corev1.Namespace{}
			into = objs.namespace
		case "ConfigMap":
			objs.configMap = &corev1.ConfigMap{}
			into = objs.configMap
		case "Service":
			objs.service = &corev1.Service{}
			into = objs.service
		case "Job":
			into = &batchv1.Job{}
		default:
			t.Fatalf("document %d: unexpected kind %q", i+1, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("document %d (%s): %v", i+1, tm.Kind, err)
		}
		if j, ok := into.(*batchv1.Job); ok {
			objs.jobs[j.Labels["app.kubernetes.io/component"]] = j
		}
	}
	return objs
}

// scenarioFile writes a concurrency scenario against the mock at tps tokens/s per stream.
func scenarioFile(t *testing.T, name string, concurrency int, tps float64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	body := fmt.Sprintf(`name: %s
seed: 3
target: {base_url: mock, mock: {ttft: 5ms, tps: %g}}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
session: {turns: {min: 2, max: 3}, user_input_tokens: {min: 5, max: 15}, max_output_tokens: {min: 5, max: 10}, think_time: {min: 10ms, max: 30ms}}
load:
  mode: concurrency
  stages:
    - {concurrency: %d, warmup: 1s, duration: 10s}
    - {concurrency: 2, warmup: 1s, duration: 10s}
`, name, tps, concurrency)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestK8sManifests(t *testing.T) {
	scenario := scenarioFile(t, "Chat_Peak", 100, 500)
	cases := []struct {
		name   string
		args   []string
		shards int32
		pvc    string
		ns     string
		// per shard: 25 streams (100 ÷ 4) × 500 chunks/s × 29 µs × 2 = 725m, + 100m;
		// 128 MiB + 25 × 384 KiB = 137.4 → 138 Mi.
		cpu, mem string
	}{
		{name: "4 shards on a PVC", args: []string{"--shards", "4", "--results-pvc", "load-results", "--namespace", "bench"},
			shards: 4, pvc: "load-results", ns: "bench", cpu: "825m", mem: "138Mi"},
		{name: "2 shards, emptyDir", args: []string{"--shards", "2"},
			shards: 2, cpu: "1550m", mem: "147Mi"}, // 50 streams: 1450m + 100m; 128 + 18.75 → 147 Mi
		{name: "3 shards: index 0 takes the remainder", args: []string{"--shards", "3", "--results-pvc", "r"},
			shards: 3, pvc: "r", cpu: "1086m", mem: "141Mi"}, // 34 streams: 986m + 100m; 128 + 12.75 → 141 Mi
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := plload(t, append([]string{"k8s", scenario, "--image", "ghcr.io/plload/plload:v1", "--run-id", "t1"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			objs := decodeK8s(t, out)
			wantKinds := []string{"ConfigMap", "Service", "Job", "Job"}
			if c.ns != "" {
				wantKinds = append([]string{"Namespace"}, wantKinds...)
			}
			if c.pvc != "" {
				wantKinds = append(wantKinds, "Job")
			}
			if d := cmp.Diff(wantKinds, objs.kinds); d != "" {
				t.Errorf("kinds (-want +got):\n%s", d)
			}
			checkScenarioConfigMap(t, objs.configMap)
			shard := objs.jobs["shard"]
			if shard == nil {
				t.Fatalf("no shard Job in:\n%s", out)
			}
			checkShardJob(t, shard, c.shards, c.pvc)
			res := shard.Spec.Template.Spec.Containers[0].Resources
			if got := res.Requests.Cpu().String(); got != c.cpu {
				t.Errorf("shard CPU request = %s, want %s", got, c.cpu)
			}
			if got := res.Requests.Memory().String(); got != c.mem {
				t.Errorf("shard memory request = %s, want %s", got, c.mem)
			}
			checkCoordinator(t, objs, c.shards)
			checkMerge(t, objs.jobs["merge"], c.pvc)
			for _, o := range []metav1.Object{objs.configMap, objs.service, objs.jobs["shard"], objs.jobs["coordinator"]} {
				if o.GetNamespace() != c.ns {
					t.Errorf("%s: namespace %q, want %q", o.GetName(), o.GetNamespace(), c.ns)
				}
			}
			validateObjects(t, objs, c.shards)
			if strings.Contains(out, "PLLOAD_TOKEN=") || strings.Contains(out, "stringData") {
				t.Errorf("the token must come from a Secret reference, never inline")
			}
		})
	}
}

func checkScenarioConfigMap(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	if cm == nil {
		t.Fatal("no ConfigMap")
	}
	sc, issues := workload.Parse("scenario.yaml", []byte(cm.Data["scenario.yaml"]), workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		t.Fatalf("the ConfigMap's scenario does not load: %v", err)
	}
	if sc.Name != "Chat_Peak" || sc.Load.Stages[0].Concurrency != 100 {
		t.Errorf("the ConfigMap's scenario is not the resolved one: name %q, concurrency %d", sc.Name, sc.Load.Stages[0].Concurrency)
	}
}

func checkShardJob(t *testing.T, j *batchv1.Job, shards int32, pvc string) {
	t.Helper()
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode = %v, want Indexed", j.Spec.CompletionMode)
	}
	if j.Spec.Parallelism == nil || j.Spec.Completions == nil || *j.Spec.Parallelism != shards || *j.Spec.Completions != shards {
		t.Errorf("parallelism %v, completions %v, want both %d", j.Spec.Parallelism, j.Spec.Completions, shards)
	}
	pod := j.Spec.Template.Spec
	c := pod.Containers[0]
	want := []string{"run", "/scenario/scenario.yaml", "--shard", "auto", "--shards", fmt.Sprint(shards),
		"--coordinator", "plload-chat-peak-t1-coordinator:7070", "--token-env", "PLLOAD_TOKEN",
		"--join-timeout", "5m", "--out", "/results/plload-chat-peak-t1/shard-$(JOB_COMPLETION_INDEX)"}
	if d := cmp.Diff(want, c.Args); d != "" {
		t.Errorf("shard args (-want +got):\n%s", d)
	}
	checkTokenRef(t, c)
	env := envByName(c)
	if ref := env["JOB_COMPLETION_INDEX"].ValueFrom; ref == nil || ref.FieldRef == nil {
		t.Errorf("JOB_COMPLETION_INDEX is not defined, so $(JOB_COMPLETION_INDEX) in --out may stay literal")
	}
	vols := volumesByName(pod)
	switch {
	case pvc != "" && (vols["results"].PersistentVolumeClaim == nil || vols["results"].PersistentVolumeClaim.ClaimName != pvc):
		t.Errorf("results volume = %+v, want the PVC %s", vols["results"].VolumeSource, pvc)
	case pvc == "" && vols["results"].EmptyDir == nil:
		t.Errorf("results volume = %+v, want an emptyDir", vols["results"].VolumeSource)
	}
	if vols["scenario"].ConfigMap == nil || vols["scenario"].ConfigMap.Name != "plload-chat-peak-t1-scenario" {
		t.Errorf("scenario volume = %+v", vols["scenario"].VolumeSource)
	}
	if res := c.Resources; res.Requests.Cpu().MilliValue() <= 0 || res.Requests.Memory().Value() <= 0 ||
		res.Limits.Memory().Cmp(*res.Requests.Memory()) < 0 {
		t.Errorf("resources %+v: want requests > 0 and a memory limit ≥ the request", res)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		t.Errorf("a CPU limit throttles the shard in whole CFS periods; want none")
	}
	if j.Spec.BackoffLimit != nil || j.Spec.BackoffLimitPerIndex == nil || *j.Spec.BackoffLimitPerIndex != 0 ||
		j.Spec.MaxFailedIndexes == nil || *j.Spec.MaxFailedIndexes != shards-1 || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("a failed shard must fail its index alone and not run again after the barrier: backoffLimit %v, backoffLimitPerIndex %v, maxFailedIndexes %v, restartPolicy %s",
			j.Spec.BackoffLimit, j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes, pod.RestartPolicy)
	}
	checkNonRoot(t, pod)
}

func checkCoordinator(t *testing.T, objs k8sObjects, shards int32) {
	t.Helper()
	svc, job := objs.service, objs.jobs["coordinator"]
	if svc == nil || job == nil {
		t.Fatal("no coordinator Service or Job")
	}
	if svc.Name != "plload-chat-peak-t1-coordinator" || svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Ports[0].Port != 7070 {
		t.Errorf("Service %s: clusterIP %q, ports %+v; want headless on 7070, named as --coordinator dials", svc.Name, svc.Spec.ClusterIP, svc.Spec.Ports)
	}
	if !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("the Service must publish the coordinator before it is Ready: it has no readiness probe to pass")
	}
	if !selects(svc.Spec.Selector, job.Spec.Template.Labels) {
		t.Errorf("the Service selects %v, which the coordinator pod does not carry (%v)", svc.Spec.Selector, job.Spec.Template.Labels)
	}
	if selects(svc.Spec.Selector, objs.jobs["shard"].Spec.Template.Labels) {
		t.Errorf("the coordinator Service also selects the shard pods")
	}
	c := job.Spec.Template.Spec.Containers[0]
	want := []string{"coordinate", "--shards", fmt.Sprint(shards), "--listen", "0.0.0.0:7070", "--token-env", "PLLOAD_TOKEN", "--join-timeout", "5m"}
	if d := cmp.Diff(want, c.Args); d != "" {
		t.Errorf("coordinator args (-want +got):\n%s", d)
	}
	checkTokenRef(t, c)
	checkNonRoot(t, job.Spec.Template.Spec)
}

func checkMerge(t *testing.T, j *batchv1.Job, pvc string) {
	t.Helper()
	if pvc == "" {
		if j != nil {
			t.Errorf("a merge Job over emptyDirs it cannot see: %+v", j.Spec.Template.Spec.Containers[0].Args)
		}
		return
	}
	if j == nil {
		t.Fatal("no merge Job")
	}
	c := j.Spec.Template.Spec.Containers[0]
	want := []string{"merge", "/results/plload-chat-peak-t1/shard-*/*", "--out", "/results/plload-chat-peak-t1/merged"}
	if d := cmp.Diff(want, c.Args); d != "" {
		t.Errorf("merge args (-want +got):\n%s", d)
	}
	if j.Spec.Suspend == nil || !*j.Spec.Suspend {
		t.Errorf("the merge Job must wait (suspended) for the shards")
	}
	if v := volumesByName(j.Spec.Template.Spec)["results"]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvc {
		t.Errorf("merge results volume = %+v, want the PVC %s", v.VolumeSource, pvc)
	}
	checkNonRoot(t, j.Spec.Template.Spec)
}

func checkTokenRef(t *testing.T, c corev1.Container) {
	t.Helper()
	e, ok := envByName(c)["PLLOAD_TOKEN"]
	if !ok || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
		e.ValueFrom.SecretKeyRef.Name != "plload-token" || e.ValueFrom.SecretKeyRef.Key != "token" {
		t.Errorf("%s: PLLOAD_TOKEN = %+v, want a reference to Secret plload-token key token", c.Name, e)
	}
}

func checkNonRoot(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	ps, cs := pod.SecurityContext, pod.Containers[0].SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
		t.Errorf("pod security context %+v: want runAsNonRoot and a non-zero uid", ps)
	}
	if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
		cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v: want readOnlyRootFilesystem and no privilege escalation", cs)
	}
}

// validateObjects runs the API machinery's own checks of names, labels and references: the
// kubernetes/pkg validation of whole objects is not importable without the whole of k8s.io/kubernetes.
func validateObjects(t *testing.T, objs k8sObjects, shards int32) {
	t.Helper()
	var errs field.ErrorList
	// Namespaced objects; without --namespace kubectl fills it in.
	namespaced := objs.configMap.Namespace != ""
	errs = append(errs, apivalidation.ValidateObjectMeta(&objs.configMap.ObjectMeta, namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("configMap"))...)
	errs = append(errs, apivalidation.ValidateObjectMeta(&objs.service.ObjectMeta, namespaced, apivalidation.NameIsDNS1035Label, field.NewPath("service"))...)
	errs = append(errs, metavalidation.ValidateLabels(objs.service.Spec.Selector, field.NewPath("service", "selector"))...)
	for comp, j := range objs.jobs {
		path := field.NewPath(comp)
		errs = append(errs, apivalidation.ValidateObjectMeta(&j.ObjectMeta, namespaced, apivalidation.NameIsDNSLabel, path)...)
		errs = append(errs, metavalidation.ValidateLabels(j.Spec.Template.Labels, path.Child("template", "labels"))...)
		// The Job controller copies the Job's name into a label value of every pod.
		for _, m := range validation.IsValidLabelValue(j.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), j.Name, m))
		}
		pod := j.Spec.Template.Spec
		vols := volumesByName(pod)
		for i, c := range pod.Containers {
			cp := path.Child("containers").Index(i)
			for _, m := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(cp.Child("name"), c.Name, m))
			}
			for _, e := range c.Env {
				for _, m := range validation.IsEnvVarName(e.Name) {
					errs = append(errs, field.Invalid(cp.Child("env"), e.Name, m))
				}
			}
			for _, vm := range c.VolumeMounts {
				if _, ok := vols[vm.Name]; !ok {
					errs = append(errs, field.NotFound(cp.Child("volumeMounts"), vm.Name))
				}
			}
		}
		for _, v := range pod.Volumes {
			for _, m := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(path.Child("volumes"), v.Name, m))
			}
		}
	}
	// An Indexed Job's pods are named (and hostnamed) <job>-<index>: the largest index must fit a label.
	last := fmt.Sprintf("%s-%d", objs.jobs["shard"].Name, shards-1)
	for _, m := range validation.IsDNS1123Label(last) {
		errs = append(errs, field.Invalid(field.NewPath("shard", "hostname"), last, m))
	}
	for _, e := range errs {
		t.Errorf("validation: %v", e)
	}
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func envByName(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

func volumesByName(pod corev1.PodSpec) map[string]corev1.Volume {
	m := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		m[v.Name] = v
	}
	return m
}

// TestK8sLongNameFits: a long scenario name is cut so the shard pods' hostnames stay legal.
func TestK8sLongNameFits(t *testing.T) {
	scenario := scenarioFile(t, strings.Repeat("very_long_scenario_name_", 6), 10, 40)
	code, out, errOut := plload(t, "k8s", scenario, "--shards", "99999", "--image", "img")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	validateObjects(t, decodeK8s(t, out), 99999)
}

func TestDeployBadFlags(t *testing.T) {
	scenario := scenarioFile(t, "flags", 10, 40)
	cases := []struct {
		args []string
		flag string // the error names it
	}{
		{[]string{"k8s", scenario, "--image", "img"}, "--shards"},
		{[]string{"k8s", scenario, "--shards", "0", "--image", "img"}, "--shards"},
		{[]string{"k8s", scenario, "--shards", "1", "--image", "img"}, "plload run"},
		{[]string{"k8s", scenario, "--shards", "2", "--image", "img", "--run-id", "Run-1"}, "--run-id"},
		{[]string{"k8s", scenario, "--shards", "2", "--image", "img", "--image-pull-policy", "sometimes"}, "--image-pull-policy"},
		{[]string{"k8s", scenario, "--shards", "2", "--image", "img", "--results-init", "busybox"}, "--results-pvc"},
		{[]string{"k8s", scenario, "--shards", "100001", "--image", "img"}, "--shards"},
		{[]string{"k8s", scenario, "--shards", "two", "--image", "img"}, "shards"},
		{[]string{"k8s", scenario, "--shards", "2"}, "--image"},
		{[]string{"k8s", scenario, "--shards", "2", "--image", "a b"}, "--image"},
		{[]string{"k8s", scenario, "--shards", "2", "--image", "img", "--namespace", "Load_Test"}, "--namespace"},
		{[]string{"k8s", scenario, "--shards", "2", "--image", "img", "--results-pvc", "My PVC"}, "--results-pvc"},
		{[]string{"k8s", scenario, "--shards", "2", "--image", "img", "--token-secret", ""}, "--token-secret"},
		{[]string{"k8s", scenario, "--shards", "2", "--image", "img", "--name", "Bad_Name"}, "--name"},
		{[]string{"k8s", "--shards", "2", "--image", "img"}, "scenario"},
		{[]string{"slurm", scenario}, "--shards"},
		{[]string{"slurm", scenario, "--shards", "-1"}, "--shards"},
		{[]string{"slurm", scenario, "--shards", "1"}, "plload run"},
		{[]string{"slurm", scenario, "--shards", "2", "--time", "90"}, "--time"},
		{[]string{"slurm", scenario, "--shards", "2", "--time", "1:99:00"}, "--time"},
		{[]string{"slurm", scenario, "--shards", "2", "--partition", "gpu; rm -rf /"}, "--partition"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[2:], " "), func(t *testing.T) {
			code, out, errOut := plload(t, c.args...)
			if code != exitBadInput {
				t.Fatalf("exit %d, want %d; stderr: %s", code, exitBadInput, errOut)
			}
			if !strings.Contains(errOut, c.flag) {
				t.Errorf("the error does not name %s: %s", c.flag, errOut)
			}
			if strings.Contains(out, "apiVersion") || strings.Contains(out, "#SBATCH") {
				t.Errorf("printed manifests or a script on a bad flag:\n%s", out)
			}
		})
	}
}

// TestK8sFlagsReachObjects: each of plload k8s's run flags lands in the objects it is for, and without
// --run-id every output gets a valid run id of its own in its names.
func TestK8sFlagsReachObjects(t *testing.T) {
	scenario := scenarioFile(t, "Chat_Peak", 10, 40)
	code, out, errOut := plload(t, "k8s", scenario, "--shards", "2", "--image", "img:latest", "--results-pvc", "r",
		"--allow-partial", "--image-pull-policy", "Never", "--results-init", "busybox:1.36", "--run-id", "x9")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	objs := decodeK8s(t, out)
	if args := objs.jobs["merge"].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--allow-partial") {
		t.Errorf("merge args %q lack --allow-partial", args)
	}
	for comp, j := range objs.jobs {
		pod := j.Spec.Template.Spec
		for _, c := range append(pod.InitContainers, pod.Containers...) {
			if c.ImagePullPolicy != corev1.PullNever {
				t.Errorf("%s/%s: imagePullPolicy %q, want Never", comp, c.Name, c.ImagePullPolicy)
			}
		}
		if !strings.HasPrefix(j.Name, "plload-chat-peak-x9") {
			t.Errorf("%s Job %s lacks the run id", comp, j.Name)
		}
	}
	if ic := objs.jobs["shard"].Spec.Template.Spec.InitContainers; len(ic) != 1 || ic[0].Image != "busybox:1.36" {
		t.Errorf("shard init containers %+v, want busybox:1.36", ic)
	}
	validateObjects(t, objs, 2)

	code, out, errOut = plload(t, "k8s", scenario, "--shards", "2", "--image", "img")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	name := decodeK8s(t, out).jobs["shard"].Name
	if !regexp.MustCompile(`^plload-chat-peak-[a-z0-9]{1,8}$`).MatchString(name) {
		t.Errorf("shard Job %q: want plload-chat-peak-<run id>", name)
	}
}
