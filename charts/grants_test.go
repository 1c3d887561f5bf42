package charts_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// The hub chart makes exactly the NamespaceGrants of values.grants, their specs as given; none
// by default, where a fresh install grants nothing.
func TestGrants(t *testing.T) {
	if got := mustRender(t, hubChart).ofKind("NamespaceGrant"); len(got) != 0 {
		t.Errorf("default values render %d NamespaceGrants, want none", len(got))
	}
	m := mustRender(t, hubChart, `json:grants=[{"name":"team-a","spec":{"namespaces":["team-a"],`+
		`"members":{"clusterNames":["us-east"]},"traffic":[{"gateways":[{"namespace":"gw","name":"public"}],"hostnames":["a.example.com"]}]}},`+
		`{"name":"shared","spec":{"namespaceSelector":{"matchLabels":{"tier":"shared"}},"members":{"clusterSelector":{}}}}]`)
	if got := len(m.ofKind("NamespaceGrant")); got != 2 {
		t.Fatalf("rendered %d NamespaceGrants, want 2", got)
	}
	var g fleetv1alpha1.NamespaceGrant
	m.decode(t, "NamespaceGrant", "team-a", &g)
	want := fleetv1alpha1.NamespaceGrantSpec{
		Namespaces: []string{"team-a"},
		Members:    &fleetv1alpha1.MemberGrant{ClusterNames: []string{"us-east"}},
		Traffic: []fleetv1alpha1.TrafficGrant{{Gateways: []fleetv1alpha1.GatewayGrant{{Namespace: "gw", Name: "public"}},
			Hostnames: []string{"a.example.com"}}},
	}
	if diff := cmp.Diff(want, g.Spec); diff != "" {
		t.Errorf("team-a spec (-want +got):\n%s", diff)
	}
	if g.APIVersion != fleetv1alpha1.GroupVersion.String() || g.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("apiVersion %s, labels %v", g.APIVersion, g.Labels)
	}
	if _, err := render(t, hubChart, `json:grants=[{"name":"no-spec"}]`); err == nil {
		t.Error("a grant without a spec rendered; want the schema to refuse it")
	}
}
