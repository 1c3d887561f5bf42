package traffic

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Retirable reports whether the route an earlier hub wrote in the Gateway's namespace
// (LegacyKey) may go: the gateway accepted the route in the RayService's namespace that
// replaces it, so requests keep somewhere to go (make-before-break).
func Retirable(current State) bool {
	return current.Exists && current.Accepted
}

// ObserveLegacy reads the route an earlier hub wrote for legacy.RayService in the Gateway's
// namespace through r (uncached, or the Informers' reader of that namespace), as Observe does. A route of that name that is not this hub's for the RayService,
// or a namespace the hub may no longer read, gives a State that does not exist.
func ObserveLegacy(ctx context.Context, r client.Reader, legacy RouteKey, hubName string, members []string) (State, error) {
	var route gwv1.HTTPRoute
	err := r.Get(ctx, legacy.Route, &route)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err):
		return State{Message: "the route does not exist"}, nil
	case err != nil:
		return State{}, fmt.Errorf("reading the earlier HTTPRoute %s in namespace %s: %w", legacy.Route.Name, legacy.Route.Namespace, err)
	case !ownedLegacy(&route, legacy, hubName):
		return State{Message: "the route does not exist"}, nil
	}
	return stateOf(legacy, &route, members), nil
}

// ownedLegacy reports whether route is this hub's route for legacy.RayService.
func ownedLegacy(route *gwv1.HTTPRoute, legacy RouteKey, hubName string) bool {
	return sameOrigin(route.Labels, map[string]string{
		labels.OriginNamespace: legacy.RayService.Namespace, labels.OriginName: legacy.RayService.Name, labels.OriginHub: hubName,
	})
}

// RetireLegacy deletes the route of legacy and its backends once Retirable(current), and
// reports whether a route of this hub's for the RayService remains there. A route of that name
// that is not this hub's for the RayService is left alone and does not count, and so is a
// Gateway namespace where the hub may no longer read routes: its admin withdrew the rights the
// earlier routes needed. The route is read through cached (the Informers' reader of the
// Gateway's namespace, or r), so that one that stays costs no call at a resync; deleting reads
// r.
func RetireLegacy(ctx context.Context, w client.Client, r, cached client.Reader, legacy RouteKey, hubName string, current State) (remains bool, err error) {
	var route gwv1.HTTPRoute
	err = cached.Get(ctx, legacy.Route, &route)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the earlier HTTPRoute %s in namespace %s: %w", legacy.Route.Name, legacy.Route.Namespace, err)
	case !ownedLegacy(&route, legacy, hubName):
		return false, nil
	case !Retirable(current):
		return true, nil
	}
	if err := Delete(ctx, w, r, legacy, hubName); err != nil {
		return true, err
	}
	return false, nil
}
