package traffic

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// The hub holds no cluster-wide rights for these unless its admin opts in: the hub chart's
// traffic.namespaces and a member's traffic Roles (rayfleet join --traffic-namespace, the spoke
// chart's hubTraffic.namespaces) grant them per RayService namespace, so there are no RBAC
// markers here.

// Apply reads what the traffic cluster holds for objs' RayService through r (Read) and writes
// objs over it (Write).
func Apply(ctx context.Context, w client.Client, r client.Reader, objs *Objects) error {
	if objs == nil || objs.Route == nil {
		return errors.New("applying traffic: no route")
	}
	l := objs.Route.Labels
	key := RouteKey{Route: client.ObjectKeyFromObject(objs.Route),
		RayService: types.NamespacedName{Namespace: l[labels.OriginNamespace], Name: l[labels.OriginName]}}
	_, live, err := Read(ctx, r, key, l[labels.OriginHub], nil)
	if err != nil {
		return err
	}
	return Write(ctx, w, r, objs, live)
}

// Write server-side applies those of objs that differ from live, as read with the group (as
// the hub's field manager, taking over fields others changed), the backends before the route
// that refers to them: a reference to a backend that does not exist yet is answered with 500s.
// An object in objs and live whose fields the hub sets hold its values is not written. The
// RayService's other backends in live go only once the gateway accepted a route that no longer
// refers to them (make-before-break): those the live route refers to stay, and nothing goes
// while that route is not accepted. An object of the same name that is not the hub's for this
// RayService (a user's Service, another hub's or another RayService's) is not overwritten:
// Write fails naming it; r, uncached, is asked about names live does not hold.
func Write(ctx context.Context, w client.Client, r client.Reader, objs *Objects, live *Live) error {
	if objs == nil || objs.Route == nil || live == nil {
		return errors.New("applying traffic: no route")
	}
	if err := checkRoute(ctx, r, objs.Route, live.Route); err != nil {
		return err
	}
	have := liveBackends(live)
	var errs []error
	for _, obj := range backendObjects(objs) {
		got, ok := have[kindName(obj)]
		if ok && holds(got, obj) {
			continue
		}
		if !ok {
			if err := checkOurs(ctx, w, r, objs.Route, obj); err != nil {
				return err
			}
		}
		errs = append(errs, apply(ctx, w, obj))
	}
	// A route referring to a backend that failed would only be reported unresolved.
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if objs.RouteHeld {
		return nil
	}
	if live.Route == nil || !holdsRoute(live.Route, objs.Route) {
		if err := apply(ctx, w, objs.Route); err != nil {
			return err
		}
	}
	if live.Route == nil || !accepted(live.Route).ok {
		return nil
	}
	wanted := kept(objs, live.Route)
	var stale []client.Object
	for k, obj := range have {
		if !wanted[k] {
			stale = append(stale, obj)
		}
	}
	return deleteAll(ctx, w, stale)
}

// checkRoute fails when the route of want's name is not the hub's for want's RayService: live
// when read, else as r reads it (an informer holds only the hub's routes).
func checkRoute(ctx context.Context, r client.Reader, want, live *gwv1.HTTPRoute) error {
	if live == nil {
		var got gwv1.HTTPRoute
		switch err := r.Get(ctx, client.ObjectKeyFromObject(want), &got); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("reading HTTPRoute %s in namespace %s: %w", want.Name, want.Namespace, err)
		}
		live = &got
	}
	if !sameOrigin(live.Labels, want.Labels) {
		return fmt.Errorf("HTTPRoute %s in namespace %s exists and is not hub %s's for RayService %s/%s (labels %v); not overwriting it",
			live.Name, live.Namespace, want.Labels[labels.OriginHub],
			want.Labels[labels.OriginNamespace], want.Labels[labels.OriginName], live.Labels)
	}
	return nil
}

// liveBackends are live's backends by kindName.
func liveBackends(live *Live) map[string]client.Object {
	out := make(map[string]client.Object, len(live.Services)+len(live.EndpointSlices))
	for i := range live.Services {
		out[kindName(&live.Services[i])] = &live.Services[i]
	}
	for i := range live.EndpointSlices {
		out[kindName(&live.EndpointSlices[i])] = &live.EndpointSlices[i]
	}
	return out
}

// kept are the backends ("Kind/name") Apply keeps: objs', and those the live route refers to
// by a name objs does not use (both kinds: the gateway may still send traffic through them).
// Of a name objs uses, objs alone says which kinds remain.
func kept(objs *Objects, live *gwv1.HTTPRoute) map[string]bool {
	out := map[string]bool{}
	used := map[string]bool{}
	for _, obj := range backendObjects(objs) {
		out[kindName(obj)] = true
		used[obj.GetName()] = true
	}
	for _, rule := range live.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			if !localService(ref.BackendObjectReference, live.Namespace) || used[string(ref.Name)] {
				continue
			}
			out["Service/"+string(ref.Name)] = true
			out["EndpointSlice/"+string(ref.Name)] = true
		}
	}
	return out
}

// localService reports whether ref is a Service in namespace, with Gateway API's defaults.
func localService(ref gwv1.BackendObjectReference, namespace string) bool {
	return (ref.Group == nil || *ref.Group == "") && (ref.Kind == nil || *ref.Kind == "Service") &&
		(ref.Namespace == nil || string(*ref.Namespace) == namespace)
}

// kindName keys one of the backends Desired builds, "Service/name" or "EndpointSlice/name".
func kindName(obj client.Object) string {
	if _, ok := obj.(*discoveryv1.EndpointSlice); ok {
		return "EndpointSlice/" + obj.GetName()
	}
	return "Service/" + obj.GetName()
}

