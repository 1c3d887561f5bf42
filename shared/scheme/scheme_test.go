package scheme

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestNewKnowsBuiltInsRayAndGatewayAPI(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var want []schema.GroupVersionKind
	for _, kind := range []string{"Pod", "Service"} {
		want = append(want, corev1.SchemeGroupVersion.WithKind(kind))
	}
	for _, kind := range []string{"RayCluster", "RayService"} {
		want = append(want, rayv1.GroupVersion.WithKind(kind))
	}
	gateway := schema.GroupVersion{Group: gwv1.GroupName, Version: "v1"}
	for _, kind := range []string{"Gateway", "GatewayList", "HTTPRoute", "HTTPRouteList", "GatewayClass", "ReferenceGrant"} {
		want = append(want, gateway.WithKind(kind))
	}
	for _, gvk := range want {
		if !s.Recognizes(gvk) {
			t.Errorf("the scheme does not know %s", gvk)
		}
	}
	// A typed Gateway object maps back to its kind, as clients need to build request paths.
	gvks, _, err := s.ObjectKinds(&gwv1.HTTPRoute{})
	if err != nil || len(gvks) != 1 || gvks[0] != gateway.WithKind("HTTPRoute") {
		t.Errorf("ObjectKinds(HTTPRoute) = %v, %v", gvks, err)
	}
}
