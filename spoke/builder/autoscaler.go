package builder

import (
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// AutoscalerContainerName is the name of the Ray autoscaler sidecar in the head Pod.
const AutoscalerContainerName = "autoscaler"

// autoscalerCommand runs the KubeRay flavour of the Ray autoscaler against this cluster.
const autoscalerCommand = "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"

func fixedResources(cpu, memory string) corev1.ResourceRequirements {
	list := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
	}
	return corev1.ResourceRequirements{Limits: list, Requests: list.DeepCopy()}
}

// autoscalerContainer builds the autoscaler sidecar: the Ray image (it ships the autoscaler),
// pointed at this cluster through the Pod's own labels, with the Ray container's restrictions
// (restrictionsOf) and the user's autoscalerOptions applied last so they win.
func autoscalerContainer(rc *rayv1.RayCluster, ray *corev1.Container, opts Options) corev1.Container {
	c := corev1.Container{
		Name:            AutoscalerContainerName,
		Image:           ray.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{
			fieldEnv(envRayClusterName, labelPath(labels.Cluster)),
			fieldEnv(envRayClusterNamespace, "metadata.namespace"),
			fieldEnv("RAY_HEAD_POD_NAME", "metadata.name"),
			{Name: "KUBERAY_CRD_VER", Value: "v1"},
		},
		Command:         opts.shellCommand(),
		Args:            []string{autoscalerCommand},
		Resources:       fixedResources("500m", "512Mi"),
		SecurityContext: restrictionsOf(ray.SecurityContext),
	}
	if rayspec.TokenAuth(&rc.Spec) {
		setAuthEnv(&c, rc)
	}
	applyAutoscalerOptions(&c, rc.Spec.AutoscalerOptions)
	return c
}

// restrictionsOf is the security context the autoscaler sidecar gets when autoscalerOptions
// gives none: the restrictions of the Ray container and none of its privileges. KubeRay gives
// the sidecar no security context at all, so a head template that passes Pod Security
// restricted (a Ray container that forbids privilege escalation and drops every capability)
// would still fail it on the sidecar. The autoscaler is a Python process calling the API server
// and the GCS; it needs no capability, no privilege escalation and no other user than Ray's.
// privileged, added capabilities, SELinux, AppArmor and procMount are never carried over. A Ray
// container with no restriction leaves the sidecar as KubeRay builds it (nil).
func restrictionsOf(ray *corev1.SecurityContext) *corev1.SecurityContext {
	if ray == nil {
		return nil
	}
	sc := &corev1.SecurityContext{
		RunAsUser:      ray.RunAsUser,
		RunAsGroup:     ray.RunAsGroup,
		RunAsNonRoot:   ray.RunAsNonRoot,
		SeccompProfile: ray.SeccompProfile,
	}
	if ray.AllowPrivilegeEscalation != nil && !*ray.AllowPrivilegeEscalation {
		sc.AllowPrivilegeEscalation = ray.AllowPrivilegeEscalation
	}
	if ray.Capabilities != nil && slices.Contains(ray.Capabilities.Drop, "ALL") {
		sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	}
	if equality.Semantic.DeepEqual(sc, &corev1.SecurityContext{}) {
		return nil
	}
	return sc.DeepCopy()
}

// applyAutoscalerOptions merges spec.autoscalerOptions into the sidecar: resources, image, pull
// policy and security context replace the defaults; env, envFrom and volume mounts are appended.
func applyAutoscalerOptions(c *corev1.Container, o *rayv1.AutoscalerOptions) {
	if o == nil {
		return
	}
	o = o.DeepCopy()
	if o.Resources != nil {
		c.Resources = *o.Resources
	}
	if o.Image != nil {
		c.Image = *o.Image
	}
	if o.ImagePullPolicy != nil {
		c.ImagePullPolicy = *o.ImagePullPolicy
	}
	c.Env = append(c.Env, o.Env...)
	c.EnvFrom = append(c.EnvFrom, o.EnvFrom...)
	c.VolumeMounts = append(c.VolumeMounts, o.VolumeMounts...)
	if o.SecurityContext != nil {
		c.SecurityContext = o.SecurityContext
	}
}

// addAutoscaler turns the head template into an autoscaling one: the monitor process is disabled
// (the sidecar replaces it), the Pod runs as the autoscaler ServiceAccount, and v2 additionally
// enables the v2 protocol in Ray and stops the kubelet from restarting Ray in place (the
// autoscaler replaces failed Pods itself).
func addAutoscaler(tmpl *corev1.PodTemplateSpec, rc *rayv1.RayCluster, params map[string]string, opts Options) {
	params[paramNoMonitor] = "true"
	tmpl.Spec.ServiceAccountName = AutoscalerServiceAccountName(rc)
	tmpl.Spec.Containers = append(tmpl.Spec.Containers, autoscalerContainer(rc, &tmpl.Spec.Containers[0], opts))
	if rayspec.AutoscalerV2(&rc.Spec) {
		c := &tmpl.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: envAutoscalerV2, Value: "true"})
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
}
