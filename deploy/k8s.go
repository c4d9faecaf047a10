package deploy

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

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

// Names of the objects for a plan.
func (p *Plan) CoordinatorName() string { return p.Name + "-coordinator" }
func (p *Plan) MergeName() string       { return p.Name + "-merge" }
func (p *Plan) ScenarioName() string    { return p.Name + "-scenario" }

// CoordinatorAddr is what the shards dial: the headless Service's name resolves, in the namespace,
// to the coordinator pod's address.
func (p *Plan) CoordinatorAddr() string {
	return p.CoordinatorName() + ":" + strconv.Itoa(CoordinatorPort)
}

// Manifests builds the objects, in the order they are applied: the scenario, the coordinator's
// Service and Job, the shards' Indexed Job, and (with a results PVC) the merge Job.
//
// The coordinator is its own one-pod Job rather than `run --coordinate` on index 0: every pod of an
// Indexed Job shares one template, and the image has no shell to add a flag for index 0 alone.
func Manifests(p *Plan, o K8sOptions) []runtime.Object {
	objs := []runtime.Object{
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: p.meta(o, p.ScenarioName(), ""),
			Data:       map[string]string{"scenario.yaml": string(p.Scenario)},
		},
		p.coordinatorService(o),
		p.coordinatorJob(o),
		p.shardJob(o),
	}
	if o.ResultsPVC != "" {
		objs = append(objs, p.mergeJob(o))
	}
	return objs
}

// WriteK8s writes the objects as one YAML stream, after a comment saying how to run it.
func WriteK8s(w io.Writer, p *Plan, o K8sOptions) error {
	var buf bytes.Buffer
	buf.WriteString(p.k8sHeader(o))
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

func (p *Plan) k8sHeader(o K8sOptions) string {
	ns := ""
	if o.Namespace != "" {
		ns = " -n " + o.Namespace
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# plload k8s: %s in %d shards of up to %d streams and %d open sessions each (%dm CPU, %d Mi memory requested per shard).\n",
		p.Name, p.Shards, p.StreamsPerShard, p.SessionsPerShard, p.Resources.CPUMillicores, p.Resources.MemoryMiB)
	fmt.Fprintf(&b, "# Needs the Secret %s with the coordinator token under %q (never in these manifests):\n", o.TokenSecret, TokenKey)
	fmt.Fprintf(&b, "#   kubectl%s create secret generic %s --from-literal=%s=\"$(openssl rand -hex 32)\"", ns, o.TokenSecret, TokenKey)
	if p.APIKeyEnv != "" {
		fmt.Fprintf(&b, " --from-literal=%s=\"$%s\"", APIKeyKey, p.APIKeyEnv)
	}
	b.WriteString("\n")
	for _, f := range p.Files {
		fmt.Fprintf(&b, "# The scenario reads %s: mount it at that path in the shard pods (it is not carried).\n", f)
	}
	if o.ResultsPVC == "" {
		b.WriteString("# No --results-pvc: each shard writes to an emptyDir, lost with its pod; there is no merge Job.\n")
	} else {
		fmt.Fprintf(&b, "# Results: %s/%s/shard-<i>/ on the PVC %s. The merge Job starts suspended; once the shards are done:\n", resultsDir, p.Name, o.ResultsPVC)
		fmt.Fprintf(&b, "#   kubectl%s wait --for=condition=complete --timeout=-1s job/%s && kubectl%s patch job %s --type=merge -p '{\"spec\":{\"suspend\":false}}'\n",
			ns, p.Name, ns, p.MergeName())
		fmt.Fprintf(&b, "# and the merged results are in %s/%s/merged/.\n", resultsDir, p.Name)
	}
	return b.String()
}

func (p *Plan) labels(component string) map[string]string {
	l := map[string]string{"app.kubernetes.io/name": "plload", "app.kubernetes.io/instance": p.Name}
	if component != "" {
		l["app.kubernetes.io/component"] = component
	}
	return l
}

func (p *Plan) meta(o K8sOptions, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: p.labels(component)}
}

