package status

import (
	"fmt"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/conditions"
)

// Condition messages, KubeRay's words.
const (
	msgInitializing        = "RayService is initializing"
	msgNonZeroEndpoints    = "Number of serve endpoints is greater than 0"
	msgZeroEndpoints       = "Number of serve endpoints dropped to 0"
	msgBothClusters        = "Both active and pending Ray clusters exist"
	msgNoPendingCluster    = "Active Ray cluster exists and no pending Ray cluster"
	msgNoActiveCluster     = "No active Ray cluster exists, and the RayService is not initializing"
	msgInitializingTimeout = "RayService failed to become ready within the configured timeout of %s. Time spent initializing: %s"
)

// setCondition sets a RayService condition, stamping a transition with now and the status's
// observedGeneration.
func setCondition(st *rayv1.RayServiceStatuses, t rayv1.RayServiceConditionType, status metav1.ConditionStatus,
	reason rayv1.RayServiceConditionReason, msg string, now metav1.Time,
) {
	conditions.Set(&st.Conditions, metav1.Condition{
		Type:               string(t),
		Status:             status,
		Reason:             string(reason),
		Message:            msg,
		ObservedGeneration: st.ObservedGeneration,
		LastTransitionTime: now,
	})
}

// withProblems appends what went wrong talking to dashboards to a condition message.
func withProblems(msg string, problems ...string) string {
	var parts []string
	for _, p := range problems {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return msg
	}
	return msg + "; " + strings.Join(parts, "; ")
}

// setConditions sets Ready and UpgradeInProgress as KubeRay does, from numServeEndpoints and
// the cluster names, and applies the initializing timeout. It returns the timeout's message
// when the RayService just exceeded it: its clusters are then dropped from the status (and so
// deleted) and Ready=False/InitializingTimeout is terminal.
//
// A dashboard problem is appended to the message of the condition it holds back: Ready for
// the active cluster (or the first cluster), UpgradeInProgress for the pending cluster of an
// upgrade.
func setConditions(st *rayv1.RayServiceStatuses, obs Observed, now metav1.Time) (timedOut string) {
	if c := meta.FindStatusCondition(st.Conditions, string(rayv1.RayServiceReady)); c != nil && c.Reason == string(rayv1.RayServiceValidationFailed) {
		// Valid again: the RayService initializes from now on, as a new one does (KubeRay
		// leaves ValidationFailed until endpoints appear, and never times it out).
		meta.RemoveStatusCondition(&st.Conditions, string(rayv1.RayServiceReady))
		if u := meta.FindStatusCondition(st.Conditions, string(rayv1.UpgradeInProgress)); u != nil && u.Reason == string(rayv1.RayServiceInitializing) {
			meta.RemoveStatusCondition(&st.Conditions, string(rayv1.UpgradeInProgress))
		}
	}
	for _, t := range []rayv1.RayServiceConditionType{rayv1.RayServiceReady, rayv1.UpgradeInProgress} {
		if meta.FindStatusCondition(st.Conditions, string(t)) == nil {
			setCondition(st, t, metav1.ConditionFalse, rayv1.RayServiceInitializing, msgInitializing, now)
		}
	}
	active, pending := st.ActiveServiceStatus.RayClusterName, st.PendingServiceStatus.RayClusterName
	readyProblems := []string{obs.ActiveServe.Problem}
	if active == "" {
		readyProblems = append(readyProblems, obs.PendingServe.Problem)
	}
	// The hub shows a member's Ready message: a refused Pod is why the member is not ready.
	readyProblems = append(readyProblems, podsForbidden(obs)...)

	ready := meta.FindStatusCondition(st.Conditions, string(rayv1.RayServiceReady))
	switch {
	case st.NumServeEndpoints > 0:
		setCondition(st, rayv1.RayServiceReady, metav1.ConditionTrue, rayv1.NonZeroServeEndpoints,
			withProblems(msgNonZeroEndpoints, readyProblems...), now)
	case ready != nil && ready.Status == metav1.ConditionTrue:
		setCondition(st, rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.ZeroServeEndpoints,
			withProblems(msgZeroEndpoints, readyProblems...), now)
	case ready != nil && ready.Reason == string(rayv1.RayServiceInitializing):
		if timedOut = initializingTimedOut(ready, obs.InitializingTimeout.Duration, now); timedOut != "" {
			st.ActiveServiceStatus.RayClusterName = ""
			st.PendingServiceStatus.RayClusterName = ""
			active, pending = "", ""
			setCondition(st, rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.RayServiceInitializingTimeout, timedOut, now)
		} else {
			setCondition(st, rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.RayServiceInitializing,
				withProblems(msgInitializing, readyProblems...), now)
		}
	}

	switch {
	case active != "" && pending != "":
		setCondition(st, rayv1.UpgradeInProgress, metav1.ConditionTrue, rayv1.BothActivePendingClustersExist,
			withProblems(msgBothClusters, obs.PendingServe.Problem), now)
	case active != "":
		setCondition(st, rayv1.UpgradeInProgress, metav1.ConditionFalse, rayv1.NoPendingCluster, msgNoPendingCluster, now)
	default:
		c := meta.FindStatusCondition(st.Conditions, string(rayv1.UpgradeInProgress))
		if c == nil || (c.Reason != string(rayv1.RayServiceInitializing) && c.Reason != string(rayv1.RayServiceInitializingTimeout)) {
			setCondition(st, rayv1.UpgradeInProgress, metav1.ConditionUnknown, rayv1.NoActiveCluster, msgNoActiveCluster, now)
		}
	}
	return timedOut
}

