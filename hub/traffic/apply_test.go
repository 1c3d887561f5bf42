package traffic

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestKept(t *testing.T) {
	desired, err := Desired(input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 80, Weight: 1},
		Backend{Cluster: "ap", Host: "lb.ap.example.com", Port: 443, Weight: 1}))
	if err != nil {
		t.Fatal(err)
	}
	ref := func(name string, mod func(*gwv1.HTTPBackendRef)) gwv1.HTTPBackendRef {
		r := gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name)}}}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	live := func(refs ...gwv1.HTTPBackendRef) *gwv1.HTTPRoute {
		r := &gwv1.HTTPRoute{}
		r.Namespace = "apps"
		r.Spec.Rules = []gwv1.HTTPRouteRule{{BackendRefs: refs}}
		return r
	}
	ours := []string{"EndpointSlice/" + be("us"), "Service/" + be("ap"), "Service/" + be("us")}
	tests := []struct {
		name string
		live *gwv1.HTTPRoute
		want []string
	}{
		{name: "the live route refers to what is desired: only that", live: live(ref(be("us"), nil)), want: ours},
		{
			name: "a backend the live route still refers to stays, both kinds",
			live: live(ref(be("eu"), nil), ref("apps-demo-us", nil)),
			want: append([]string{"EndpointSlice/" + be("eu"), "EndpointSlice/apps-demo-us", "Service/" + be("eu"), "Service/apps-demo-us"}, ours...),
		},
		{
			name: "a name desired keeps only the kinds desired (ap became a hostname: no EndpointSlice)",
			live: live(ref(be("ap"), nil)), want: ours,
		},
		{
			name: "references that are not local Services keep nothing",
			live: live(ref("x", func(r *gwv1.HTTPBackendRef) { r.Namespace = ptr.To(gwv1.Namespace("gw")) }),
				ref("y", func(r *gwv1.HTTPBackendRef) { r.Kind = ptr.To(gwv1.Kind("ServiceImport")) }),
				ref("z", func(r *gwv1.HTTPBackendRef) { r.Group = ptr.To(gwv1.Group("multicluster.x-k8s.io")) })),
			want: ours,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for k := range kept(desired, tt.live) {
				got = append(got, k)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}
