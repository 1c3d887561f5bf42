// Package traffic builds and writes the hub's HTTPRoute for one RayService in the traffic
// cluster, with one weighted backend per member cluster that serves it, and reads back whether
// the gateway accepted it. Deciding and building are pure (Plan, Desired): the split comes from
// the caller (the rollout's), and Plan holds back a cluster whose backend objects are not there
// yet. Read, Write, Apply and Delete are thin calls on the clients the caller gives, so that the
// traffic cluster may be the hub's own or a member; Informers keep what Read, ObserveImports
// and ObserveLegacy read, so that a resync of a settled route calls no API server.
// Of the repository it imports only shared/; it never imports other hub packages or spoke/.
package traffic

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// ServePort is the port of the serve Service a member exports for ServiceImport backends:
// KubeRay's default Serve port, which the spoke's export keeps.
const ServePort int32 = 8000

// portName names the port of every backend Service and EndpointSlice the hub makes; the
// EndpointSlice's port is matched to the Service's by this name.
const portName = "serve"

// Group and kind of the Multi-Cluster Services API's ServiceImport.
const (
	serviceImportGroup = "multicluster.x-k8s.io"
	serviceImportKind  = "ServiceImport"
	// serviceImportVersion is the version the hub lists ServiceImports in.
	serviceImportVersion = "v1alpha1"
)

// Backend is one member cluster's share of the route.
type Backend struct {
	// Cluster is the member's name.
	Cluster string
	// Host and Port are where the member serves the RayService, as its spoke reported them
	// ("host:port", see ParseAddress): Host is an IP or a DNS name.
	Host string
	Port int32
	// Weight is the member's share; 0 leaves it out of the route.
	Weight int32
	// Pending is set when the member's backend objects are to be written but the route gives
	// it no weight yet (Unresolved).
	Pending bool
}

// Input is everything Desired builds from.
type Input struct {
	// RayService is the hub RayService.
	RayService types.NamespacedName
	// HubName is the hub's name, written in the origin labels.
	HubName string
	// Spec is the policy's traffic.
	Spec fleetv1alpha1.TrafficSpec
	// Backends are the members, in any order, each at most once.
	Backends []Backend
	// Imports are the ServiceImports in the RayService's namespace of the traffic cluster
	// (ObserveImports), for ServiceImport backends: which name each member's is found under.
	Imports Imports
}

// Objects are what the hub keeps in the traffic cluster for one RayService, all in the
// RayService's namespace.
type Objects struct {
	// Route is the HTTPRoute.
	Route *gwv1.HTTPRoute
	// Services are the per-member backends of BackendKind Service; EndpointSlices hold the
	// addresses of those whose member reported an IP.
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	// RouteHeld leaves Route unwritten this time (Plan): the traffic cluster holds no route of
	// it yet and it would route nothing while its backends are being made.
	RouteHeld bool
}

// ParseAddress splits a serve address a spoke reported, "host:port" ("[v6]:port" for IPv6),
// into a host that is an IP or a DNS name and a port.
func ParseAddress(addr string) (host string, port int32, err error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("serve address %q: %w", addr, err)
	}
	p, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || p == 0 {
		return "", 0, fmt.Errorf("serve address %q: port %q is not a port number", addr, portText)
	}
	if err := checkHost(host); err != nil {
		return "", 0, fmt.Errorf("serve address %q: %w", addr, err)
	}
	return host, int32(p), nil
}

// checkHost accepts an IP without a zone or a DNS name (what an ExternalName Service takes).
func checkHost(host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return fmt.Errorf("host %q has an IPv6 zone, which means nothing outside the member", host)
		}
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return fmt.Errorf("host %q is neither an IP nor a DNS name: %v", host, errs)
	}
	return nil
}

