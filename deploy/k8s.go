package deploy

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// K8sOptions are `plload k8s`'s choices besides the plan.
type K8sOptions struct {
	Image     string
	Namespace string // "" leaves it to kubectl's context
	// ResultsPVC names a PersistentVolumeClaim (ReadWriteMany) that every shard and the merge
	// mount at /results; "" gives each shard an emptyDir, lost with its pod, and no merge Job.
	ResultsPVC  string
	TokenSecret string // the Secret holding the coordinator token under key "token"
	// RunID tells this output's run from another of the same name: it is in every object's name and
	// the results path, so a re-run applies new Jobs and writes its own directory.
	RunID string
	// AllowPartial makes the merge Job pass --allow-partial, and the printed wait resume it after a
	// shard Job that failed (a lost shard) too.
	AllowPartial bool
	// PullPolicy is every container's imagePullPolicy; "" leaves Kubernetes' default.
	PullPolicy string
	// ResultsInit is an image with a shell, mkdir and chown (busybox): a root init container in the
	// shard pods makes the run's directory on the claim the pods' own; "" none.
	ResultsInit string
}

// Paths inside the pods.
const (
	scenarioDir = "/scenario"
	resultsDir  = "/results"
	// nonRootID is the uid and gid the Dockerfile's USER names (distroless' "nonroot").
	nonRootID = 65532
	// TokenKey is the key of the coordinator token in the token Secret; APIKeyKey that of the
	// target's API key, when the scenario names api_key_env.
	TokenKey  = "token"
	APIKeyKey = "api-key"
)

// JoinTimeout is --join-timeout on both sides in Kubernetes, over run's 60 s default: the pods are
// scheduled, and their image pulled, one node at a time, so the last shard may join minutes after
// the first. It also bounds each stage's barrier, so a dead shard holds the others this long.
const JoinTimeout = "5m"

// Component labels, one per role.
const (
	ComponentCoordinator = "coordinator"
	ComponentShard       = "shard"
	ComponentMerge       = "merge"
)

// maxRunIDLen keeps the longest derived name legal: "<name>-<run id>-coordinator" is at most
// maxNameLen + 1 + 8 + 12 = 61 characters, a label value's 63 and a Service's DNS label.
const maxRunIDLen = 8

var runIDRE = regexp.MustCompile(`^[a-z0-9]{1,8}$`)

// RunID is a default run id: the time in seconds, base 36 (6 characters until 2038), so two
// outputs a second apart differ and sort by age within a name.
func RunID(now time.Time) string { return strconv.FormatInt(now.Unix(), 36) }

// Check refuses options Kubernetes would refuse, naming the flag.
func (o K8sOptions) Check() error {
	if o.Image == "" || strings.ContainsAny(o.Image, " \t\r\n") {
		return fmt.Errorf("--image: %q is not an image reference; give one such as ghcr.io/you/plload:v1", o.Image)
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace: %q: %s", o.Namespace, strings.Join(errs, "; "))
		}
	}
	if !runIDRE.MatchString(o.RunID) {
		return fmt.Errorf("--run-id: %q is not a run id; use 1 to %d lowercase letters and digits", o.RunID, maxRunIDLen)
	}
	switch corev1.PullPolicy(o.PullPolicy) {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("--image-pull-policy: %q is not a pull policy; give Always, IfNotPresent or Never", o.PullPolicy)
	}
	if o.ResultsInit != "" {
		if o.ResultsPVC == "" {
			return fmt.Errorf("--results-init makes a directory on the results claim: give --results-pvc too")
		}
		if strings.ContainsAny(o.ResultsInit, " \t\r\n") {
			return fmt.Errorf("--results-init: %q is not an image reference; give one with a shell, mkdir and chown, such as busybox:1.36", o.ResultsInit)
		}
	}
	for _, f := range []struct{ flag, v string }{{"--results-pvc", o.ResultsPVC}, {"--token-secret", o.TokenSecret}} {
		if f.v == "" && f.flag == "--results-pvc" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(f.v); len(errs) > 0 {
			return fmt.Errorf("%s: %q: %s", f.flag, f.v, strings.Join(errs, "; "))
		}
	}
	return nil
}

