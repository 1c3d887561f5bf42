package placement

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Results of a placement decision, the values of the result label of
// rayfleet_placement_decisions_total.
const (
	ResultPlaced         = "placed"
	ResultPartial        = "partial"
	ResultNone           = "none"
	ResultPolicyNotFound = "policy_not_found"
	ResultPolicyInvalid  = "policy_invalid"
	// ResultReservationMisfit counts decisions held because a member they newly chose was
	// filled by placements recorded after their group was read; they are planned again.
	ResultReservationMisfit = "reservation_misfit"
)

// Outcome is d's result label and the binding's Placed condition for it (no times, no
// generation: the hub stamps those). notGranted is "" unless the namespace is granted no
// member at all; a plan that chose no member then says that instead of why none fits.
func Outcome(d Decision, notGranted string) (string, metav1.Condition) {
	result, reason, status := ResultPlaced, fleetv1alpha1.ReasonClustersChosen, metav1.ConditionTrue
	switch {
	case len(d.Clusters) == 0:
		result, reason, status = ResultNone, fleetv1alpha1.ReasonNoClusterFits, metav1.ConditionFalse
	case !d.Placed:
		result, reason, status = ResultPartial, fleetv1alpha1.ReasonInsufficientClusters, metav1.ConditionFalse
	}
	cond := metav1.Condition{Status: status, Reason: reason, Message: d.Message}
	if len(d.Clusters) == 0 && notGranted != "" {
		cond.Reason, cond.Message = fleetv1alpha1.ReasonNotGranted, notGranted
	}
	return result, cond
}
