package status

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// Messages leading the boundary conditions.
const (
	msgPodsForbidden     = "Pods of this RayService's RayClusters violate the member's Pod Security level and are not created"
	msgOwnershipConflict = "Objects this RayService would write exist and are controlled by something else; they are left alone"
)

// podsForbidden words the PodsForbidden conditions of the active and pending clusters as one
// line per cluster, "" when neither has one.
func podsForbidden(obs Observed) []string {
	var parts []string
	for _, rc := range []*rayv1.RayCluster{obs.Active, obs.Pending} {
		if rc == nil {
			continue
		}
		if c := meta.FindStatusCondition(rc.Status.Conditions, fleetv1alpha1.ConditionPodsForbidden); c != nil && c.Status == metav1.ConditionTrue {
			parts = append(parts, "RayCluster "+rc.Name+": "+c.Message)
		}
	}
	return parts
}

// setBoundaryConditions raises PodsForbidden while the active or the pending cluster says its
// Pods are forbidden, and OwnershipConflict while the reconcile left an object alone because
// something else controls it; each is dropped once there is nothing to say. Conflicts nil
// (the steps that write those objects did not run) leaves OwnershipConflict as it was.
func setBoundaryConditions(st *rayv1.RayServiceStatuses, obs Observed, now metav1.Time) {
	setOrDrop(st, fleetv1alpha1.ConditionPodsForbidden, fleetv1alpha1.ReasonPodSecurityViolation, msgPodsForbidden, podsForbidden(obs), now)
	if obs.Conflicts != nil {
		setOrDrop(st, fleetv1alpha1.ConditionOwnershipConflict, fleetv1alpha1.ReasonNotControlled, msgOwnershipConflict, obs.Conflicts, now)
	}
}

// setOrDrop sets condition t True with head and parts as its message, or removes it when parts
// is empty.
func setOrDrop(st *rayv1.RayServiceStatuses, t, reason, head string, parts []string, now metav1.Time) {
	if len(parts) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, t)
		return
	}
	conditions.Set(&st.Conditions, metav1.Condition{
		Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: conditions.Join(head, parts...),
		ObservedGeneration: st.ObservedGeneration, LastTransitionTime: now,
	})
}
