package scheme

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestNewKnowsBuiltInsRayGatewayAPIAndServiceExport(t *testing.T) {
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
	for _, kind := range []string{"ServiceExport", "ServiceExportList"} {
		want = append(want, mcsv1alpha1.SchemeGroupVersion.WithKind(kind))
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

func TestNewKnowsTheFleetAPI(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	// Each typed object maps to exactly its fleet.rayfleet.io/v1alpha1 kind, which clients need
	// to build request paths and server-side apply needs to fill apiVersion and kind.
	tests := []struct {
		obj  runtime.Object
		kind string
	}{
		{&fleetv1alpha1.MemberCluster{}, "MemberCluster"},
		{&fleetv1alpha1.MemberClusterList{}, "MemberClusterList"},
		{&fleetv1alpha1.ClusterReport{}, "ClusterReport"},
		{&fleetv1alpha1.ClusterReportList{}, "ClusterReportList"},
		{&fleetv1alpha1.PlacementPolicy{}, "PlacementPolicy"},
		{&fleetv1alpha1.PlacementPolicyList{}, "PlacementPolicyList"},
		{&fleetv1alpha1.RayServiceBinding{}, "RayServiceBinding"},
		{&fleetv1alpha1.RayServiceBindingList{}, "RayServiceBindingList"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			want := schema.GroupVersionKind{Group: "fleet.rayfleet.io", Version: "v1alpha1", Kind: tt.kind}
			gvks, _, err := s.ObjectKinds(tt.obj)
			if err != nil || len(gvks) != 1 || gvks[0] != want {
				t.Fatalf("ObjectKinds = %v, %v; want [%s]", gvks, err, want)
			}
			// The scheme builds a fresh object of the kind, as decoders and caches do.
			if _, err := s.New(want); err != nil {
				t.Errorf("New(%s): %v", want, err)
			}
		})
	}
}
