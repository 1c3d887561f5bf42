package demand

import (
	"regexp"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TPUResource is the extended resource name KubeRay counts as TPUs (status.desiredTPU).
const TPUResource corev1.ResourceName = "google.com/tpu"

// migResource matches NVIDIA Multi-Instance GPU slices such as "nvidia.com/mig-1g.5gb". Like
// KubeRay's, it is anchored only at the end.
var migResource = regexp.MustCompile(`nvidia\.com/mig-\d+g\.\d+gb$`)

// PodResources is what one Pod built from spec asks for: per resource and per container, the
// request, or the limit when there is no request (Kubernetes then defaults the request to the
// limit), summed over the regular containers. Init containers, sidecars injected later (the
// autoscaler) and pod overhead are not counted, as in KubeRay.
func PodResources(spec corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			addTo(total, name, q)
		}
		for name, q := range c.Resources.Limits {
			if _, requested := c.Resources.Requests[name]; !requested {
				addTo(total, name, q)
			}
		}
	}
	return total
}

// Desired is what the whole cluster asks for: the head Pod plus every worker Pod of the groups
// that are not suspended. This is KubeRay's status.desiredCPU/Memory/GPU/TPU arithmetic, which
// counts each group's replicas as written, NOT clamped to [minReplicas, maxReplicas] as
// DesiredWorkers is; a missing replicas counts as 0 (the CRD default) and a negative one as 0.
func Desired(spec *rayv1.RayClusterSpec) corev1.ResourceList {
	total := PodResources(spec.HeadGroupSpec.Template.Spec)
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		if suspended(g) {
			continue
		}
		addScaled(total, PodResources(g.Template.Spec), int64(max(ptr.Deref(g.Replicas, 0), 0))*hosts(g))
	}
	return total
}

// Min is what the cluster asks for at its smallest: the head Pod plus minReplicas × numOfHosts
// worker Pods of every group that is not suspended. (KubeRay's own minimum, used only for
// Volcano gangs, also counts suspended groups; a suspended group has no Pods, so we do not.)
func Min(spec *rayv1.RayClusterSpec) corev1.ResourceList {
	total := PodResources(spec.HeadGroupSpec.Template.Spec)
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		if suspended(g) {
			continue
		}
		addScaled(total, PodResources(g.Template.Spec), int64(max(ptr.Deref(g.MinReplicas, 0), 0))*hosts(g))
	}
	return total
}

// IsGPUKey reports whether KubeRay counts a resource as GPUs: any name ending in "gpu"
// (nvidia.com/gpu, amd.com/gpu, ...) and NVIDIA MIG slices (nvidia.com/mig-1g.5gb, ...).
func IsGPUKey(name corev1.ResourceName) bool {
	return strings.HasSuffix(string(name), "gpu") || migResource.MatchString(string(name))
}

// GPU sums every GPU resource of list (status.desiredGPU). Different GPU kinds are added
// together, as KubeRay does; a MIG slice counts as one.
func GPU(list corev1.ResourceList) resource.Quantity {
	var total resource.Quantity
	for name, q := range list {
		if IsGPUKey(name) && !q.IsZero() {
			total.Add(q)
		}
	}
	return total
}

// TPU is the google.com/tpu quantity of list (status.desiredTPU); zero when absent.
func TPU(list corev1.ResourceList) resource.Quantity {
	return list[TPUResource]
}

func addTo(total corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if sum, ok := total[name]; ok {
		sum.Add(q)
		total[name] = sum
		return
	}
	total[name] = q.DeepCopy()
}

// addScaled adds n copies of pod to total.
func addScaled(total, pod corev1.ResourceList, n int64) {
	if n <= 0 {
		return
	}
	for name, q := range pod {
		scaled := q.DeepCopy()
		scaled.Mul(n)
		addTo(total, name, scaled)
	}
}
