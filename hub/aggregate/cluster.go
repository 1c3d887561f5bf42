// Package aggregate turns the member copies of a RayService into fleet status: each member's
// RayService into its RayServiceBinding entry, and the binding's entries into the status of the
// hub RayService, which keeps KubeRay's shape so that the tools people already use on a
// RayService (kubectl columns, dashboards, scripts reading conditions) work on the hub too.
// It is pure: no API calls and no clock, so every rule is tested with plain tables and the
// reconciler writes the hub status only when shared/raystatus says it changed.
// Of the repository it imports only shared/: never spoke/ or the hub's reconcilers, which
// import it.
package aggregate

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// ClusterStatusOf turns a member's RayService, as read from the member, into the binding's
// entry for that cluster. member is nil when the member has no copy (not propagated yet, or
// deleted there); the entry then carries only the name and no LastSeenTime, which HubStatus
// reads as "not yet propagated".
//
// appliedHash is the spec hash the hub last applied to this cluster (overrides included), ""
// when the hub does not know it (a restarted hub before its first apply). The entry's SpecHash
// is set only when the member's status describes that spec: the copy carries appliedHash in its
// spec-hash annotation and the member has observed the copy's generation. Otherwise the copied
// conditions speak of an earlier spec (the member's cache or its spoke is behind the apply) and
// an empty SpecHash tells HubStatus and the rollout not to trust them for the current spec.
func ClusterStatusOf(cluster string, member *rayv1.RayService, appliedHash string, now metav1.Time) fleetv1alpha1.ClusterStatus {
	cs := fleetv1alpha1.ClusterStatus{Name: cluster}
	if member == nil {
		return cs
	}
	seen := now.Rfc3339Copy()
	st := member.Status.DeepCopy()
	cs.LastSeenTime = &seen
	cs.ObservedGeneration = st.ObservedGeneration
	cs.Conditions = st.Conditions
	cs.ServiceStatus = st.ServiceStatus
	cs.ActiveRayCluster = st.ActiveServiceStatus.RayClusterName
	cs.PendingRayCluster = st.PendingServiceStatus.RayClusterName
	cs.NumServeEndpoints = max(st.NumServeEndpoints, 0)
	cs.Applications = st.ActiveServiceStatus.Applications
	if hash := member.Annotations[labels.SpecHash]; observedSpec(member, hash, appliedHash) {
		cs.SpecHash = hash
	}
	return cs
}

// observedSpec reports whether the member's status was computed for the spec the hub applied.
// A copy without the annotation was not written by the hub and describes no hub spec.
func observedSpec(member *rayv1.RayService, hash, appliedHash string) bool {
	if hash == "" || (appliedHash != "" && hash != appliedHash) {
		return false
	}
	return member.Status.ObservedGeneration >= member.Generation
}
