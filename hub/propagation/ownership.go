package propagation

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Ownership is whose copy a member RayService is, judged by its origin labels.
type Ownership int

const (
	// NotFound means the member has no RayService of that namespace and name; the hub creates it.
	NotFound Ownership = iota
	// Ours means the copy was propagated from this hub object; the hub keeps it in line.
	Ours
	// Foreign means the copy was not propagated from this hub RayService (no or other
	// origin labels). The hub never touches it and reports a conflict.
	Foreign
	// OursStale means the copy was propagated from an earlier hub object of the same namespace and
	// name (another or no origin UID), i.e. the hub object was deleted and recreated while the
	// member kept its copy, for example because the member was unreachable. It is the hub's to
	// take over or remove; applying the new member object rewrites the origin UID.
	OursStale
)

// String names the ownership for logs and condition messages.
func (o Ownership) String() string {
	switch o {
	case NotFound:
		return "NotFound"
	case Ours:
		return "Ours"
	case Foreign:
		return "Foreign"
	case OursStale:
		return "OursStale"
	default:
		return "Unknown"
	}
}

// OwnershipOf says whose copy member is with respect to the hub RayService hub of the hub named
// hubName. A nil member is NotFound; with a nil hub nothing can be ours, so any member is
// Foreign. The origin namespace and name must both match, so a member object whose labels name
// another hub object is Foreign even if it sits at the same namespace and name; so is a copy
// another hub made (its origin-hub label names another hub). A copy without an origin-hub
// label was made before hubs named themselves and is taken as this hub's.
func OwnershipOf(hubName string, hub *rayv1.RayService, member *rayv1.RayService) Ownership {
	if member == nil {
		return NotFound
	}
	if hub == nil {
		return Foreign
	}
	origin := member.Labels
	if origin[labels.OriginNamespace] != hub.Namespace || origin[labels.OriginName] != hub.Name ||
		origin[labels.OriginNamespace] == "" || origin[labels.OriginName] == "" {
		return Foreign
	}
	if h, ok := origin[labels.OriginHub]; ok && h != hubName {
		return Foreign
	}
	if uid := origin[labels.OriginUID]; uid == "" || uid != string(hub.UID) {
		return OursStale
	}
	return Ours
}