func (p *Plan) coordinatorService(o K8sOptions) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: p.meta(o, p.CoordinatorName(), ComponentCoordinator),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, // headless: the name is the pod's own address
			Selector:  p.labels(ComponentCoordinator),
			// The coordinator has no readiness probe to pass; shards dial it as soon as it exists.
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "coordinator", Port: CoordinatorPort,
				TargetPort: intstr.FromInt32(CoordinatorPort), Protocol: corev1.ProtocolTCP}},
		},
	}
}

func (p *Plan) coordinatorJob(o K8sOptions) *batchv1.Job {
	c := p.container(o, "coordinator", []string{"coordinate",
		"--shards", strconv.Itoa(p.Shards),
		"--listen", "0.0.0.0:" + strconv.Itoa(CoordinatorPort),
		"--token-env", TokenEnv,
		"--join-timeout", JoinTimeout})
	c.Env = append(c.Env, secretEnv(TokenEnv, o.TokenSecret, TokenKey))
	c.Ports = []corev1.ContainerPort{{Name: "coordinator", ContainerPort: CoordinatorPort, Protocol: corev1.ProtocolTCP}}
	// A barrier and a clock, no load: a small fixed request.
	c.Resources = resources(Resources{CPUMillicores: 100, MemoryMiB: 64, MemoryLimMiB: 128})
	return p.job(o, p.CoordinatorName(), ComponentCoordinator, p.podSpec(c, nil))
}

func (p *Plan) shardJob(o K8sOptions) *batchv1.Job {
	out := resultsDir + "/" + p.Name + "/shard-$(JOB_COMPLETION_INDEX)"
	c := p.container(o, "shard", []string{"run", scenarioDir + "/scenario.yaml",
		"--shard", "auto", "--shards", strconv.Itoa(p.Shards),
		"--coordinator", p.CoordinatorAddr(),
		"--token-env", TokenEnv,
		"--join-timeout", JoinTimeout,
		"--out", out})
	// The Job controller sets JOB_COMPLETION_INDEX too; naming it here makes $(JOB_COMPLETION_INDEX)
	// in the args expand on every cluster (the controller leaves a variable the pod already defines).
	c.Env = append([]corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}},
		c.Env...)
	c.Env = append(c.Env, secretEnv(TokenEnv, o.TokenSecret, TokenKey))
	if p.APIKeyEnv != "" {
		c.Env = append(c.Env, secretEnv(p.APIKeyEnv, o.TokenSecret, APIKeyKey))
	}
	c.Resources = resources(p.Resources)
	results := withResults(&c, o)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "scenario", MountPath: scenarioDir, ReadOnly: true})
	spec := p.podSpec(c, []corev1.Volume{results, {Name: "scenario", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: p.ScenarioName()}}}}})
	// Shards on different nodes where the cluster allows: two shards on one node share its NIC and CPUs.
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
		WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: p.labels(ComponentShard)}}}
	j := p.job(o, p.Name, ComponentShard, spec)
	n := int32(p.Shards)
	mode := batchv1.IndexedCompletion
	j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism = &mode, &n, &n
	return j
}

func (p *Plan) mergeJob(o K8sOptions) *batchv1.Job {
	base := resultsDir + "/" + p.Name
	// A pattern, not a shell glob: the image has no shell, so plload merge expands it itself.
	c := p.container(o, "merge", []string{"merge", base + "/shard-*/*", "--out", base + "/merged"})
	c.Resources = resources(Resources{CPUMillicores: 1000, MemoryMiB: 512, MemoryLimMiB: 2048})
	results := withResults(&c, o)
	j := p.job(o, p.MergeName(), ComponentMerge, p.podSpec(c, []corev1.Volume{results}))
	// Kubernetes has no Job-after-Job ordering; it starts when resumed (see the header comment).
	suspend := true
	j.Spec.Suspend = &suspend
	return j
}

func (p *Plan) job(o K8sOptions, name, component string, spec corev1.PodSpec) *batchv1.Job {
	// A shard that failed must not run again: its sessions would start after the others' barrier.
	backoff := int32(0)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: p.meta(o, name, component),
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.labels(component)},
				Spec:       spec,
			},
		},
	}
}
