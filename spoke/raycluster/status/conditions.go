package status

import (
	"fmt"
	"regexp"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// Condition messages, word for word KubeRay's.
const (
	msgHeadPodNotFound  = "Head Pod not found"
	msgProvisioned      = "All Ray Pods are ready for the first time"
	msgProvisioning     = "RayCluster Pods are being provisioned for first time"
	msgSuspendedCluster = "RayCluster has been suspended"
)

// containersNotReady is the kubelet's PodReady reason that hides the interesting one: a
// container's own waiting or terminated reason is surfaced instead.
const containersNotReady = "ContainersNotReady"

// validReason is the API server's pattern for metav1.Condition.reason; a condition outside it
// would make the whole status write fail.
var validReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// setCondition sets c on st, stamping a transition with now.
func setCondition(st *rayv1.RayClusterStatus, c metav1.Condition, now metav1.Time) {
	c.LastTransitionTime = now
	conditions.Set(&st.Conditions, c)
}

// setReplicaFailureCondition reports a failed Pod create/delete of this reconcile. A clean
// reconcile clears it; an error of another kind (a Service, say) says nothing about Pods, so
// the condition is left as it was.
func setReplicaFailureCondition(st *rayv1.RayClusterStatus, reconcileErr error, now metav1.Time) {
	if reconcileErr == nil {
		meta.RemoveStatusCondition(&st.Conditions, string(rayv1.RayClusterReplicaFailure))
		return
	}
	reason, ok := ReplicaFailureReasonOf(reconcileErr)
	if !ok {
		return
	}
	setCondition(st, metav1.Condition{
		Type:    string(rayv1.RayClusterReplicaFailure),
		Status:  metav1.ConditionTrue,
		Reason:  string(reason),
		Message: reconcileErr.Error(),
	}, now)
}

// Messages leading the boundary conditions.
const (
	msgPodsForbidden     = "The spoke creates no Pod that violates this member's Pod Security level"
	msgOwnershipConflict = "Objects this RayCluster would write exist and are controlled by something else; they are left alone"
)

// setPodsForbiddenCondition raises PodsForbidden while some template's Pods violate the
// member's level and drops it once none does; forbidden nil (not checked) leaves it alone.
func setPodsForbiddenCondition(st *rayv1.RayClusterStatus, forbidden []string, generation int64, now metav1.Time) {
	setOrDrop(st, fleetv1alpha1.ConditionPodsForbidden, fleetv1alpha1.ReasonPodSecurityViolation, msgPodsForbidden,
		forbidden, generation, now)
}

// setOwnershipConflictCondition raises OwnershipConflict while objects the reconcile would
// write belong to something else; conflicts nil (not looked at) leaves it alone.
func setOwnershipConflictCondition(st *rayv1.RayClusterStatus, conflicts []string, generation int64, now metav1.Time) {
	setOrDrop(st, fleetv1alpha1.ConditionOwnershipConflict, fleetv1alpha1.ReasonNotControlled, msgOwnershipConflict,
		conflicts, generation, now)
}

// setOrDrop sets condition t True with head and parts as its message, removes it when parts is
// empty, and leaves it as it is when parts is nil.
func setOrDrop(st *rayv1.RayClusterStatus, t, reason, head string, parts []string, generation int64, now metav1.Time) {
	switch {
	case parts == nil:
		return
	case len(parts) == 0:
		meta.RemoveStatusCondition(&st.Conditions, t)
		return
	}
	setCondition(st, metav1.Condition{
		Type: t, Status: metav1.ConditionTrue, Reason: reason,
		Message: conditions.Join(head, parts...), ObservedGeneration: generation,
	}, now)
}

// setHeadPodReadyCondition mirrors the head Pod's PodReady condition.
func setHeadPodReadyCondition(st *rayv1.RayClusterStatus, head *corev1.Pod, now metav1.Time) {
	setCondition(st, headPodReadyCondition(head), now)
}

// headPodReadyCondition derives HeadPodReady from the head Pod. When the kubelet only says
// ContainersNotReady, the first container that is waiting or terminated lends its reason
// (CrashLoopBackOff, ImagePullBackOff, OOMKilled, ...) and its message, so users see why.
func headPodReadyCondition(head *corev1.Pod) metav1.Condition {
	c := metav1.Condition{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionFalse}
	if head == nil {
		c.Reason, c.Message = rayv1.HeadPodNotFound, msgHeadPodNotFound
		return c
	}
	c.Reason = rayv1.UnknownReason
	ready := podCondition(head, corev1.PodReady)
	if ready == nil {
		return c
	}
	c.Status, c.Message = metav1.ConditionStatus(ready.Status), ready.Message
	switch {
	case ready.Reason != "":
		c.Reason = ready.Reason
	case ready.Status == corev1.ConditionTrue:
		c.Reason = rayv1.HeadPodRunningAndReady
	}
	if ready.Reason == containersNotReady {
		if reason, msg, ok := containerNotRunning(head); ok {
			if c.Message != "" {
				c.Message += "; "
			}
			c.Message += msg
			if reason != "" {
				c.Reason = reason
			}
		}
	}
	if !validReason.MatchString(c.Reason) || len(c.Reason) > 1024 {
		// Reasons are free text in Pod status but constrained in conditions.
		c.Reason = rayv1.UnknownReason
	}
	return c
}

// containerNotRunning returns the reason and "<container>: <message>" of the first container
// status that is waiting or terminated. The order is the kubelet's (by container name), so with
// sidecars it need not be the Ray container; KubeRay behaves the same.
func containerNotRunning(pod *corev1.Pod) (reason, message string, ok bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			return cs.State.Waiting.Reason, fmt.Sprintf("%s: %s", cs.Name, cs.State.Waiting.Message), true
		case cs.State.Terminated != nil:
			return cs.State.Terminated.Reason, fmt.Sprintf("%s: %s", cs.Name, cs.State.Terminated.Message), true
		}
	}
	return "", "", false
}

