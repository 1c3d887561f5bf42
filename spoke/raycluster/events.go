package raycluster

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rayfleet/rayfleet/spoke/eventaction"
)

// Event reasons. They are KubeRay's, so alerts and dashboards built on KubeRay's events keep
// matching.
const (
	reasonInvalidMetadata = "InvalidRayClusterMetadata"
	reasonInvalidSpec     = "InvalidRayClusterSpec"
	reasonInvalidStatus   = "InvalidRayClusterStatus"

	reasonCreatedHeadPod          = "CreatedHeadPod"
	reasonFailedToCreateHeadPod   = "FailedToCreateHeadPod"
	reasonDeletedHeadPod          = "DeletedHeadPod"
	reasonFailedToDeleteHeadPod   = "FailedToDeleteHeadPod"
	reasonCreatedWorkerPod        = "CreatedWorkerPod"
	reasonFailedToCreateWorkerPod = "FailedToCreateWorkerPod"
	reasonDeletedWorkerPod        = "DeletedWorkerPod"
	reasonFailedToDeleteWorkerPod = "FailedToDeleteWorkerPod"
	reasonDeletedPod              = "DeletedPod"
	reasonFailedToDeletePods      = "FailedToDeletePodCollection"

	reasonCreatedRedisCleanupJob        = "CreatedRedisCleanupJob"
	reasonFailedToCreateRedisCleanupJob = "FailedToCreateRedisCleanupJob"
	reasonRedisCleanupFailed            = "RedisCleanupFailed"
	reasonForceDeletedStuckCluster      = "ForceDeletedStuckCluster"

	reasonCreatedService        = "CreatedService"
	reasonFailedToCreateService = "FailedToCreateService"
	reasonCreatedIngress        = "CreatedIngress"
	reasonFailedToCreateIngress = "FailedToCreateIngress"
	reasonCreatedSecret         = "CreatedSecret"
	reasonFailedToCreateSecret  = "FailedToCreateSecret"

	reasonCreatedServiceAccount           = "CreatedServiceAccount"
	reasonFailedToCreateServiceAccount    = "FailedToCreateServiceAccount"
	reasonAutoscalerServiceAccountMissing = "AutoscalerServiceAccountNotFound"
	reasonCreatedRole                     = "CreatedRole"
	reasonFailedToCreateRole              = "FailedToCreateRole"
	reasonUpdatedRole                     = "UpdatedRole"
	reasonFailedToUpdateRole              = "FailedToUpdateRole"
	reasonCreatedRoleBinding              = "CreatedRoleBinding"
	reasonFailedToCreateRoleBinding       = "FailedToCreateRoleBinding"
)

// eventf records an event about rc. The action (what the spoke did) is read off KubeRay's
// reason names, so the call sites keep KubeRay's reasons and nothing else.
//
// related is the object the event is about besides rc (the Pod, Service, Job ... created or
// deleted), nil for an event about rc alone. It is not decoration: the events API groups
// events into one series by reason and objects, not by message, so two Services created with
// the same reason and no related object would show as one event counted twice, the second
// message lost.
func (r *Reconciler) eventf(rc *rayv1.RayCluster, related runtime.Object, eventType, reason, format string, args ...any) {
	r.recorder.Eventf(rc, related, eventType, reason, eventaction.Of(reason), format, args...)
}
