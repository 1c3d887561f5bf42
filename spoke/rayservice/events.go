package rayservice

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rayfleet/rayfleet/spoke/eventaction"
)

// Event reasons. All but the last group are KubeRay's, so alerts and dashboards built on
// KubeRay's events keep matching.
const (
	reasonInvalidMetadata = "InvalidRayServiceMetadata"
	reasonInvalidSpec     = "InvalidRayServiceSpec"
	reasonTimedOut        = "RayServiceInitializingTimeout"

	reasonCreatedCluster        = "CreatedRayCluster"
	reasonUpdatedCluster        = "UpdatedRayCluster"
	reasonDeletedCluster        = "DeletedRayCluster"
	reasonFailedToCreateCluster = "FailedToCreateRayCluster"
	reasonFailedToUpdateCluster = "FailedToUpdateRayCluster"
	reasonFailedToDeleteCluster = "FailedToDeleteRayCluster"

	reasonUpdatedHeadPodLabel        = "UpdatedHeadPodServeLabel"
	reasonFailedToUpdateHeadPodLabel = "FailedToUpdateHeadPodServeLabel"

	reasonUpdatedServeApps        = "UpdatedServeApplications"
	reasonFailedToUpdateServeApps = "FailedToUpdateServeApplications"
	reasonUpdatedTargetCapacity   = "UpdatedServeTargetCapacity"
	reasonFailedToUpdateCapacity  = "FailedToUpdateTargetCapacity"

	reasonCreatedService        = "CreatedService"
	reasonUpdatedService        = "UpdatedService"
	reasonFailedToCreateService = "FailedToCreateService"
	reasonFailedToUpdateService = "FailedToUpdateService"

	reasonCreatedGateway          = "CreatedGateway"
	reasonUpdatedGateway          = "UpdatedGateway"
	reasonFailedToCreateGateway   = "FailedToCreateGateway"
	reasonFailedToUpdateGateway   = "FailedToUpdateGateway"
	reasonCreatedHTTPRoute        = "CreatedHTTPRoute"
	reasonUpdatedHTTPRoute        = "UpdatedHTTPRoute"
	reasonFailedToCreateHTTPRoute = "FailedToCreateHTTPRoute"
	reasonFailedToUpdateHTTPRoute = "FailedToUpdateHTTPRoute"

	// RayFleet's own: KubeRay has no event for these (it panics on the first, only returns
	// an error on the second and only records the third in applicationStatuses).
	reasonSelectorMismatch     = "ServiceSelectorMismatch"
	reasonFailedToGetServeApps = "FailedToGetServeApplicationStatuses"
	reasonServeAppFailed       = "ServeApplicationFailed"
	// reasonOwnershipConflict: an object the RayService would write is not its own.
	reasonOwnershipConflict = "OwnershipConflict"
)

// eventf records an event about rs; the action is read off the reason, as for RayClusters.
//
// related is the object the event is about besides rs (the RayCluster, Service, Gateway ...),
// nil for an event about rs alone. The events API groups events into one series by reason and
// objects, not by message: without it "Created the service x-head-svc" and "Created the service
// x-serve-svc" would show as one event counted twice, the second message lost.
func (r *Reconciler) eventf(rs *rayv1.RayService, related runtime.Object, eventType, reason, format string, args ...any) {
	r.recorder.Eventf(rs, related, eventType, reason, eventaction.Of(reason), format, args...)
}
