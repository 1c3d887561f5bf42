// Package status computes a RayService's status from what one reconcile observed and did, the
// way KubeRay v1.6.2 does: both clusters' statuses and applications, traffic percentages,
// promotion of the pending cluster, the next pending cluster's name, numServeEndpoints, the
// Ready and UpgradeInProgress conditions and serviceStatus. It makes no API calls and reads no
// clock; the reconciler observes, calls Compute, acts on the Outcome (events, deletions) and
// writes the status once when shared/raystatus says it changed.
// Of the repository it imports only spoke/rayservice/upgrade and shared/ (api/fleet,
// conditions): no client, never hub/ or the reconciler.
package status

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/spoke/rayservice/upgrade"
)

// ClusterServe is what a reconcile learned of one cluster's Serve applications.
type ClusterServe struct {
	// Apps are the statuses read from the cluster's dashboard; nil when it was not read.
	Apps map[string]rayv1.AppStatus
	// Keep keeps the statuses last recorded instead of Apps: the dashboard could not be read,
	// or the cluster was deliberately left alone (the active cluster during an upgrade), and
	// the last statuses known are more useful than none.
	Keep bool
	// Problem is what went wrong talking to the dashboard, shown in a condition's message.
	Problem string
}

// Observed is what the reconciler saw and did before the status is computed.
type Observed struct {
	// Active and Pending are the clusters named in the status, nil when missing.
	Active, Pending *rayv1.RayCluster
	// ActiveServe and PendingServe describe their Serve applications.
	ActiveServe, PendingServe ClusterServe
	// ServicesReconciled says the head and serve Services were reconciled this time (some
	// cluster was ready); HeadSelects and ServeSelects are the clusters they now select.
	ServicesReconciled        bool
	HeadSelects, ServeSelects string
	// Weights are the HTTPRoute weights in place after this reconcile (incremental upgrade
	// only); nil when there is no route. PendingWeight is meaningful only with a pending cluster.
	Weights *upgrade.Weights
	// ActiveEndpoints and PendingEndpoints are the ready serve endpoints counted for each
	// cluster; the pending ones count only during an incremental upgrade, when both serve.
	ActiveEndpoints, PendingEndpoints int32
	// ZeroDowntimeDefault is ENABLE_ZERO_DOWNTIME.
	ZeroDowntimeDefault bool
	// NewClusterName names the pending cluster to prepare, should one be needed.
	NewClusterName string
	// InitializingTimeout is ray.io/initializing-timeout; 0 when unset.
	InitializingTimeout metav1.Duration
	// Conflicts name the objects the reconcile left alone because something else controls
	// them; nil when no step that writes such objects ran.
	Conflicts []string
}

// Outcome tells the reconciler what Compute decided, for its events and logs.
type Outcome struct {
	// Promoted names the cluster promoted from pending to active.
	Promoted string
	// Prepared names a new pending cluster; it is created once this status is written.
	Prepared string
	// TimedOut is the message of a RayService that just exceeded its initializing timeout.
	TimedOut string
	// SelectorMismatch explains why no promotion was considered: the head and serve Services
	// select different clusters, or one that is neither active nor pending.
	SelectorMismatch string
	// RollbackFinished says a rollback of an incremental upgrade completed.
	RollbackFinished bool
}

// Compute returns the RayService's new status; rs (whose status carries this reconcile's
// earlier changes: target capacities, rollback condition) is not modified. now stamps condition
// transitions and traffic migrations, cut to whole seconds as the API server keeps them.
func Compute(rs *rayv1.RayService, obs Observed, incremental bool, now metav1.Time) (rayv1.RayServiceStatuses, Outcome) {
	now = now.Rfc3339Copy()
	st := rs.Status.DeepCopy()
	var out Outcome
	st.ObservedGeneration = rs.Generation

	setClusterStatus(&st.ActiveServiceStatus, obs.Active, obs.ActiveServe)
	setClusterStatus(&st.PendingServiceStatus, obs.Pending, obs.PendingServe)
	if incremental && obs.Weights != nil {
		setTraffic(&st.ActiveServiceStatus, obs.Weights.Active, now)
		if obs.Pending != nil {
			setTraffic(&st.PendingServiceStatus, obs.Weights.Pending, now)
		}
	}

	pendingServing := false
	if obs.ServicesReconciled {
		pendingServing, out.Promoted, out.SelectorMismatch = promote(st, obs, incremental)
	}

	pending := obs.Pending
	if finishRollback(st) {
		// UpgradeInProgress turns False/NoPendingCluster with the other conditions below.
		out.RollbackFinished = true
		pending = nil
	}

	if upgrade.ShouldPrepareNewCluster(&rs.Spec, st, obs.Active, pending, pendingServing, obs.ZeroDowntimeDefault) {
		prepare(st, obs.NewClusterName, incremental)
		out.Prepared = obs.NewClusterName
	}

	st.NumServeEndpoints = obs.ActiveEndpoints
	if incremental && pending != nil {
		st.NumServeEndpoints += obs.PendingEndpoints
	}

	out.TimedOut = setConditions(st, obs, now)
	setBoundaryConditions(st, obs, now)
	st.ServiceStatus = rayv1.NotRunning
	if meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceReady)) {
		st.ServiceStatus = rayv1.Running
	}
	return *st, out
}

