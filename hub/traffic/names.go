package traffic

import (
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/names"
)

// RouteKey names the route of a RayService in the traffic cluster, and the RayService.
type RouteKey struct {
	// Route is the HTTPRoute's namespace and name.
	Route types.NamespacedName
	// RayService is the hub RayService it routes.
	RayService types.NamespacedName
}

// Key is the route key of rayService: the route lives with the RayService, in its namespace
// and under its name, so that the Gateway's listeners (allowedRoutes, hostname) decide whether
// it attaches, and its backends need no reference across namespaces.
func Key(rayService types.NamespacedName) RouteKey {
	return RouteKey{Route: rayService, RayService: rayService}
}

// LegacyKey is where hubs before routes moved to the RayService's namespace wrote the route of
// rayService under spec: in the Gateway's namespace, under the RayService's name prefixed
// with its namespace when that is another one. ok is false when that is Key's route itself.
func LegacyKey(rayService types.NamespacedName, spec *fleetv1alpha1.TrafficSpec) (key RouteKey, ok bool) {
	ns := spec.ParentRef.Namespace
	if ns == rayService.Namespace {
		return RouteKey{}, false
	}
	route := types.NamespacedName{Namespace: ns, Name: names.Bounded(rayService.Namespace, rayService.Name)}
	return RouteKey{Route: route, RayService: rayService}, true
}

// BackendName is the name of the Service (and its EndpointSlice) standing for member in the
// route of key, in the route's namespace: distinct for every route and member
// (names.Distinct), within 63 characters so that it is a valid Service name.
func BackendName(key RouteKey, member string) string {
	return names.Distinct(key.Route.Name, member)
}

// ImportName is the name of the ServiceImport standing for member in the route of key: the
// name the member's spoke exports its serve Service under (shared/names.ServeExport).
func ImportName(key RouteKey, member string) string {
	return names.ServeExport(key.RayService.Name, member)
}

// LegacyImportName is the ServiceImport of member under the name spokes before
// names.ServeExport's hash export (names.LegacyServeExport), which two RayServices may share.
func LegacyImportName(key RouteKey, member string) string {
	return names.LegacyServeExport(key.RayService.Name, member)
}

// Imports are the names of the ServiceImports in a route's namespace; nil when they could not
// be read.
type Imports map[string]bool

// importFor is the ServiceImport the route of key refers to for member: ImportName once the
// traffic cluster has it, so that a route keeps its traffic while the member's spoke predates
// it; else LegacyImportName, which old and new spokes both export. The fallback goes with
// names.LegacyServeExport.
func importFor(key RouteKey, member string, imports Imports) string {
	if name := ImportName(key, member); imports[name] {
		return name
	}
	return LegacyImportName(key, member)
}
