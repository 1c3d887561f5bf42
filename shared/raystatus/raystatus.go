// Package raystatus compares KubeRay statuses the way both RayFleet sides write them: once per
// real change. The spoke writes a member RayService's status, the hub the fleet RayService's.
// It imports no other RayFleet package; like all of shared/, never hub/, spoke/ or cmd/.
package raystatus

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// RayServiceChanged reports whether next differs from prev in anything but the lastUpdateTime
// fields (the RayService's and those of its embedded RayCluster statuses), which move on every
// write. Values are compared, not pointers (KubeRay compares some by pointer and so writes on
// every poll), nil and empty lists and maps are equal, and observedGeneration counts.
func RayServiceChanged(prev, next *rayv1.RayServiceStatuses) bool {
	if prev == nil || next == nil {
		return prev != next
	}
	return !equality.Semantic.DeepEqual(withoutUpdateTimes(prev), withoutUpdateTimes(next))
}

// withoutUpdateTimes returns a copy of st with its lastUpdateTime fields cleared.
func withoutUpdateTimes(st *rayv1.RayServiceStatuses) *rayv1.RayServiceStatuses {
	c := st.DeepCopy()
	c.LastUpdateTime = nil
	c.ActiveServiceStatus.RayClusterStatus.LastUpdateTime = nil
	c.PendingServiceStatus.RayClusterStatus.LastUpdateTime = nil
	return c
}
