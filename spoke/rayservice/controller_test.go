package rayservice

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rayfleet/rayfleet/shared/scheme"
)

func TestRayServiceOfSlice(t *testing.T) {
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	service := func(name string, l map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: l}}
	}
	c := fake.NewClientBuilder().WithScheme(sch).WithObjects(
		service("svc-serve-svc", map[string]string{
			"ray.io/originated-from-crd": "RayService", "ray.io/originated-from-cr-name": "svc", "ray.io/serve": "svc-serve",
		}),
		service("web", map[string]string{"app": "web"}),
	).Build()
	r := testReconciler(t, c, clocktesting.NewFakeClock(t0))
	svc := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "svc"}}}
	tests := []struct {
		name   string
		labels map[string]string
		want   []reconcile.Request
	}{
		{"serve Service of a RayService", map[string]string{
			"ray.io/originated-from-crd": "RayService", "ray.io/originated-from-cr-name": "svc",
			"ray.io/serve": "svc-serve", "kubernetes.io/service-name": "svc-serve-svc",
		}, svc},
		{"serve Service of a standalone RayCluster", map[string]string{
			"ray.io/originated-from-crd": "RayCluster", "ray.io/originated-from-cr-name": "rc", "ray.io/serve": "rc-serve",
		}, nil},
		{"no origin", map[string]string{"ray.io/serve": "x"}, nil},
		{"made by another manager, service-name alone: through its Service", map[string]string{
			"kubernetes.io/service-name": "svc-serve-svc", "endpointslice.kubernetes.io/managed-by": "mesh.example.com",
		}, svc},
		{"service-name of an unrelated Service", map[string]string{"kubernetes.io/service-name": "web"}, nil},
		{"service-name of a Service not cached", map[string]string{"kubernetes.io/service-name": "gone"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: tt.labels}}
			if diff := cmp.Diff(tt.want, r.rayServiceOfSlice(context.Background(), slice)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
