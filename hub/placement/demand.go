package placement

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/demand"
)

// DemandOf is what one copy of rs needs on a member: the head Pod plus every worker group's
// Pod times its desired Pod count (replicas clamped to [minReplicas, maxReplicas], times
// numOfHosts, none for a suspended group), GPUs by resource name. The count is the one the
// spoke creates Pods for (status.desiredWorkerReplicas), not the unclamped replicas of
// KubeRay's status.desiredCPU: placing on the latter could put a copy where its minimum does
// not fit. A suspended RayCluster still needs its room: the copy runs again when resumed.
func DemandOf(rs *rayv1.RayService) corev1.ResourceList {
	total := corev1.ResourceList{}
	if rs == nil {
		return total
	}
	spec := &rs.Spec.RayClusterSpec
	add(total, demand.PodResources(spec.HeadGroupSpec.Template.Spec), 1)
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		add(total, demand.PodResources(g.Template.Spec), int64(demand.WorkerGroupReplicas(g)))
	}
	return total
}

// add adds n copies of pod to total.
func add(total, pod corev1.ResourceList, n int64) {
	if n <= 0 {
		return
	}
	for name, q := range pod {
		scaled := q.DeepCopy()
		scaled.Mul(n)
		sum := total[name]
		sum.Add(scaled)
		total[name] = sum
	}
}