// initializingTimedOut returns the timeout message when Ready has been False/Initializing for
// at least timeout (0 means no timeout), else "".
func initializingTimedOut(ready *metav1.Condition, timeout time.Duration, now metav1.Time) string {
	if timeout <= 0 {
		return ""
	}
	spent := now.Sub(ready.LastTransitionTime.Time)
	if spent < timeout {
		return ""
	}
	return fmt.Sprintf(msgInitializingTimeout, timeout, spent.Round(time.Second))
}

// InitializingTimedOut reports whether a RayService sits in the terminal InitializingTimeout
// state for its current generation: nothing is reconciled but the deletion of its clusters.
func InitializingTimedOut(rs *rayv1.RayService) bool {
	c := meta.FindStatusCondition(rs.Status.Conditions, string(rayv1.RayServiceReady))
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(rayv1.RayServiceInitializingTimeout) &&
		c.ObservedGeneration == rs.Generation
}

// RestartAfterTimeout lets a RayService that timed out initializing for an earlier generation
// start over (the user changed its spec, as the issue allows; KubeRay requires it to be
// recreated). Its conditions are dropped, so that Compute stamps Initializing afresh and the
// timeout counts from now. It reports whether it did so.
func RestartAfterTimeout(rs *rayv1.RayService) bool {
	c := meta.FindStatusCondition(rs.Status.Conditions, string(rayv1.RayServiceReady))
	if c == nil || c.Reason != string(rayv1.RayServiceInitializingTimeout) || c.ObservedGeneration == rs.Generation {
		return false
	}
	meta.RemoveStatusCondition(&rs.Status.Conditions, string(rayv1.RayServiceReady))
	meta.RemoveStatusCondition(&rs.Status.Conditions, string(rayv1.UpgradeInProgress))
	return true
}

// msgRollback is KubeRay's message of RollbackInProgress.
const msgRollback = "Goal state changed mid-upgrade, rolling back to original cluster."

// StartRollback raises RollbackInProgress: the goal spec left the pending cluster behind.
func StartRollback(st *rayv1.RayServiceStatuses, now metav1.Time) {
	setCondition(st, rayv1.RollbackInProgress, metav1.ConditionTrue, rayv1.TargetClusterChanged, msgRollback, now.Rfc3339Copy())
}

// CancelRollback drops RollbackInProgress: the goal spec is the pending cluster's again.
func CancelRollback(st *rayv1.RayServiceStatuses) {
	meta.RemoveStatusCondition(&st.Conditions, string(rayv1.RollbackInProgress))
}