// setProvisionedCondition latches RayClusterProvisioned: it turns True the first time every Pod
// is running and ready and then stays True whatever happens to the Pods. Only a completed
// suspension (setSuspendConditions) turns it back to False, after which it latches anew.
// While the cluster is suspended it is left alone.
func setProvisionedCondition(st *rayv1.RayClusterStatus, suspend rayv1.RayClusterConditionType, pods []corev1.Pod, now metav1.Time) {
	if meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayClusterProvisioned)) || suspend == rayv1.RayClusterSuspended {
		return
	}
	c := metav1.Condition{
		Type:    string(rayv1.RayClusterProvisioned),
		Status:  metav1.ConditionFalse,
		Reason:  rayv1.RayClusterPodsProvisioning,
		Message: msgProvisioning,
	}
	if allPodsRunningAndReady(pods) {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, rayv1.AllPodRunningAndReadyFirstTime, msgProvisioned
	}
	setCondition(st, c, now)
}

// SuspendState returns which of RayClusterSuspending and RayClusterSuspended is True in st, or
// "" when neither is. The reconciler acts on the state it read (the status before Compute):
// Suspending → delete every Pod; Suspended → leave Pods alone; "" with spec.suspend set → do
// nothing yet and let Compute raise Suspending first, so that a suspension, once started,
// always completes.
func SuspendState(st *rayv1.RayClusterStatus) rayv1.RayClusterConditionType {
	switch {
	case meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayClusterSuspending)):
		return rayv1.RayClusterSuspending
	case meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayClusterSuspended)):
		return rayv1.RayClusterSuspended
	}
	return ""
}

// setSuspendConditions advances the suspend state machine one step:
//
//	"" ──spec.suspend──► Suspending ──no Pods left──► Suspended ──!spec.suspend──► ""
//
// Suspending ignores spec.suspend going back to false: the deletion finishes first. Finishing it
// also resets RayClusterProvisioned, since the Pods must be provisioned again on resume.
func setSuspendConditions(st *rayv1.RayClusterStatus, rc *rayv1.RayCluster, state rayv1.RayClusterConditionType, pods int, now metav1.Time) {
	wantSuspend := ptr.Deref(rc.Spec.Suspend, false)
	switch state {
	case rayv1.RayClusterSuspending:
		if pods > 0 {
			return
		}
		setCondition(st, metav1.Condition{
			Type:    string(rayv1.RayClusterProvisioned),
			Status:  metav1.ConditionFalse,
			Reason:  rayv1.RayClusterPodsProvisioning,
			Message: msgSuspendedCluster,
		}, now)
		setCondition(st, suspendCondition(rayv1.RayClusterSuspending, false), now)
		setCondition(st, suspendCondition(rayv1.RayClusterSuspended, true), now)
	case rayv1.RayClusterSuspended:
		// KubeRay resumes only on an explicit suspend: false; an unset field counts too here,
		// or removing the field would leave the cluster suspended for good.
		if !wantSuspend {
			setCondition(st, suspendCondition(rayv1.RayClusterSuspended, false), now)
		}
	default:
		setCondition(st, suspendCondition(rayv1.RayClusterSuspended, false), now)
		setCondition(st, suspendCondition(rayv1.RayClusterSuspending, wantSuspend), now)
	}
}

// suspendCondition builds a Suspending or Suspended condition; KubeRay uses the type as reason
// and gives no message.
func suspendCondition(t rayv1.RayClusterConditionType, on bool) metav1.Condition {
	s := metav1.ConditionFalse
	if on {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: string(t), Status: s, Reason: string(t)}
}

// podCondition returns the Pod condition of type t, nil when absent.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// podReadyStatus is the status of the Pod's PodReady condition, "" when absent.
func podReadyStatus(pod *corev1.Pod) corev1.ConditionStatus {
	if c := podCondition(pod, corev1.PodReady); c != nil {
		return c.Status
	}
	return ""
}

// allPodsRunningAndReady reports whether there is at least one Pod and every Pod is Running and
// not explicitly unready. A Running Pod without a PodReady condition counts as ready (KubeRay's
// rule); the Pod count is not compared with the spec, so this can hold before workers exist.
func allPodsRunningAndReady(pods []corev1.Pod) bool {
	if len(pods) == 0 {
		return false
	}
	for i := range pods {
		if pods[i].Status.Phase != corev1.PodRunning {
			return false
		}
		if s := podReadyStatus(&pods[i]); s != "" && s != corev1.ConditionTrue {
			return false
		}
	}
	return true
}