// Delete removes the route of key and every backend the hub made for it; what is already gone
// is no error, and a route of that name that is not the hub's is left alone.
func Delete(ctx context.Context, w client.Client, r client.Reader, key RouteKey, hubName string) error {
	origin := map[string]string{
		labels.OriginNamespace: key.RayService.Namespace,
		labels.OriginName:      key.RayService.Name,
		labels.OriginHub:       hubName,
	}
	var route gwv1.HTTPRoute
	err := r.Get(ctx, key.Route, &route)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
	case err != nil:
		return fmt.Errorf("reading HTTPRoute %s in namespace %s: %w", key.Route.Name, key.Route.Namespace, err)
	case sameOrigin(route.Labels, origin):
		uid := route.UID
		if err := w.Delete(ctx, &route, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting HTTPRoute %s in namespace %s: %w", key.Route.Name, key.Route.Namespace, err)
		}
	}
	return prune(ctx, w, r, key.Route.Namespace, originSelector(origin))
}

// apply is one server-side apply of obj as the hub. Typed objects become unstructured apply
// configurations: one path for every kind, without generated apply configurations.
func apply(ctx context.Context, w client.Client, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, w.Scheme())
	if err != nil {
		return fmt.Errorf("applying %T %s in namespace %s: %w", obj, obj.GetName(), obj.GetNamespace(), err)
	}
	kind := gvk.Kind
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("encoding %s %s in namespace %s: %w", kind, obj.GetName(), obj.GetNamespace(), err)
	}
	// An applied status is ignored, and a null creationTimestamp would be a field the hub
	// claims; neither belongs in the configuration.
	delete(raw, "status")
	unstructured.RemoveNestedField(raw, "metadata", "creationTimestamp")
	u := &unstructured.Unstructured{Object: raw}
	u.SetGroupVersionKind(gvk)
	if err := w.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(labels.HubFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s in namespace %s: %w", kind, obj.GetName(), obj.GetNamespace(), err)
	}
	return nil
}

// checkOurs fails when obj exists in the cluster without route's origin labels.
func checkOurs(ctx context.Context, w client.Client, r client.Reader, route *gwv1.HTTPRoute, obj client.Object) error {
	kind := kindOf(w, obj)
	live, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("checking %s %s in namespace %s: not an object", kind, obj.GetName(), obj.GetNamespace())
	}
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), live)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading %s %s in namespace %s: %w", kind, obj.GetName(), obj.GetNamespace(), err)
	case !sameOrigin(live.GetLabels(), route.Labels):
		return fmt.Errorf("%s %s in namespace %s exists and is not hub %s's for RayService %s/%s (labels %v); not overwriting it",
			kind, obj.GetName(), obj.GetNamespace(), route.Labels[labels.OriginHub],
			route.Labels[labels.OriginNamespace], route.Labels[labels.OriginName], live.GetLabels())
	}
	return nil
}

// prune deletes the backends in namespace that carry origin, all of them.
func prune(ctx context.Context, w client.Client, r client.Reader, namespace string, origin client.MatchingLabels) error {
	opts := []client.ListOption{client.InNamespace(namespace), origin, client.HasLabels{labels.TrafficCluster}}
	var services corev1.ServiceList
	if err := r.List(ctx, &services, opts...); err != nil {
		return fmt.Errorf("listing backend Services in namespace %s: %w", namespace, err)
	}
	var endpointSlices discoveryv1.EndpointSliceList
	if err := r.List(ctx, &endpointSlices, opts...); err != nil {
		return fmt.Errorf("listing backend EndpointSlices in namespace %s: %w", namespace, err)
	}
	var stale []client.Object
	for i := range services.Items {
		stale = append(stale, &services.Items[i])
	}
	for i := range endpointSlices.Items {
		stale = append(stale, &endpointSlices.Items[i])
	}
	return deleteAll(ctx, w, stale)
}

// deleteAll deletes objs, each preconditioned on the UID read, so that an object recreated
// meanwhile stays; what is gone already is no error.
func deleteAll(ctx context.Context, w client.Client, objs []client.Object) error {
	var errs []error
	for _, obj := range objs {
		uid := obj.GetUID()
		err := w.Delete(ctx, obj, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s in namespace %s: %w", kindOf(w, obj), obj.GetName(), obj.GetNamespace(), err))
		}
	}
	return errors.Join(errs...)
}

// backendObjects are objs' Services and EndpointSlices.
func backendObjects(objs *Objects) []client.Object {
	out := make([]client.Object, 0, len(objs.Services)+len(objs.EndpointSlices))
	for _, s := range objs.Services {
		out = append(out, s)
	}
	for _, e := range objs.EndpointSlices {
		out = append(out, e)
	}
	return out
}

// originSelector selects what the hub made for the RayService the origin labels name.
func originSelector(origin map[string]string) client.MatchingLabels {
	return client.MatchingLabels{
		labels.OriginNamespace: origin[labels.OriginNamespace],
		labels.OriginName:      origin[labels.OriginName],
		labels.OriginHub:       origin[labels.OriginHub],
	}
}

// sameOrigin reports whether got carries want's origin labels.
func sameOrigin(got, want map[string]string) bool {
	for _, k := range []string{labels.OriginNamespace, labels.OriginName, labels.OriginHub} {
		if got[k] == "" || got[k] != want[k] {
			return false
		}
	}
	return true
}

// kindOf names obj's kind for messages and keys.
func kindOf(c client.Client, obj client.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}
