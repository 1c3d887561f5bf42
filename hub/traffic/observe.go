package traffic

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// State is the route as the traffic cluster has it.
type State struct {
	// Exists is whether the route exists.
	Exists bool
	// Generation is the route's metadata.generation.
	Generation int64
	// Accepted is whether the gateway accepted the route's current generation: for the
	// route's parent, a status entry whose Accepted is True with that observedGeneration, and
	// no ResolvedRefs False for it.
	Accepted bool
	// Refused is whether the gateway refused the route's current generation (Accepted or
	// ResolvedRefs False), rather than not having reported on it yet.
	Refused bool
	// Reason is the gateway's reason when it refused the route (NotAllowedByListeners,
	// NoMatchingListenerHostname, BackendNotFound, ...).
	Reason string
	// Message says why the route is not accepted, in the gateway's words when it gave any.
	Message string
	// Weights are the weights the route's spec gives each member cluster; a member without a
	// backendRef is absent.
	Weights map[string]int32
	// Matches is what the route's spec matches: its parent Gateway's name, hostnames and path
	// prefix.
	Matches Matches
}

// Matches is what a route the hub wrote matches.
type Matches struct {
	// GatewayNamespace and Gateway name the route's first parent; its namespace defaults to
	// the route's.
	GatewayNamespace, Gateway string
	// Hostnames are the route's hostnames.
	Hostnames []string
	// PathPrefix is the first rule's first path match.
	PathPrefix string
}

// matchesOf reads route's Matches.
func matchesOf(route *gwv1.HTTPRoute) Matches {
	var m Matches
	if len(route.Spec.ParentRefs) > 0 {
		p := route.Spec.ParentRefs[0]
		m.GatewayNamespace, m.Gateway = route.Namespace, string(p.Name)
		if p.Namespace != nil {
			m.GatewayNamespace = string(*p.Namespace)
		}
	}
	for _, h := range route.Spec.Hostnames {
		m.Hostnames = append(m.Hostnames, string(h))
	}
	if len(route.Spec.Rules) > 0 && len(route.Spec.Rules[0].Matches) > 0 {
		if p := route.Spec.Rules[0].Matches[0].Path; p != nil && p.Value != nil {
			m.PathPrefix = *p.Value
		}
	}
	return m
}

// Observe reads the route of key and whether the gateway accepted it, through r (uncached, or
// the Informers' reader). Weights are mapped back to the members among members through the backends' names.
func Observe(ctx context.Context, r client.Reader, key RouteKey, members []string) (State, error) {
	var route gwv1.HTTPRoute
	if err := r.Get(ctx, key.Route, &route); err != nil {
		if apierrors.IsNotFound(err) {
			return State{Message: "the route does not exist"}, nil
		}
		return State{}, fmt.Errorf("reading HTTPRoute %s in namespace %s: %w", key.Route.Name, key.Route.Namespace, err)
	}
	return stateOf(key, &route, members), nil
}

// Live is what the traffic cluster holds of the hub's for one RayService, as read with the
// group: Apply writes only what differs from it.
type Live struct {
	// Route is the route, nil when there is none of this hub's for the RayService.
	Route *gwv1.HTTPRoute
	// Services and EndpointSlices are the backends the hub made for the RayService in the
	// route's namespace.
	Services       []corev1.Service
	EndpointSlices []discoveryv1.EndpointSlice
}

// Read is Observe, and the route and backends as they are, for Apply. r may be the Informers'
// reader: it reads nothing else.
func Read(ctx context.Context, r client.Reader, key RouteKey, hubName string, members []string) (State, *Live, error) {
	var route gwv1.HTTPRoute
	st, live := State{Message: "the route does not exist"}, &Live{}
	switch err := r.Get(ctx, key.Route, &route); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return State{}, nil, fmt.Errorf("reading HTTPRoute %s in namespace %s: %w", key.Route.Name, key.Route.Namespace, err)
	default:
		st, live.Route = stateOf(key, &route, members), &route
	}
	origin := originSelector(map[string]string{
		labels.OriginNamespace: key.RayService.Namespace, labels.OriginName: key.RayService.Name, labels.OriginHub: hubName,
	})
	opts := []client.ListOption{client.InNamespace(key.Route.Namespace), origin, client.HasLabels{labels.TrafficCluster}}
	var services corev1.ServiceList
	if err := r.List(ctx, &services, opts...); err != nil {
		return State{}, nil, fmt.Errorf("listing backend Services in namespace %s: %w", key.Route.Namespace, err)
	}
	var slices discoveryv1.EndpointSliceList
	if err := r.List(ctx, &slices, opts...); err != nil {
		return State{}, nil, fmt.Errorf("listing backend EndpointSlices in namespace %s: %w", key.Route.Namespace, err)
	}
	live.Services, live.EndpointSlices = services.Items, slices.Items
	return st, live, nil
}

