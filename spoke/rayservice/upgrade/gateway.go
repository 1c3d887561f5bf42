package upgrade

import (
	"k8s.io/apimachinery/pkg/api/meta"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// GatewayReady reports whether the Gateway controller accepted gw and programmed the data
// plane behind it (Accepted and Programmed both True), as KubeRay requires before it moves
// any capacity.
func GatewayReady(gw *gwv1.Gateway) bool {
	return gw != nil &&
		meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionAccepted)) &&
		meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
}

// RouteReady reports whether route is attached to gw: its status for that parent has Accepted
// and ResolvedRefs True (the route is valid and every backend Service exists).
func RouteReady(gw *gwv1.Gateway, route *gwv1.HTTPRoute) bool {
	if gw == nil || route == nil {
		return false
	}
	for _, parent := range route.Status.Parents {
		ref := parent.ParentRef
		if string(ref.Name) != gw.Name || (ref.Namespace != nil && string(*ref.Namespace) != gw.Namespace) {
			continue
		}
		if meta.IsStatusConditionTrue(parent.Conditions, string(gwv1.RouteConditionAccepted)) &&
			meta.IsStatusConditionTrue(parent.Conditions, string(gwv1.RouteConditionResolvedRefs)) {
			return true
		}
	}
	return false
}
