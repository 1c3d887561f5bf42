package status

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startingReasons are the HeadPodReady reasons of a head Pod on its normal way up: no PodReady
// condition yet, containers being created or initialised, or running but not yet passing the
// readiness probe. Any other reason (CrashLoopBackOff, ImagePullBackOff, OOMKilled, a missing
// head) is a problem the user should see at once.
var startingReasons = map[string]bool{
	rayv1.UnknownReason: true,
	containersNotReady:  true,
	containerCreating:   true,
	podInitializing:     true,
}

// The kubelet's waiting reasons of a container that is being started, not failing.
const (
	containerCreating = "ContainerCreating"
	podInitializing   = "PodInitializing"
)

// ProgressOnly reports whether next differs from prev, the status last written, only by the
// progress of Pods starting while a cluster comes up for the first time: the ready and
// available worker counts, the head's address and name, and the reason or message of a head
// that is not ready yet and starting normally. Such a change may be held back for a short
// while; it gates nothing. Everything a reader acts on is written at once:
//   - the first status of the cluster and of each generation (the conditions appear, the
//     desired counts, observedGeneration),
//   - any change of a condition's status: HeadPodReady turning True (a RayService submits its
//     Serve config then, a user's `kubectl wait` returns) or back to False,
//     RayClusterProvisioned turning True with the state turning ready, ReplicaFailure,
//     suspension,
//   - any spec-derived field, and a head Pod in trouble (a reason outside startingReasons),
//   - every change once the cluster has been provisioned (a lost worker, a scale-up).
func ProgressOnly(prev, next *rayv1.RayClusterStatus) bool {
	// A status never written has no RayClusterProvisioned: it is not provisioning.
	if prev.ObservedGeneration != next.ObservedGeneration || !provisioning(prev) || !provisioning(next) || !headStarting(next) {
		return false
	}
	return equality.Semantic.DeepEqual(withoutProgress(prev), withoutProgress(next))
}

// provisioning reports whether RayClusterProvisioned is False: the cluster has not been
// all ready yet since it was created or resumed.
func provisioning(st *rayv1.RayClusterStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, string(rayv1.RayClusterProvisioned))
	return c != nil && c.Status == metav1.ConditionFalse
}

// headStarting reports whether HeadPodReady is True or False for a reason of a head on its
// normal way up.
func headStarting(st *rayv1.RayClusterStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, string(rayv1.HeadPodReady))
	return c == nil || c.Status == metav1.ConditionTrue || startingReasons[c.Reason]
}

// withoutProgress strips what ProgressOnly lets change, and lastUpdateTime. Of HeadPodReady
// only its status stays: a head's reason moving from Unknown to ContainersNotReady is progress,
// the head turning ready is not.
func withoutProgress(st *rayv1.RayClusterStatus) *rayv1.RayClusterStatus {
	c := st.DeepCopy()
	c.LastUpdateTime = nil
	c.ReadyWorkerReplicas, c.AvailableWorkerReplicas = 0, 0
	c.Head = rayv1.HeadInfo{}
	for i := range c.Conditions {
		if c.Conditions[i].Type == string(rayv1.HeadPodReady) {
			c.Conditions[i] = metav1.Condition{Type: c.Conditions[i].Type, Status: c.Conditions[i].Status}
		}
	}
	return c
}

// Starting reports whether every Pod that is not ready yet is on its normal way up: not
// failed, not terminating, not refused by the scheduler, no container crashing, exited or
// unable to pull its image. Only then is a progress-only change worth holding back: the next
// Pod will soon turn ready. A Pod stuck in one of those states will not, and a cluster with
// one shows its progress at once.
func Starting(pods []corev1.Pod) bool {
	for i := range pods {
		if !podStarting(&pods[i]) {
			return false
		}
	}
	return true
}

func podStarting(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if pod.Status.Phase == corev1.PodRunning && podReadyStatus(pod) == corev1.ConditionTrue {
		return true
	}
	if c := podCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		return false // Unschedulable (or scheduling gated): nothing will start it soon
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if !containerStarting(cs, true) {
			return false
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if !containerStarting(cs, false) {
			return false
		}
	}
	return true
}

// containerStarting reports whether a container is waiting to be created, running, or (an
// init container) completed; a restart means it crashed at least once.
func containerStarting(cs corev1.ContainerStatus, init bool) bool {
	switch {
	case cs.RestartCount > 0:
		return false
	case cs.State.Waiting != nil:
		r := cs.State.Waiting.Reason
		return r == "" || r == containerCreating || r == podInitializing
	case cs.State.Terminated != nil:
		return init && cs.State.Terminated.ExitCode == 0
	}
	return true
}
