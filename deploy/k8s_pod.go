package deploy

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/plload/plload/workload"
)

// container is one plload container: the image's ENTRYPOINT is plload, so args are a command line
// without the binary. A writable /tmp is mounted, the only writable path on its read-only root
// besides /results for those that write results (withResults).
func (r k8sRun) container(name string, args []string) corev1.Container {
	no, yes := false, true
	return corev1.Container{
		Name:            name,
		Image:           r.o.Image,
		ImagePullPolicy: corev1.PullPolicy(r.o.PullPolicy), // "": Kubernetes' default
		Args:            args,
		Env:             []corev1.EnvVar{{Name: "TMPDIR", Value: "/tmp"}},
		VolumeMounts:    []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no,
			ReadOnlyRootFilesystem:   &yes,
			RunAsNonRoot:             &yes,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// withResults mounts /results in c and returns its volume: the PVC when there is one, else an
// emptyDir (lost with the pod).
func withResults(c *corev1.Container, o K8sOptions) corev1.Volume {
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "results", MountPath: resultsDir})
	src := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if o.ResultsPVC != "" {
		src = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.ResultsPVC}}
		// A results directory plload cannot write is then refused naming the claim, not only the path.
		c.Env = append(c.Env, corev1.EnvVar{Name: workload.ResultsVolumeEnv, Value: "the PersistentVolumeClaim " + o.ResultsPVC + " (mounted at " + resultsDir + ")"})
	}
	return corev1.Volume{Name: "results", VolumeSource: src}
}

// podSpec is a pod of one container that runs once (the Job decides about retries), as the image's
// non-root user.
func podSpec(c corev1.Container, extra []corev1.Volume) corev1.PodSpec {
	id := int64(nonRootID)
	yes := true
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{c},
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &id, RunAsGroup: &id,
			// Makes a volume that supports ownership management (emptyDir, most block-backed claims)
			// the pod's; hostPath, NFS and many CSI volumes are left as they are, hence resultsInit.
			FSGroup:        &id,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Volumes: append([]corev1.Volume{
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}, extra...),
	}
}

// resultsInit is the init container --results-init adds to the shard pods: as root, it makes the
// run's directory on the claim and gives it to the pods' uid and gid, for claims that fsGroup does
// not chown. Every shard pod runs it (mkdir -p and chown are idempotent); it needs a cluster that
// admits root containers (the "baseline" Pod Security level, not "restricted").
func (r k8sRun) resultsInit() corev1.Container {
	dir := r.results() // letters, digits, '-' and '/': nothing the shell would expand
	script := fmt.Sprintf("mkdir -p %[1]s && chown %[2]d:%[2]d %[1]s || { echo \"plload: cannot make %[1]s on the claim %[3]s and give it to uid/gid %[2]d\" >&2; exit 1; }",
		dir, nonRootID, r.o.ResultsPVC)
	root, no, yes := int64(0), false, true
	c := corev1.Container{
		Name:            "results-init",
		Image:           r.o.ResultsInit,
		ImagePullPolicy: corev1.PullPolicy(r.o.PullPolicy),
		Command:         []string{"sh", "-c", script},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: &root, RunAsGroup: &root, RunAsNonRoot: &no,
			AllowPrivilegeEscalation: &no,
			ReadOnlyRootFilesystem:   &yes,
			// CHOWN to give the directory away; DAC_OVERRIDE to create it in a /results root does not own.
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"CHOWN", "DAC_OVERRIDE"}},
		},
		Resources: resources(Resources{CPUMillicores: 10, MemoryMiB: 16, MemoryLimMiB: 64}),
	}
	withResults(&c, r.o)
	return c
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func resources(r Resources) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(r.CPUMillicores, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(r.MemoryMiB<<20, resource.BinarySI),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(r.MemoryLimMiB<<20, resource.BinarySI)},
	}
}
