package builder

import (
	"errors"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// The Gateway's one listener, as KubeRay makes it: plain HTTP on port 80.
const (
	gatewayListenerName = "http"
	gatewayListenerPort = 80
)

// Limits the Gateway API CRDs put on an HTTPRoute rule's backends.
const (
	maxBackendWeight = 1_000_000
	maxBackends      = 16
)

// GatewayName is the name of the Gateway an incremental upgrade of rs routes through, "<rs>-gateway".
func GatewayName(rs *rayv1.RayService) string { return rs.Name + "-gateway" }

// HTTPRouteName is the name of the HTTPRoute that splits rs's traffic, "<rs>-httproute".
func HTTPRouteName(rs *rayv1.RayService) string { return rs.Name + "-httproute" }

// Gateway builds the Gateway an incremental upgrade of rs sends traffic through: one HTTP
// listener on port 80, of the GatewayClass named in clusterUpgradeOptions, controlled by rs. The
// fields the Gateway API CRD would default are spelled out, so the object built equals the one
// the API server stores and a comparison of the two shows only real changes.
func Gateway(rs *rayv1.RayService) (*gwv1.Gateway, error) {
	opts := rayspec.UpgradeOptions(&rs.Spec)
	if opts == nil || opts.GatewayClassName == "" {
		return nil, fmt.Errorf("build Gateway of RayService %s/%s: spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName is not set",
			rs.Namespace, rs.Name)
	}
	return &gwv1.Gateway{
		ObjectMeta: gatewayObjectMeta(rs, GatewayName(rs)),
		Spec: gwv1.GatewaySpec{
			GatewayClassName: gwv1.ObjectName(opts.GatewayClassName),
			Listeners: []gwv1.Listener{{
				Name:     gatewayListenerName,
				Protocol: gwv1.HTTPProtocolType,
				Port:     gatewayListenerPort,
				AllowedRoutes: &gwv1.AllowedRoutes{
					Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromSame)},
				},
			}},
		},
	}, nil
}

// Backend is one Service an HTTPRoute sends a share of the traffic to.
type Backend struct {
	// Service is the name of a Service in the RayService's namespace.
	Service string
	// Port is the Service port.
	Port int32
	// Weight is the backend's share of the traffic, relative to the other backends' weights.
	Weight int32
}

// HTTPRoute builds the HTTPRoute that splits rs's traffic between backends (normally the
// active and the pending cluster's serve Services) by weight: every path, attached to rs's
// Gateway, controlled by rs. Defaulted fields are spelled out, as for Gateway. It fails on
// backends the Gateway API would reject: none, more than 16, an empty name, a port outside
// 1-65535 or a weight outside 0-1,000,000.
func HTTPRoute(rs *rayv1.RayService, backends []Backend) (*gwv1.HTTPRoute, error) {
	if err := checkBackends(backends); err != nil {
		return nil, fmt.Errorf("build HTTPRoute of RayService %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	ns := gwv1.Namespace(rs.Namespace)
	refs := make([]gwv1.HTTPBackendRef, len(backends))
	for i, b := range backends {
		refs[i] = gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
			BackendObjectReference: gwv1.BackendObjectReference{
				Group:     ptr.To(gwv1.Group("")),
				Kind:      ptr.To(gwv1.Kind("Service")),
				Name:      gwv1.ObjectName(b.Service),
				Namespace: ptr.To(ns),
				Port:      ptr.To(b.Port),
			},
			Weight: ptr.To(b.Weight),
		}}
	}
	return &gwv1.HTTPRoute{
		ObjectMeta: gatewayObjectMeta(rs, HTTPRouteName(rs)),
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{
				Group:     ptr.To(gwv1.Group(gwv1.GroupName)),
				Kind:      ptr.To(gwv1.Kind("Gateway")),
				Name:      gwv1.ObjectName(GatewayName(rs)),
				Namespace: ptr.To(ns),
			}}},
			Rules: []gwv1.HTTPRouteRule{{
				Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{
					Type:  ptr.To(gwv1.PathMatchPathPrefix),
					Value: ptr.To("/"),
				}}},
				BackendRefs: refs,
			}},
		},
	}, nil
}

// checkBackends rejects backends the HTTPRoute CRD would refuse, with a message naming the
// backend, rather than an API error after the fact.
func checkBackends(backends []Backend) error {
	if len(backends) == 0 {
		return errors.New("no backends")
	}
	if len(backends) > maxBackends {
		return fmt.Errorf("%d backends, at most %d allowed", len(backends), maxBackends)
	}
	for _, b := range backends {
		switch {
		case b.Service == "":
			return errors.New("a backend without a Service name")
		case b.Port < 1 || b.Port > 65535:
			return fmt.Errorf("backend Service %s: port %d is not in 1-65535", b.Service, b.Port)
		case b.Weight < 0 || b.Weight > maxBackendWeight:
			return fmt.Errorf("backend Service %s: weight %d is not in 0-%d", b.Service, b.Weight, maxBackendWeight)
		}
	}
	return nil
}

// gatewayObjectMeta names an object made for rs's incremental upgrades, labels it with its
// origin (so the spoke can select what it made) and makes rs its controller.
func gatewayObjectMeta(rs *rayv1.RayService, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: rs.Namespace,
		Labels: map[string]string{
			labels.OriginatedFromCRName: rs.Name,
			labels.OriginatedFromCRD:    string(creatorRayService),
		},
		OwnerReferences: controllerRefs(rs, rayServiceKind),
	}
}
