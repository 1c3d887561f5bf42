package aggregate

import (
	"fmt"
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// Reasons of the hub RayService's UpgradeInProgress condition. KubeRay's own reasons speak of
// one RayService's active and pending RayClusters, which the hub does not have.
const (
	// ReasonClustersUpgrading (UpgradeInProgress=True): some placed members upgrade; the
	// message names them.
	ReasonClustersUpgrading rayv1.RayServiceConditionReason = "ClustersUpgrading"
	// ReasonNoClusterUpgrading (UpgradeInProgress=False): no placed member upgrades.
	ReasonNoClusterUpgrading rayv1.RayServiceConditionReason = "NoClusterUpgrading"
)

// Why a placed cluster counts as not ready although its own Ready condition may say otherwise.
const (
	notPropagated    = "not yet propagated"
	notObservedFmt   = "member has not observed the current spec (its status is for generation %d)"
	noReadyCondition = "member reports no Ready condition yet"
	notPlacedMessage = "0/0 clusters ready; the RayService is not placed on any cluster"
)

// HubStatus computes the hub RayService's status from the binding's per-cluster entries and the
// clusters the RayService is placed on. Ready is True only when every placed cluster has an
// entry for the current spec whose Ready condition is True; the message names every other
// cluster and why, as many as a condition message holds, and counts the rest.
// UpgradeInProgress is True while any placed member upgrades. numServeEndpoints is summed and the Serve applications merged worst-first over the placed
// clusters' entries (entries of clusters no longer placed are left out: the hub status speaks
// of the placement, the binding keeps the rest). serviceStatus is Running iff Ready is True.
//
// The hub's other conditions are kept, and Ready and UpgradeInProgress keep their
// lastTransitionTime while their status does not change (meta.SetStatusCondition). The result
// has KubeRay's shape: the merged applications in activeServiceStatus, pendingServiceStatus
// empty, as nothing is pending on the hub itself. hub is not modified.
func HubStatus(hub *rayv1.RayService, placed []string, clusters []fleetv1alpha1.ClusterStatus, now metav1.Time) rayv1.RayServiceStatuses {
	now = now.Rfc3339Copy()
	st := rayv1.RayServiceStatuses{
		Conditions:         slices.Clone(hub.Status.Conditions),
		LastUpdateTime:     &now,
		ObservedGeneration: hub.Generation,
	}

	names := slices.Compact(slices.Sorted(slices.Values(placed)))
	entries := make([]*fleetv1alpha1.ClusterStatus, 0, len(names))
	byName := make(map[string]*fleetv1alpha1.ClusterStatus, len(clusters))
	for i := range clusters {
		byName[clusters[i].Name] = &clusters[i]
	}
	for _, n := range names {
		if e := byName[n]; e != nil {
			entries = append(entries, e)
			st.NumServeEndpoints += max(e.NumServeEndpoints, 0)
		}
	}

	setReady(&st, names, byName, now)
	setUpgrading(&st, entries, now)
	st.ActiveServiceStatus.Applications = mergeApplications(entries)
	if meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceReady)) {
		st.ServiceStatus = rayv1.Running
	}
	return st
}

// setReady sets Ready from the placed clusters, all of which must be ready.
func setReady(st *rayv1.RayServiceStatuses, names []string, byName map[string]*fleetv1alpha1.ClusterStatus, now metav1.Time) {
	if len(names) == 0 {
		// Nothing placed is not "all ready": the binding's Placed condition says why.
		setCondition(st, rayv1.RayServiceReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClustersNotReady, notPlacedMessage, now)
		return
	}
	perCluster := make([]metav1.Condition, 0, len(names))
	for _, n := range names {
		c := metav1.Condition{Type: n, Status: metav1.ConditionTrue}
		if why := notReadyReason(byName[n]); why != "" {
			c.Status, c.Message = metav1.ConditionFalse, why
		}
		perCluster = append(perCluster, c)
	}
	ready := conditions.Summarize(conditions.Summary{
		Type:        string(rayv1.RayServiceReady),
		TrueReason:  fleetv1alpha1.ReasonAllClustersReady,
		FalseReason: fleetv1alpha1.ReasonClustersNotReady,
		Counted:     "clusters ready",
	}, perCluster)
	setCondition(st, rayv1.RayServiceReady, ready.Status, ready.Reason, ready.Message, now)
}

// notReadyReason says why a placed cluster is not ready, "" when it is.
func notReadyReason(e *fleetv1alpha1.ClusterStatus) string {
	switch {
	case e == nil || e.LastSeenTime == nil:
		return notPropagated
	case e.SpecHash == "":
		return fmt.Sprintf(notObservedFmt, e.ObservedGeneration)
	}
	c := meta.FindStatusCondition(e.Conditions, string(rayv1.RayServiceReady))
	switch {
	case c == nil:
		return noReadyCondition
	case c.Status == metav1.ConditionTrue:
		return ""
	case c.Message == "":
		return c.Reason
	default:
		return fmt.Sprintf("%s (%s)", c.Reason, c.Message)
	}
}

// setUpgrading sets UpgradeInProgress from the placed members' own upgrades. A member upgrades
// while its UpgradeInProgress condition is True or it has a pending RayCluster: the pending
// cluster appears in the status before the condition is recomputed.
func setUpgrading(st *rayv1.RayServiceStatuses, entries []*fleetv1alpha1.ClusterStatus, now metav1.Time) {
	var upgrading []string
	for _, e := range entries {
		if e.PendingRayCluster != "" || meta.IsStatusConditionTrue(e.Conditions, string(rayv1.UpgradeInProgress)) {
			upgrading = append(upgrading, e.Name)
		}
	}
	if len(upgrading) == 0 {
		setCondition(st, rayv1.UpgradeInProgress, metav1.ConditionFalse, string(ReasonNoClusterUpgrading),
			"no cluster is upgrading", now)
		return
	}
	msg := fmt.Sprintf("%d/%d clusters upgrading: %s", len(upgrading), len(entries), strings.Join(upgrading, ", "))
	setCondition(st, rayv1.UpgradeInProgress, metav1.ConditionTrue, string(ReasonClustersUpgrading), msg, now)
}

// setCondition sets one of the hub RayService's conditions for its current generation.
func setCondition(st *rayv1.RayServiceStatuses, t rayv1.RayServiceConditionType, status metav1.ConditionStatus,
	reason, msg string, now metav1.Time,
) {
	conditions.Set(&st.Conditions, metav1.Condition{
		Type:               string(t),
		Status:             status,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: st.ObservedGeneration,
		LastTransitionTime: now,
	})
}