// setClusterStatus records a cluster's own status and its applications.
func setClusterStatus(s *rayv1.RayServiceStatus, rc *rayv1.RayCluster, serve ClusterServe) {
	s.RayClusterStatus = rayv1.RayClusterStatus{}
	if rc != nil {
		s.RayClusterStatus = *rc.Status.DeepCopy()
	}
	if !serve.Keep {
		s.Applications = serve.Apps
	}
}

// setTraffic records a cluster's HTTPRoute weight, and when it last moved.
func setTraffic(s *rayv1.RayServiceStatus, weight int32, now metav1.Time) {
	if ptr.Deref(s.TrafficRoutedPercent, -1) != weight {
		s.LastTrafficMigratedTime = ptr.To(now)
	}
	s.TrafficRoutedPercent = ptr.To(weight)
}

// promote moves the pending cluster's status to active when the switch to it is done: for a
// NewCluster upgrade, when the Services select it; for an incremental one, when it has all the
// traffic and the active cluster no capacity (or when it is the very first cluster).
//
// KubeRay panics when the head and serve Services select different clusters, or one that is
// neither active nor pending (a user edit, a half-done switch). Here that skips the promotion
// for this reconcile and is reported; the next reconcile of the Services repairs the selectors.
func promote(st *rayv1.RayServiceStatuses, obs Observed, incremental bool) (pendingServing bool, promoted, mismatch string) {
	active, pending := st.ActiveServiceStatus.RayClusterName, st.PendingServiceStatus.RayClusterName
	selected := obs.HeadSelects
	switch {
	case selected != obs.ServeSelects:
		return false, "", fmt.Sprintf("the head Service selects RayCluster %q but the serve Service selects %q", selected, obs.ServeSelects)
	case selected == "" || (selected != active && selected != pending):
		return false, "", fmt.Sprintf("the head and serve Services select RayCluster %q, which is neither the active (%q) nor the pending (%q) cluster",
			selected, active, pending)
	}

	var should bool
	if incremental {
		if upgrade.UpgradeInProgress(st) {
			should = obs.Pending != nil && upgrade.Complete(st)
		} else {
			should = active == "" && pending != ""
		}
	} else {
		should = active != selected
	}
	if should {
		promoted = pending
		st.ActiveServiceStatus = st.PendingServiceStatus
		st.PendingServiceStatus = rayv1.RayServiceStatus{}
	}
	return selected == pending, promoted, ""
}

// finishRollback ends a rollback that brought everything back to the active cluster, or that
// has no pending cluster left to roll back from; it reports whether the pending cluster was
// dropped.
func finishRollback(st *rayv1.RayServiceStatuses) bool {
	if !upgrade.RollbackInProgress(st) {
		return false
	}
	if st.PendingServiceStatus.RayClusterName == "" {
		meta.RemoveStatusCondition(&st.Conditions, string(rayv1.RollbackInProgress))
		return false
	}
	if !upgrade.RollbackComplete(st) {
		return false
	}
	st.PendingServiceStatus = rayv1.RayServiceStatus{}
	meta.RemoveStatusCondition(&st.Conditions, string(rayv1.RollbackInProgress))
	return true
}

// prepare names the next pending cluster. During an incremental upgrade it starts with no
// target capacity (it gains capacity step by step); the very first cluster of a RayService
// starts at full capacity.
//
// KubeRay sets the 0 only when its UpgradeInProgress condition is already True, which it is
// not when an upgrade starts from a settled RayService, so its first submission to the new
// cluster carries no target_capacity and deploys at full scale; here it starts at 0.
func prepare(st *rayv1.RayServiceStatuses, name string, incremental bool) {
	st.PendingServiceStatus = rayv1.RayServiceStatus{RayClusterName: name}
	if !incremental {
		return
	}
	if st.ActiveServiceStatus.RayClusterName == "" {
		if st.ActiveServiceStatus.TargetCapacity == nil {
			st.PendingServiceStatus.TargetCapacity = ptr.To[int32](100)
		}
		return
	}
	st.PendingServiceStatus.TargetCapacity = ptr.To[int32](0)
}
