package traffic

import (
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/names"
)

// RouteKey names the route of a RayService in the traffic cluster, and the RayService.
type RouteKey struct {
	// Route is the HTTPRoute's namespace (the Gateway's) and name.
	Route types.NamespacedName
	// RayService is the hub RayService it routes.
	RayService types.NamespacedName
}

// Key is the route key of rayService under spec: in the Gateway's namespace, under the
// RayService's name, prefixed with the RayService's namespace when that is another one (two
// RayServices of one name in different namespaces may share a Gateway), bounded to 63
// characters.
func Key(rayService types.NamespacedName, spec *fleetv1alpha1.TrafficSpec) RouteKey {
	ns := spec.ParentRef.Namespace
	name := rayService.Name
	if ns != rayService.Namespace {
		name = names.Bounded(rayService.Namespace, rayService.Name)
	}
	return RouteKey{Route: types.NamespacedName{Namespace: ns, Name: name}, RayService: rayService}
}

// BackendName is the name of the Service (and its EndpointSlice) standing for member in the
// route of key, in the route's namespace: the route's name and the member's, bounded to 63
// characters so that it is a valid Service name.
func BackendName(key RouteKey, member string) string {
	return names.Bounded(key.Route.Name, member)
}

// ImportName is the name of the ServiceImport standing for member in the route of key: the
// name the member's spoke exports its serve Service under (shared/names.ServeExport).
func ImportName(key RouteKey, member string) string {
	return names.ServeExport(key.RayService.Name, member)
}
