package localcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestResolveService resolves names as cluster DNS would: a ClusterIP Service to its ClusterIP,
// a headless one to an endpoint (unready ones only when the Service publishes them), anything
// else (a Pod IP) to itself.
func TestResolveService(t *testing.T) {
	endpoints := func(svc string, ready bool, addr string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: svc + "-x", Namespace: "ns",
				Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
		}
	}
	c := fake.NewClientBuilder().WithScheme(Scheme).WithObjects(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "vip", Namespace: "ns"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.7"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "headless", Namespace: "ns"},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true}},
		endpoints("headless", false, "10.244.0.5"),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "strict", Namespace: "ns"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}},
		endpoints("strict", false, "10.244.0.6"),
	).Build()
	tests := []struct {
		host, want string
		wantErr    bool
	}{
		{host: "vip.ns.svc.cluster.local", want: "10.96.0.7"},
		{host: "headless.ns.svc.cluster.local", want: "10.244.0.5"},
		{host: "strict.ns.svc.cluster.local", wantErr: true},
		{host: "missing.ns.svc.cluster.local", wantErr: true},
		{host: "10.244.0.9", want: "10.244.0.9"},
		{host: "a.b.c.svc.cluster.local", want: "a.b.c.svc.cluster.local"},
	}
	for _, tt := range tests {
		got, err := resolveService(t.Context(), c, tt.host)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("resolveService(%q) = %q, %v; want %q (error %v)", tt.host, got, err, tt.want, tt.wantErr)
		}
	}
}
