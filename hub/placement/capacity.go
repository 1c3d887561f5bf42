package placement

import (
	corev1 "k8s.io/api/core/v1"
)

// BoundCapacity returns reported with every resource that limits names at most its limit: the
// capacity placement believes of a member that reports its own (MemberCluster
// spec.capacityLimits), so that a member claiming more than it has cannot draw RayServices
// away from the others. A resource limits does not name is kept as reported; a limit on a
// resource not reported adds nothing. reported is not modified.
func BoundCapacity(reported, limits corev1.ResourceList) corev1.ResourceList {
	out := reported.DeepCopy()
	for name, limit := range limits {
		if q, ok := out[name]; ok && q.Cmp(limit) > 0 {
			out[name] = limit.DeepCopy()
		}
	}
	return out
}
