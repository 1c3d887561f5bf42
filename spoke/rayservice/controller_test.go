package rayservice

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRayServiceOfSlice(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   []reconcile.Request
	}{
		{"serve Service of a RayService", map[string]string{
			"ray.io/originated-from-crd": "RayService", "ray.io/originated-from-cr-name": "svc",
			"ray.io/serve": "svc-serve", "kubernetes.io/service-name": "svc-serve-svc",
		}, []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "svc"}}}},
		{"serve Service of a standalone RayCluster", map[string]string{
			"ray.io/originated-from-crd": "RayCluster", "ray.io/originated-from-cr-name": "rc", "ray.io/serve": "rc-serve",
		}, nil},
		{"no origin", map[string]string{"ray.io/serve": "x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: tt.labels}}
			if diff := cmp.Diff(tt.want, rayServiceOfSlice(context.Background(), slice)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
