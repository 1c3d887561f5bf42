package traffic

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The hub keeps a route written before grants existed only while the policy asks for exactly
// it: Matches must read back what Desired writes.
func TestMatchesOfWhatDesiredWrites(t *testing.T) {
	in := input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 80, Weight: 1})
	in.Spec.Hostnames = []string{"demo.example.com", "*.demo.example.com"}
	in.Spec.PathPrefix = "/v1/predict"
	objs, err := Desired(in)
	if err != nil {
		t.Fatal(err)
	}
	want := Matches{GatewayNamespace: "gw", Gateway: "edge", Hostnames: []string{"demo.example.com", "*.demo.example.com"}, PathPrefix: "/v1/predict"}
	if diff := cmp.Diff(want, matchesOf(objs.Route)); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
	in.Spec.Hostnames, in.Spec.PathPrefix = nil, ""
	if objs, err = Desired(in); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Matches{GatewayNamespace: "gw", Gateway: "edge", PathPrefix: "/"}, matchesOf(objs.Route)); diff != "" {
		t.Errorf("matches of the defaults (-want +got):\n%s", diff)
	}
}