// k8sRun is one generated run: the plan, the options, and the run's name "<name>-<run id>", which
// every object's name, the instance label and the results directory carry, so that a second
// output for the same --name applies new Jobs (apply leaves a finished Job "unchanged") and writes
// a directory of its own (the merge's shard-*/* sees only its own run).
type k8sRun struct {
	p   *Plan
	o   K8sOptions
	run string
}

func newK8sRun(p *Plan, o K8sOptions) k8sRun { return k8sRun{p: p, o: o, run: p.Name + "-" + o.RunID} }

func (r k8sRun) coordinatorName() string { return r.run + "-coordinator" }
func (r k8sRun) mergeName() string       { return r.run + "-merge" }
func (r k8sRun) scenarioName() string    { return r.run + "-scenario" }
func (r k8sRun) results() string         { return resultsDir + "/" + r.run }

// coordinatorAddr is what the shards dial: the headless Service's name resolves, in the namespace,
// to the coordinator pod's address.
func (r k8sRun) coordinatorAddr() string {
	return r.coordinatorName() + ":" + strconv.Itoa(CoordinatorPort)
}

// Manifests builds the objects, in the order they are applied: the namespace (when named), the
// scenario, the coordinator's Service and Job, the shards' Indexed Job, and (with a results PVC)
// the merge Job.
//
// The coordinator is its own one-pod Job rather than `run --coordinate` on index 0: every pod of an
// Indexed Job shares one template, and the image has no shell to add a flag for index 0 alone.
func Manifests(p *Plan, o K8sOptions) []runtime.Object {
	r := newK8sRun(p, o)
	var objs []runtime.Object
	if o.Namespace != "" {
		// Unlabelled: deleting a run by its labels must not take the namespace (and what else is in
		// it) along; applying it over an existing namespace changes nothing but an annotation.
		objs = append(objs, &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: o.Namespace},
		})
	}
	objs = append(objs,
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: r.meta(r.scenarioName(), ""),
			Data:       map[string]string{"scenario.yaml": string(p.Scenario)},
		},
		r.coordinatorService(),
		r.coordinatorJob(),
		r.shardJob(),
	)
	if o.ResultsPVC != "" {
		objs = append(objs, r.mergeJob())
	}
	return objs
}

// WriteK8s writes the objects as one YAML stream, after a comment saying how to run it.
func WriteK8s(w io.Writer, p *Plan, o K8sOptions) error {
	var buf bytes.Buffer
	buf.WriteString(newK8sRun(p, o).header())
	for _, obj := range Manifests(p, o) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("writing the manifests: %w", err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func (r k8sRun) labels(component string) map[string]string {
	l := map[string]string{"app.kubernetes.io/name": "plload", "app.kubernetes.io/instance": r.run,
		"app.kubernetes.io/part-of": r.p.Name}
	if component != "" {
		l["app.kubernetes.io/component"] = component
	}
	return l
}

func (r k8sRun) meta(name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: r.o.Namespace, Labels: r.labels(component)}
}

func (r k8sRun) coordinatorService() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: r.meta(r.coordinatorName(), ComponentCoordinator),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, // headless: the name is the pod's own address
			Selector:  r.labels(ComponentCoordinator),
			// The coordinator has no readiness probe to pass; shards dial it as soon as it exists.
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "coordinator", Port: CoordinatorPort,
				TargetPort: intstr.FromInt32(CoordinatorPort), Protocol: corev1.ProtocolTCP}},
		},
	}
}

func (r k8sRun) coordinatorJob() *batchv1.Job {
	c := r.container("coordinator", []string{"coordinate",
		"--shards", strconv.Itoa(r.p.Shards),
		"--listen", "0.0.0.0:" + strconv.Itoa(CoordinatorPort),
		"--token-env", TokenEnv,
		"--join-timeout", JoinTimeout})
	c.Env = append(c.Env, secretEnv(TokenEnv, r.o.TokenSecret, TokenKey))
	c.Ports = []corev1.ContainerPort{{Name: "coordinator", ContainerPort: CoordinatorPort, Protocol: corev1.ProtocolTCP}}
	// A barrier and a clock, no load: a small fixed request.
	c.Resources = resources(Resources{CPUMillicores: 100, MemoryMiB: 64, MemoryLimMiB: 128})
	return r.job(r.coordinatorName(), ComponentCoordinator, podSpec(c, nil), r.p.K8sDeadlineSeconds())
}