// Desired builds the route and its backends. Only backends with a weight and, for Service
// backends, an address get a backendRef: a zero-weight reference is still resolved by some
// gateways, and one that cannot be resolved would mark the whole route's references broken.
// Without any, the rule keeps no backendRefs (the HTTPRoute CRD allows that) and the gateway
// answers 500, as Gateway API specifies for a rule whose backends are all missing.
func Desired(in Input) (*Objects, error) {
	if in.HubName == "" || in.Spec.ParentRef.Namespace == "" || in.Spec.ParentRef.Name == "" {
		return nil, fmt.Errorf("route of RayService %s: a hub name and the Gateway's namespace and name are required", in.RayService)
	}
	key := Key(in.RayService)
	routed, err := routedBackends(in)
	if err != nil {
		return nil, fmt.Errorf("route of RayService %s: %w", in.RayService, err)
	}
	objs := &Objects{Route: route(in, key)}
	rule := &objs.Route.Spec.Rules[0]
	for _, b := range routed {
		if b.Pending && in.Spec.BackendKind == fleetv1alpha1.BackendServiceImport {
			continue
		}
		if in.Spec.BackendKind == fleetv1alpha1.BackendServiceImport {
			rule.BackendRefs = append(rule.BackendRefs, importRef(importFor(key, b.Cluster, in.Imports), b))
			continue
		}
		svc, slice, err := backendService(in, key, b)
		if err != nil {
			return nil, fmt.Errorf("route of RayService %s: %w", in.RayService, err)
		}
		objs.Services = append(objs.Services, svc)
		if slice != nil {
			objs.EndpointSlices = append(objs.EndpointSlices, slice)
		}
		if b.Pending {
			continue
		}
		rule.BackendRefs = append(rule.BackendRefs, gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
			BackendObjectReference: gwv1.BackendObjectReference{
				Group: ptr.To(gwv1.Group(corev1.GroupName)),
				Kind:  ptr.To(gwv1.Kind("Service")),
				Name:  gwv1.ObjectName(svc.Name),
				Port:  ptr.To(b.Port),
			},
			Weight: ptr.To(b.Weight),
		}})
	}
	return objs, nil
}

// Unresolved are the members among backends (Service backends with a weight and an address)
// whose Service, or EndpointSlice for an IP, live does not hold: Gateway API answers 500 for
// the share of a reference that does not resolve, so the route gives such a member weight only
// once a read shows its objects, which Write makes before the route meanwhile. Nil live (not
// read) and ServiceImport backends, which the member's export makes, hold nothing back.
func Unresolved(in Input, live *Live) map[string]bool {
	out := map[string]bool{}
	if live == nil || in.Spec.BackendKind == fleetv1alpha1.BackendServiceImport {
		return out
	}
	has := liveBackends(live)
	key := Key(in.RayService)
	for _, b := range in.Backends {
		if b.Weight <= 0 || b.Host == "" || b.Port <= 0 {
			continue
		}
		name := BackendName(key, b.Cluster)
		_, isIP := netip.ParseAddr(b.Host)
		if has["Service/"+name] == nil || (isIP == nil && has["EndpointSlice/"+name] == nil) {
			out[b.Cluster] = true
		}
	}
	return out
}

