// Package status computes a RayCluster's status from what the reconciler observed, the way
// KubeRay v1.6.2 does: conditions, replica counts, desired resources, state, endpoints and head
// info. It makes no API calls and reads no clock; the reconciler lists, calls Compute, and
// writes the result once when Changed says so.
//
// Suspension is decided here, not by the reconciler: Compute alone moves the Suspending and
// Suspended conditions (see setSuspendConditions). The reconciler reads SuspendState of the
// status it fetched, before Compute, to choose whether to delete Pods, leave them, or wait; a
// changed status must trigger another reconcile promptly so the next step happens.
//
// Of the repository it imports only shared/ (api/fleet, conditions, demand, labels): no client,
// never hub/ or the reconciler.
package status

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Observed is what the reconciler saw of a RayCluster's children at the end of a reconcile.
type Observed struct {
	// Pods are all Pods labelled ray.io/cluster=<name> in the cluster's namespace, terminating
	// ones included: they still hold resources and block a suspension from completing.
	Pods []corev1.Pod
	// HeadService is the head Service (ray.io/cluster=<name>, ray.io/node-type=head); nil when
	// missing. A headless one (clusterIP None) is fine.
	HeadService *corev1.Service
	// ReconcileErr is the error of this reconcile, nil on success. Tag Pod failures with
	// ReplicaFailure to raise the RayClusterReplicaFailure condition.
	ReconcileErr error
	// PodsForbidden names the templates whose Pods violate the member's Pod Security level, as
	// "<what> violates ..."; nil when the reconcile did not check them, which leaves the
	// PodsForbidden condition as it was.
	PodsForbidden []string
	// Conflicts name the objects the reconcile left alone because something else controls
	// them; nil when it did not look at all of them, which leaves OwnershipConflict as it was.
	Conflicts []string
}

// Compute returns the new status of rc given what was observed; rc is not modified. now stamps
// lastUpdateTime, state transitions and condition transitions; it is cut to whole seconds, the
// precision the API server keeps, so a status read back compares equal to the one computed.
//
// It fails, wrapping ErrMultipleHeadPods, ErrHeadServiceNotFound or ErrHeadServiceNoIP, when the
// head cannot be told; KubeRay skips the status write then, and so should the caller.
func Compute(rc *rayv1.RayCluster, obs Observed, now metav1.Time) (rayv1.RayClusterStatus, error) {
	now = now.Rfc3339Copy()
	head, err := findHeadPod(rc, obs.Pods)
	if err != nil {
		return rayv1.RayClusterStatus{}, err
	}
	info, err := headInfo(rc, head, obs.HeadService)
	if err != nil {
		return rayv1.RayClusterStatus{}, err
	}

	st := rc.Status.DeepCopy()
	st.ObservedGeneration = rc.Generation
	setReplicaFailureCondition(st, obs.ReconcileErr, now)
	setPodsForbiddenCondition(st, obs.PodsForbidden, rc.Generation, now)
	setOwnershipConflictCondition(st, obs.Conflicts, rc.Generation, now)
	setReplicaCounts(st, rc, obs.Pods)
	setDesiredResources(st, rc)
	setReadyState(st, obs)
	setHeadPodReadyCondition(st, head, now)
	suspend := SuspendState(st)
	setProvisionedCondition(st, suspend, obs.Pods, now)
	setSuspendConditions(st, rc, suspend, len(obs.Pods), now)
	if suspend == rayv1.RayClusterSuspended && SuspendState(st) == "" {
		// Resumed: restart provisioning in this write. KubeRay gets there one reconcile (and
		// one status write) later, to the same result.
		setProvisionedCondition(st, "", obs.Pods, now)
	}
	setSuspendedState(st, rc, len(obs.Pods))
	st.Endpoints = endpoints(obs.HeadService)
	st.Head = info
	st.LastUpdateTime = &now
	recordStateTransition(st, rc.Status.State, now)
	return *st, nil
}

// setReadyState moves the deprecated state to "ready" once a clean reconcile sees exactly the
// head plus the desired workers, all running and ready. Like KubeRay it never moves back when
// Pods later fail: only a suspension replaces it.
func setReadyState(st *rayv1.RayClusterStatus, obs Observed) {
	if obs.ReconcileErr != nil || len(obs.Pods) != int(st.DesiredWorkerReplicas)+1 {
		return
	}
	if allPodsRunningAndReady(obs.Pods) {
		st.State = rayv1.Ready
		st.Reason = ""
	}
}

// setSuspendedState moves the state to "suspended" when the spec asks for it and no Pod is left,
// whatever the conditions say. It stays "suspended" after a resume until the cluster is ready.
func setSuspendedState(st *rayv1.RayClusterStatus, rc *rayv1.RayCluster, pods int) {
	if ptr.Deref(rc.Spec.Suspend, false) && pods == 0 {
		st.State = rayv1.Suspended
	}
}

// recordStateTransition stamps the time the state changed from prev.
func recordStateTransition(st *rayv1.RayClusterStatus, prev rayv1.ClusterState, now metav1.Time) {
	if st.State == prev {
		return
	}
	if st.StateTransitionTimes == nil {
		st.StateTransitionTimes = map[rayv1.ClusterState]*metav1.Time{}
	}
	st.StateTransitionTimes[st.State] = &now
}

// Changed reports whether next differs from prev in anything a reader can observe, that is in
// anything but lastUpdateTime (which alone never justifies a write, as in KubeRay). A new
// observedGeneration does count, unlike in KubeRay: tools that wait for a spec change to be
// seen (kubectl wait, GitOps health checks) compare it with metadata.generation, so each new
// generation costs one write. It compares semantically: quantities by value, times by instant,
// nil and empty maps alike, so a status read back from the API server does not look changed.
func Changed(prev, next *rayv1.RayClusterStatus) bool {
	return !equality.Semantic.DeepEqual(observable(prev), observable(next))
}

// observable strips the fields Changed ignores.
func observable(st *rayv1.RayClusterStatus) *rayv1.RayClusterStatus {
	if st == nil {
		return &rayv1.RayClusterStatus{}
	}
	c := st.DeepCopy()
	c.LastUpdateTime = nil
	return c
}

// BecameProvisioned reports whether RayClusterProvisioned turned True between prev and next: the
// moment KubeRay observes kuberay_cluster_provisioned_duration_seconds (after the status write
// succeeded). It fires again after a suspend and resume.
func BecameProvisioned(prev, next *rayv1.RayClusterStatus) bool {
	provisioned := func(st *rayv1.RayClusterStatus) bool {
		return st != nil && meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayClusterProvisioned))
	}
	return !provisioned(prev) && provisioned(next)
}