func (r k8sRun) shardJob() *batchv1.Job {
	c := r.container("shard", []string{"run", scenarioDir + "/scenario.yaml",
		"--shard", "auto", "--shards", strconv.Itoa(r.p.Shards),
		"--coordinator", r.coordinatorAddr(),
		"--token-env", TokenEnv,
		"--join-timeout", JoinTimeout,
		"--out", r.results() + "/shard-$(JOB_COMPLETION_INDEX)"})
	// The Job controller sets JOB_COMPLETION_INDEX too; naming it here makes $(JOB_COMPLETION_INDEX)
	// in the args expand on every cluster (the controller leaves a variable the pod already defines).
	c.Env = append([]corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}},
		c.Env...)
	c.Env = append(c.Env, secretEnv(TokenEnv, r.o.TokenSecret, TokenKey))
	if r.p.APIKeyEnv != "" {
		c.Env = append(c.Env, secretEnv(r.p.APIKeyEnv, r.o.TokenSecret, APIKeyKey))
	}
	c.Resources = resources(r.p.Resources)
	results := withResults(&c, r.o)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "scenario", MountPath: scenarioDir, ReadOnly: true})
	spec := podSpec(c, []corev1.Volume{results, {Name: "scenario", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.scenarioName()}}}}})
	if r.o.ResultsInit != "" {
		spec.InitContainers = []corev1.Container{r.resultsInit()}
	}
	// Shards on different nodes where the cluster allows: two shards on one node share its NIC and CPUs.
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
		WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: r.labels(ComponentShard)}}}
	j := r.job(r.run, ComponentShard, spec, r.p.K8sDeadlineSeconds())
	n := int32(r.p.Shards)
	mode := batchv1.IndexedCompletion
	j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism = &mode, &n, &n
	// A lost shard fails its own index, not the Job: the Job-wide backoffLimit (0 on the other Jobs)
	// would fail the Job at the first failed pod and the controller would stop every other shard
	// mid-run. Each index runs once (a shard started again would miss the others' barrier), and any
	// N-1 may fail: the coordinator and the surviving shards carry the run on (docs/deployment.md).
	// backoffLimit stays unset: with a per-index limit it defaults to "no limit".
	perIndex, maxFailed := int32(0), n-1
	j.Spec.BackoffLimit, j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = nil, &perIndex, &maxFailed
	return j
}

func (r k8sRun) mergeJob() *batchv1.Job {
	// A pattern, not a shell glob: the image has no shell, so plload merge expands it itself.
	args := []string{"merge", r.results() + "/shard-*/*", "--out", r.results() + "/merged"}
	if r.o.AllowPartial {
		args = append(args, "--allow-partial")
	}
	c := r.container("merge", args)
	c.Resources = resources(Resources{CPUMillicores: 1000, MemoryMiB: 512, MemoryLimMiB: 2048})
	results := withResults(&c, r.o)
	// A suspended Job's deadline counts from its resumption.
	j := r.job(r.mergeName(), ComponentMerge, podSpec(c, []corev1.Volume{results}), mergeWaitSeconds-deadlineMargin)
	// Kubernetes has no Job-after-Job ordering; it starts when resumed (see the header comment).
	suspend := true
	j.Spec.Suspend = &suspend
	return j
}

// job is a Job of spec that fails by itself after deadline seconds (activeDeadlineSeconds; 0: none).
// The deadline ends what the printed wait could not: pods that never start (an image that cannot be
// pulled sits in ImagePullBackOff, unschedulable pods stay Pending) would otherwise hold the Job, and
// the cluster's resources, forever.
func (r k8sRun) job(name, component string, spec corev1.PodSpec, deadline int64) *batchv1.Job {
	// A pod that failed must not run again: a coordinator or shard started again would miss the
	// run's barrier, and a merge that failed says why in its log.
	backoff := int32(0)
	j := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: r.meta(name, component),
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: r.labels(component)},
				Spec:       spec,
			},
		},
	}
	if deadline > 0 {
		j.Spec.ActiveDeadlineSeconds = &deadline
	}
	return j
}

