package deploy

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// container is one plload container: the image's ENTRYPOINT is plload, so args are a command line
// without the binary. A writable /tmp is mounted, the only writable path on its read-only root
// besides /results for those that write results (withResults).
func (p *Plan) container(o K8sOptions, name string, args []string) corev1.Container {
	no, yes := false, true
	return corev1.Container{
		Name:         name,
		Image:        o.Image,
		Args:         args,
		Env:          []corev1.EnvVar{{Name: "TMPDIR", Value: "/tmp"}},
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
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
	}
	return corev1.Volume{Name: "results", VolumeSource: src}
}

// podSpec is a pod of one container that runs once (the Job decides about retries), as the image's
// non-root user.
func (p *Plan) podSpec(c corev1.Container, extra []corev1.Volume) corev1.PodSpec {
	id := int64(nonRootID)
	yes := true
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{c},
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &id, RunAsGroup: &id,
			FSGroup:        &id, // so the non-root user can write the PVC
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Volumes: append([]corev1.Volume{
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}, extra...),
	}
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
