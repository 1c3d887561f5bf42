package raycluster

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
	reasonCreatedRoleBinding              = "CreatedRoleBinding"
	reasonFailedToCreateRoleBinding       = "FailedToCreateRoleBinding"
)
