package builder

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// gatewayMeta is the metadata of an object built for newService's incremental upgrades.
func gatewayMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: "ns",
		Labels:          map[string]string{labels.OriginatedFromCRName: "svc", labels.OriginatedFromCRD: "RayService"},
		OwnerReferences: ownedBySvc,
	}
}

func TestGatewayAndHTTPRouteNames(t *testing.T) {
	rs := newService()
	if got := GatewayName(rs); got != "svc-gateway" {
		t.Errorf("GatewayName = %q", got)
	}
	if got := HTTPRouteName(rs); got != "svc-httproute" {
		t.Errorf("HTTPRouteName = %q", got)
	}
}

func TestGateway(t *testing.T) {
	tests := []struct {
		name    string
		rs      *rayv1.RayService
		want    *gwv1.Gateway
		wantErr string
	}{
		{
			name: "one HTTP listener on port 80 of the configured class",
			rs:   incrementalService("svc-old"),
			want: &gwv1.Gateway{
				ObjectMeta: gatewayMeta("svc-gateway"),
				Spec: gwv1.GatewaySpec{
					GatewayClassName: "istio",
					Listeners: []gwv1.Listener{{
						Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80,
						AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromSame)}},
					}},
				},
			},
		},
		{
			name:    "no upgrade options",
			rs:      newService(),
			wantErr: "build Gateway of RayService ns/svc: spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName is not set",
		},
		{
			name: "no class",
			rs: func() *rayv1.RayService {
				rs := incrementalService("")
				rs.Spec.UpgradeStrategy.ClusterUpgradeOptions.GatewayClassName = ""
				return rs
			}(),
			wantErr: "build Gateway of RayService ns/svc: spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName is not set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Gateway(tt.rs)
			checkError(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Gateway (-want +got):\n%s", diff)
			}
		})
	}
}

// backendRef is the reference HTTPRoute makes for a backend in "ns".
func backendRef(svc string, port, weight int32) gwv1.HTTPBackendRef {
	return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
		BackendObjectReference: gwv1.BackendObjectReference{
			Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")),
			Name: gwv1.ObjectName(svc), Namespace: ptr.To(gwv1.Namespace("ns")), Port: ptr.To(port),
		},
		Weight: ptr.To(weight),
	}}
}

func TestHTTPRoute(t *testing.T) {
	route := func(refs ...gwv1.HTTPBackendRef) *gwv1.HTTPRoute {
		return &gwv1.HTTPRoute{
			ObjectMeta: gatewayMeta("svc-httproute"),
			Spec: gwv1.HTTPRouteSpec{
				CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{
					Group: ptr.To(gwv1.Group("gateway.networking.k8s.io")), Kind: ptr.To(gwv1.Kind("Gateway")),
					Name: "svc-gateway", Namespace: ptr.To(gwv1.Namespace("ns")),
				}}},
				Rules: []gwv1.HTTPRouteRule{{
					Matches:     []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/")}}},
					BackendRefs: refs,
				}},
			},
		}
	}
	many := make([]Backend, 17)
	for i := range many {
		many[i] = Backend{Service: "s", Port: 8000, Weight: 1}
	}
	const prefix = "build HTTPRoute of RayService ns/svc: "
	tests := []struct {
		name     string
		backends []Backend
		want     *gwv1.HTTPRoute
		wantErr  string
	}{
		{
			name:     "active only",
			backends: []Backend{{Service: "svc-old-serve-svc", Port: 8000, Weight: 100}},
			want:     route(backendRef("svc-old-serve-svc", 8000, 100)),
		},
		{
			name: "active and pending, in the order given",
			backends: []Backend{
				{Service: "svc-old-serve-svc", Port: 8000, Weight: 70},
				{Service: "svc-new-serve-svc", Port: 8001, Weight: 30},
			},
			want: route(backendRef("svc-old-serve-svc", 8000, 70), backendRef("svc-new-serve-svc", 8001, 30)),
		},
		{
			name:     "zero weight is kept",
			backends: []Backend{{Service: "a", Port: 8000, Weight: 0}, {Service: "b", Port: 8000, Weight: 100}},
			want:     route(backendRef("a", 8000, 0), backendRef("b", 8000, 100)),
		},
		{name: "no backends", wantErr: prefix + "no backends"},
		{name: "too many backends", backends: many, wantErr: prefix + "17 backends, at most 16 allowed"},
		{name: "no name", backends: []Backend{{Port: 8000, Weight: 1}}, wantErr: prefix + "a backend without a Service name"},
		{name: "port 0", backends: []Backend{{Service: "a", Weight: 1}}, wantErr: prefix + "backend Service a: port 0 is not in 1-65535"},
		{name: "port too high", backends: []Backend{{Service: "a", Port: 70000, Weight: 1}},
			wantErr: prefix + "backend Service a: port 70000 is not in 1-65535"},
		{name: "negative weight", backends: []Backend{{Service: "a", Port: 8000, Weight: -1}},
			wantErr: prefix + "backend Service a: weight -1 is not in 0-1000000"},
		{name: "weight too high", backends: []Backend{{Service: "a", Port: 8000, Weight: 1_000_001}},
			wantErr: prefix + "backend Service a: weight 1000001 is not in 0-1000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := HTTPRoute(incrementalService("svc-old"), tt.backends)
			checkError(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("HTTPRoute (-want +got):\n%s", diff)
			}
		})
	}
}
