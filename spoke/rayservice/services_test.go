package rayservice

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/jsonsubset"
)

func TestCovers(t *testing.T) {
	listener := gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}
	defaulted := listener
	defaulted.AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromSame)}}
	spec := func(ls ...gwv1.Listener) gwv1.GatewaySpec {
		return gwv1.GatewaySpec{GatewayClassName: "istio", Listeners: ls}
	}
	tests := []struct {
		name       string
		have, want any
		ok         bool
	}{
		{"equal", spec(listener), spec(listener), true},
		{"server defaults ignored", spec(defaulted), spec(listener), true},
		{"a value differs", spec(listener), gwv1.GatewaySpec{GatewayClassName: "envoy", Listeners: []gwv1.Listener{listener}}, false},
		{"a field we set is missing", spec(listener), spec(defaulted), false},
		{"a list element removed", spec(listener, listener), spec(listener), false},
		{"a list element added", spec(listener), spec(listener, listener), false},
		{"weights differ", backend(10), backend(20), false},
		{"weights equal", backend(10), backend(10), true},
		{"empty wanted map is no requirement", corev1.ServiceSpec{}, corev1.ServiceSpec{Selector: map[string]string{}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jsonsubset.Covers(tt.have, tt.want); got != tt.ok {
				t.Fatalf("covers = %v, want %v", got, tt.ok)
			}
		})
	}
}

func backend(w int32) gwv1.HTTPBackendRef {
	return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "svc"}, Weight: ptr.To(w)}}
}

func TestKeepNodePorts(t *testing.T) {
	got := keepNodePorts(
		[]corev1.ServicePort{{Name: "serve", Port: 8000}, {Name: "serve-grpc", Port: 9000}, {Name: "fixed", Port: 1, NodePort: 30001}},
		[]corev1.ServicePort{{Name: "serve", Port: 8000, NodePort: 31000}, {Name: "fixed", NodePort: 32000}},
	)
	want := []int32{31000, 0, 30001}
	for i, w := range want {
		if got[i].NodePort != w {
			t.Errorf("port %s: nodePort %d, want %d", got[i].Name, got[i].NodePort, w)
		}
	}
}
