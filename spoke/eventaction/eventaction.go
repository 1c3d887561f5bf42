// Package eventaction derives the action of an events.k8s.io Event from its reason. The spoke
// keeps KubeRay's reasons ("CreatedWorkerPod", "FailedToDeleteRayCluster", ...), which KubeRay
// records through the core/v1 API that has no action; the events API requires one, and reading
// it off the reason keeps the call sites to KubeRay's reasons alone.
// A leaf: it imports no other RayFleet package, so never hub/ or shared/testing.
package eventaction

import "strings"

// Of returns the action an event with reason reports: Create, Delete, Update, Validate or,
// for anything else, Reconcile.
func Of(reason string) string {
	switch {
	case strings.Contains(reason, "Create"):
		return "Create"
	case strings.Contains(reason, "Delete"):
		return "Delete"
	case strings.Contains(reason, "Update"):
		return "Update"
	case strings.HasPrefix(reason, "Invalid"):
		return "Validate"
	default:
		return "Reconcile"
	}
}