// stateOf is what a route that exists says: its weights per member, matches and the
// gateway's verdict.
func stateOf(key RouteKey, route *gwv1.HTTPRoute, members []string) State {
	st := State{Exists: true, Generation: route.Generation, Weights: weights(key, route, members), Matches: matchesOf(route)}
	v := accepted(route)
	st.Accepted, st.Refused, st.Reason, st.Message = v.ok, v.reason != "", v.reason, v.message
	return st
}

// weights are route's weights per member, found by the names Desired gives each member's
// backend of either kind.
func weights(key RouteKey, route *gwv1.HTTPRoute, members []string) map[string]int32 {
	byRef := map[string]string{}
	for _, m := range members {
		byRef["Service/"+BackendName(key, m)] = m
		byRef[serviceImportKind+"/"+ImportName(key, m)] = m
		byRef[serviceImportKind+"/"+LegacyImportName(key, m)] = m
	}
	out := map[string]int32{}
	for _, rule := range route.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			kind := "Service"
			if ref.Kind != nil {
				kind = string(*ref.Kind)
			}
			m, ok := byRef[kind+"/"+string(ref.Name)]
			if !ok {
				continue
			}
			// Gateway API's default weight, which the CRD fills in.
			w := int32(1)
			if ref.Weight != nil {
				w = *ref.Weight
			}
			out[m] += w
		}
	}
	return out
}

// ObserveImports lists the names of the ServiceImports in namespace through r, metadata only:
// uncached, or the Informers' ImportsReader. A traffic cluster without the kind has none; an error (for instance a
// traffic Role from before the hub read ServiceImports) leaves the caller with nil, which
// routes to the legacy names every spoke exports.
func ObserveImports(ctx context.Context, r client.Reader, namespace string) (Imports, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: serviceImportGroup, Version: serviceImportVersion, Kind: serviceImportKind + "List"})
	if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return Imports{}, nil
		}
		return nil, fmt.Errorf("listing ServiceImports in namespace %s: %w", namespace, err)
	}
	out := make(Imports, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = true
	}
	return out, nil
}

// refusedReason stands for the reason of a gateway that refused a route without giving one.
const refusedReason = "Refused"

// verdict is the gateway's word on a route: ok when accepted; else reason, when it refused
// the route, and message say why.
type verdict struct {
	ok              bool
	reason, message string
}

// accepted reads the gateway's status for the route's parent: accepted when an entry has
// Accepted True for the current generation and no current entry refuses the route or its
// references. Entries of other parents (a route edited by hand) do not count.
func accepted(route *gwv1.HTTPRoute) verdict {
	if len(route.Spec.ParentRefs) == 0 {
		return verdict{message: "the route has no parent"}
	}
	parent := route.Spec.ParentRefs[0]
	gen := route.Generation
	ok, message := false, ""
	for _, p := range route.Status.Parents {
		if !sameParent(p.ParentRef, parent, route.Namespace) {
			continue
		}
		acc := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionAccepted))
		res := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionResolvedRefs))
		switch {
		case acc == nil || acc.ObservedGeneration != gen:
			if message == "" {
				message = fmt.Sprintf("gateway controller %s has not reported on generation %d of the route yet", p.ControllerName, gen)
			}
		case acc.Status != metav1.ConditionTrue:
			return verdict{reason: cmp.Or(acc.Reason, refusedReason), message: fmt.Sprintf("gateway controller %s did not accept the route: %s: %s",
				p.ControllerName, acc.Reason, acc.Message)}
		case res != nil && res.Status == metav1.ConditionFalse && res.ObservedGeneration == gen:
			return verdict{reason: cmp.Or(res.Reason, refusedReason), message: fmt.Sprintf("gateway controller %s cannot resolve the route's backends: %s: %s",
				p.ControllerName, res.Reason, res.Message)}
		default:
			ok = true
		}
	}
	if ok {
		return verdict{ok: true}
	}
	if message == "" {
		message = "no gateway has reported on the route yet"
	}
	return verdict{message: message}
}

// sameParent reports whether a status entry's parentRef is the route's parent, with Gateway
// API's defaults (group gateway.networking.k8s.io, kind Gateway, the route's namespace).
func sameParent(got, want gwv1.ParentReference, routeNamespace string) bool {
	group := func(p gwv1.ParentReference) string {
		if p.Group == nil {
			return gwv1.GroupName
		}
		return string(*p.Group)
	}
	kind := func(p gwv1.ParentReference) string {
		if p.Kind == nil {
			return "Gateway"
		}
		return string(*p.Kind)
	}
	namespace := func(p gwv1.ParentReference) string {
		if p.Namespace == nil {
			return routeNamespace
		}
		return string(*p.Namespace)
	}
	section := func(p gwv1.ParentReference) string {
		if p.SectionName == nil {
			return ""
		}
		return string(*p.SectionName)
	}
	return group(got) == group(want) && kind(got) == kind(want) && namespace(got) == namespace(want) &&
		got.Name == want.Name && section(got) == section(want)
}