// joinTimeoutSeconds is JoinTimeout in seconds.
const joinTimeoutSeconds = 5 * 60

// Bounds of the printed waits: a run with no planned end (a whole trace, a stage ended by count)
// gets a day, and the merge half an hour. Each wait outlasts its Job's deadline by deadlineMargin, so
// that a Job past its deadline is seen Failed (the controller's lag, one 10 s poll) before the wait
// gives up.
const (
	noEndWaitSeconds = 24 * 60 * 60
	mergeWaitSeconds = 30 * 60
	deadlineMargin   = 60
)

// K8sDeadlineSeconds is the coordinator's and the shards' Job deadline (activeDeadlineSeconds): the
// planned run (warmups, durations, drains) with a quarter more for the barriers and the drains'
// tails, the join timeout (the pods are scheduled and their image pulled one node at a time), and 10
// minutes for scheduling, a slow pull and the dataset build. 0 (none) for a run with no planned end.
func (p *Plan) K8sDeadlineSeconds() int64 {
	if p.Seconds <= 0 {
		return 0
	}
	return int64(math.Ceil(p.Seconds*1.25)) + joinTimeoutSeconds + 10*60
}

// K8sWaitSeconds bounds the printed wait for the shard Job: its deadline and the margin.
func (p *Plan) K8sWaitSeconds() int64 {
	if p.Seconds <= 0 {
		return noEndWaitSeconds
	}
	return p.K8sDeadlineSeconds() + deadlineMargin
}

// waitJob is a POSIX sh command that polls a Job's true conditions until Complete (exit 0), Failed
// (exit 1) or limit seconds (exit 2). `kubectl wait --for=condition=complete` never returns on a
// Failed Job, and waits for one condition only. A subshell, so that exit leaves the user's shell be.
func waitJob(ns, job string, limit int64) string {
	return fmt.Sprintf(`( end=$(($(date +%%s) + %[3]d)); while :; do s=" $(kubectl%[1]s get job %[2]s -o jsonpath='{.status.conditions[?(@.status=="True")].type}') "; `+
		`case "$s" in *" Complete "*) exit 0;; *" Failed "*) echo "plload: job/%[2]s failed" >&2; exit 1;; esac; `+
		`[ "$(date +%%s)" -lt "$end" ] || { echo "plload: job/%[2]s neither complete nor failed after %[3]d s" >&2; exit 2; }; sleep 10; done )`,
		ns, job, limit)
}