// routedBackends are the backends that get a backendRef, by member name; more than a rule
// takes, or a member twice, is an error.
func routedBackends(in Input) ([]Backend, error) {
	seen := map[string]bool{}
	var out []Backend
	for _, b := range in.Backends {
		if b.Cluster == "" {
			return nil, fmt.Errorf("a backend has no cluster name")
		}
		if seen[b.Cluster] {
			return nil, fmt.Errorf("cluster %s is given twice", b.Cluster)
		}
		seen[b.Cluster] = true
		hasAddress := b.Host != "" && b.Port > 0
		if b.Weight <= 0 || (in.Spec.BackendKind != fleetv1alpha1.BackendServiceImport && !hasAddress) {
			continue
		}
		out = append(out, b)
	}
	if len(out) > fleetv1alpha1.MaxRouteBackends {
		return nil, fmt.Errorf("%d clusters take traffic but an HTTPRoute rule has at most %d backends",
			len(out), fleetv1alpha1.MaxRouteBackends)
	}
	slices.SortFunc(out, func(a, b Backend) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return out, nil
}

// route is the HTTPRoute with its one rule and no backends yet.
func route(in Input, key RouteKey) *gwv1.HTTPRoute {
	parent := gwv1.ParentReference{
		Group:     ptr.To(gwv1.Group(gwv1.GroupName)),
		Kind:      ptr.To(gwv1.Kind("Gateway")),
		Namespace: ptr.To(gwv1.Namespace(in.Spec.ParentRef.Namespace)),
		Name:      gwv1.ObjectName(in.Spec.ParentRef.Name),
	}
	if in.Spec.ParentRef.SectionName != "" {
		parent.SectionName = ptr.To(gwv1.SectionName(in.Spec.ParentRef.SectionName))
	}
	path := in.Spec.PathPrefix
	if path == "" {
		path = "/"
	}
	r := &gwv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Route.Namespace, Name: key.Route.Name, Labels: originLabels(in, "")},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parent}},
			Rules: []gwv1.HTTPRouteRule{{
				Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{
					Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To(path),
				}}},
			}},
		},
	}
	for _, h := range in.Spec.Hostnames {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

// importRef is the reference to b's ServiceImport, name. An import lives in the namespace of
// the Service the member exports, the RayService's, which is the route's: no ReferenceGrant
// needed.
func importRef(name string, b Backend) gwv1.HTTPBackendRef {
	return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
		BackendObjectReference: gwv1.BackendObjectReference{
			Group: ptr.To(gwv1.Group(serviceImportGroup)),
			Kind:  ptr.To(gwv1.Kind(serviceImportKind)),
			Name:  gwv1.ObjectName(name),
			Port:  ptr.To(ServePort),
		},
		Weight: ptr.To(b.Weight),
	}}
}

// backendService is the Service standing for b: selectorless with an EndpointSlice holding
// b's IP, or of type ExternalName for a DNS name (no EndpointSlice then).
func backendService(in Input, key RouteKey, b Backend) (*corev1.Service, *discoveryv1.EndpointSlice, error) {
	if err := checkHost(b.Host); err != nil {
		return nil, nil, fmt.Errorf("cluster %s: %w", b.Cluster, err)
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Route.Namespace, Name: BackendName(key, b.Cluster), Labels: originLabels(in, b.Cluster)},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: portName, Protocol: corev1.ProtocolTCP, Port: b.Port, TargetPort: intstr.FromInt32(b.Port),
		}}},
	}
	ip, err := netip.ParseAddr(b.Host)
	if err != nil {
		// Absolute (a trailing dot), so that the gateway's resolver never completes it with the
		// traffic cluster's search domains: "kubernetes.default" would reach its API server.
		svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, strings.TrimSuffix(b.Host, ".")+"."
		return svc, nil, nil
	}
	ip = ip.Unmap()
	// The API server refuses these in an EndpointSlice; saying so here names the member.
	if ip.IsUnspecified() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() {
		return nil, nil, fmt.Errorf("cluster %s: serve address %s is unspecified, loopback or link-local, which an EndpointSlice may not hold",
			b.Cluster, ip)
	}
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	return svc, endpointSlice(in, svc, ip, b), nil
}

// endpointSlice is the one endpoint of a selectorless backend Service. The managed-by label
// keeps Kubernetes' EndpointSlice controllers from taking it over or deleting it.
func endpointSlice(in Input, svc *corev1.Service, ip netip.Addr, b Backend) *discoveryv1.EndpointSlice {
	family := discoveryv1.AddressTypeIPv4
	if ip.Is6() {
		family = discoveryv1.AddressTypeIPv6
	}
	l := originLabels(in, b.Cluster)
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = labels.HubFieldManager
	return &discoveryv1.EndpointSlice{
		TypeMeta:    metav1.TypeMeta{APIVersion: discoveryv1.SchemeGroupVersion.String(), Kind: "EndpointSlice"},
		ObjectMeta:  metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name, Labels: l},
		AddressType: family,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{ip.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(portName), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(b.Port)}},
	}
}

// originLabels mark an object as this hub's for the RayService; member, when set, names the
// member cluster a backend stands for.
func originLabels(in Input, member string) map[string]string {
	l := map[string]string{
		labels.OriginNamespace: in.RayService.Namespace,
		labels.OriginName:      in.RayService.Name,
		labels.OriginHub:       in.HubName,
	}
	if member != "" {
		l[labels.TrafficCluster] = member
	}
	return l
}