func (r k8sRun) header() string {
	p, o := r.p, r.o
	ns := ""
	if o.Namespace != "" {
		ns = " -n " + o.Namespace
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# plload k8s: %s (run %s of %s) in %d shards of up to %d streams and %d open sessions each (%dm CPU, %d Mi memory requested per shard).\n",
		r.run, o.RunID, p.Name, p.Shards, p.StreamsPerShard, p.SessionsPerShard, p.Resources.CPUMillicores, p.Resources.MemoryMiB)
	if o.Namespace != "" {
		fmt.Fprintf(&b, "# This stream creates the namespace %s first; applying it over an existing one changes only an annotation. Create it\n", o.Namespace)
		fmt.Fprintf(&b, "# before the Secret below (kubectl create namespace %s), or apply this first: the pods wait for the Secret.\n", o.Namespace)
		// A dry run creates nothing, the namespace included, so every namespaced object is refused
		// ("namespaces ... not found") until it exists (TestK8sManifestsPassAPIServer).
		fmt.Fprintf(&b, "# kubectl apply --dry-run=server needs it to exist first: kubectl create namespace %s --dry-run=client -o yaml | kubectl apply -f -\n", o.Namespace)
	}
	fmt.Fprintf(&b, "# Needs the Secret %s with the coordinator token under %q (never in these manifests):\n", o.TokenSecret, TokenKey)
	fmt.Fprintf(&b, "#   kubectl%s create secret generic %s --from-literal=%s=\"$(openssl rand -hex 32)\"", ns, o.TokenSecret, TokenKey)
	if p.APIKeyEnv != "" {
		fmt.Fprintf(&b, " --from-literal=%s=\"$%s\"", APIKeyKey, p.APIKeyEnv)
	}
	b.WriteString("\n")
	for _, f := range p.Files {
		fmt.Fprintf(&b, "# The scenario reads %s: mount it at that path in the shard pods (it is not carried).\n", f)
	}
	if o.ResultsInit != "" {
		// Pod Security admits the Job, with a warning only, and refuses each pod the Job controller
		// makes from it: the Job has no pod and neither completes nor fails until the wait gives up
		// (TestK8sManifestsPassAPIServer).
		b.WriteString("# --results-init: a namespace enforcing Pod Security \"restricted\" refuses its init container (root, CHOWN, DAC_OVERRIDE), so the shard pods are never created there: use \"baseline\", or make the claim writable another way.\n")
	}
	b.WriteString("# A lost shard fails its own index and the others run to the end (Kubernetes 1.29 or later: backoffLimitPerIndex,\n" +
		"# GA in 1.33); the shard Job then ends Failed. An older server drops those fields and applies the default backoffLimit\n" +
		"# of 6: the lost index is started again (the coordinator refuses it once the run has begun) and, at the sixth failed\n" +
		"# pod, the Job fails and stops the other shards.\n")
	limit := p.K8sWaitSeconds()
	if p.Seconds <= 0 {
		b.WriteString("# The scenario has no planned end (a whole trace, or a stage ended by count): the Jobs have no deadline, and the wait\n" +
			"# below gives up after a day.\n")
	} else {
		fmt.Fprintf(&b, "# The coordinator's and the shards' Jobs fail by themselves %d s after they start (activeDeadlineSeconds), as when\n"+
			"# a pod's image cannot be pulled; the merge Job %d s after it is resumed.\n", p.K8sDeadlineSeconds(), mergeWaitSeconds-deadlineMargin)
	}
	if o.ResultsPVC == "" {
		b.WriteString("# No --results-pvc: each shard writes to an emptyDir, lost with its pod; there is no merge Job. Wait for the shards with:\n")
		fmt.Fprintf(&b, "#   %s\n", waitJob(ns, r.run, limit))
	} else {
		fmt.Fprintf(&b, "# Results: %s/shard-<i>/ on the PVC %s, which uid/gid %d must be able to write (fsGroup does not chown\n", r.results(), o.ResultsPVC, nonRootID)
		b.WriteString("# hostPath or NFS volumes; see --results-init). The merge Job starts suspended. Wait for the shards (Complete, or\n")
		fmt.Fprintf(&b, "# Failed when a shard was lost or the run did not start; at most %d s) and resume the merge ", limit)
		resume := fmt.Sprintf("kubectl%s patch job %s --type=merge -p '{\"spec\":{\"suspend\":false}}'", ns, r.mergeName())
		if o.AllowPartial {
			b.WriteString("after either (it merges partial):\n")
			fmt.Fprintf(&b, "#   %s; [ $? -le 1 ] && %s\n", waitJob(ns, r.run, limit), resume)
		} else {
			b.WriteString("only on Complete (generate with --allow-partial to merge a partial run):\n")
			fmt.Fprintf(&b, "#   %s && %s\n", waitJob(ns, r.run, limit), resume)
		}
		fmt.Fprintf(&b, "# then wait for the merge; the merged results are in %s/merged/:\n", r.results())
		fmt.Fprintf(&b, "#   %s\n", waitJob(ns, r.mergeName(), mergeWaitSeconds))
	}
	fmt.Fprintf(&b, "# To run again, generate again (a new run id, new Jobs, a new results directory). To delete this run's objects:\n")
	fmt.Fprintf(&b, "#   kubectl%s delete job,service,configmap -l app.kubernetes.io/instance=%s\n", ns, r.run)
	return b.String()
}
