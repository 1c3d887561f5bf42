package grants

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func grant(name string, spec fleetv1alpha1.NamespaceGrantSpec) fleetv1alpha1.NamespaceGrant {
	return fleetv1alpha1.NamespaceGrant{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func TestMember(t *testing.T) {
	byName := grant("a", fleetv1alpha1.NamespaceGrantSpec{
		Namespaces: []string{"team-a"},
		Members:    &fleetv1alpha1.MemberGrant{ClusterNames: []string{"us-east"}},
	})
	bySelector := grant("b", fleetv1alpha1.NamespaceGrantSpec{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
		Members: &fleetv1alpha1.MemberGrant{ClusterSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"region": "eu"}}},
	})
	notSelected := grant("c", fleetv1alpha1.NamespaceGrantSpec{
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "rayfleet.io/tenancy-test", Operator: metav1.LabelSelectorOpDoesNotExist}}},
		Members: &fleetv1alpha1.MemberGrant{ClusterSelector: &metav1.LabelSelector{}},
	})
	broken := grant("d", fleetv1alpha1.NamespaceGrantSpec{
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "x", Operator: "Near"}}},
		Members: &fleetv1alpha1.MemberGrant{ClusterSelector: &metav1.LabelSelector{}},
	})
	all := []fleetv1alpha1.NamespaceGrant{byName, bySelector, notSelected, broken}
	tests := []struct {
		name         string
		namespace    string
		nsLabels     map[string]string
		member       string
		memberLabels map[string]string
		want         bool
		wantNames    []string
	}{
		{name: "named namespace, named member", namespace: "team-a",
			nsLabels: map[string]string{"rayfleet.io/tenancy-test": "x"}, member: "us-east", want: true, wantNames: []string{"a"}},
		{name: "named namespace, another member", namespace: "team-a",
			nsLabels: map[string]string{"rayfleet.io/tenancy-test": "x"}, member: "us-west", wantNames: []string{"a"}},
		{name: "selected namespace, selected member", namespace: "team-b",
			nsLabels: map[string]string{"tier": "prod", "rayfleet.io/tenancy-test": "x"}, member: "eu-1",
			memberLabels: map[string]string{"region": "eu"}, want: true, wantNames: []string{"b"}},
		{name: "grants add up", namespace: "team-a", nsLabels: map[string]string{"tier": "prod", "rayfleet.io/tenancy-test": "x"},
			member: "eu-1", memberLabels: map[string]string{"region": "eu"}, want: true, wantNames: []string{"a", "b"}},
		{name: "DoesNotExist selects an unlabelled namespace, every member", namespace: "default",
			member: "anything", want: true, wantNames: []string{"c"}},
		{name: "no grant selects the namespace", namespace: "team-z",
			nsLabels: map[string]string{"rayfleet.io/tenancy-test": "x"}, member: "us-east"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := For(all, tt.namespace, tt.nsLabels)
			if got := s.Member(tt.member, tt.memberLabels); got != tt.want {
				t.Errorf("Member(%s) = %v, want %v", tt.member, got, tt.want)
			}
			if !slices.Equal(s.Names, tt.wantNames) {
				t.Errorf("Names = %v, want %v", s.Names, tt.wantNames)
			}
			if s.None() != (len(tt.wantNames) == 0) {
				t.Errorf("None() = %v with names %v", s.None(), s.Names)
			}
			if len(s.Problems) != 1 {
				t.Errorf("Problems = %v, want the broken selector of grant d", s.Problems)
			}
		})
	}
	if got, want := For(all, "team-z", nil).MemberMissing("us-east"), "namespace team-z has no NamespaceGrant for member us-east"; got != want {
		t.Errorf("MemberMissing = %q, want %q", got, want)
	}
}

func TestTrafficMissing(t *testing.T) {
	g := grant("traffic", fleetv1alpha1.NamespaceGrantSpec{
		Namespaces: []string{"team-b"},
		Traffic: []fleetv1alpha1.TrafficGrant{{
			Cluster:      "edge",
			Gateways:     []fleetv1alpha1.GatewayGrant{{Namespace: "gw", Name: "public"}},
			Hostnames:    []string{"b.example.com", "*.b.example.com"},
			PathPrefixes: []string{"/team-b"},
		}, {
			Gateways:  []fleetv1alpha1.GatewayGrant{{Namespace: "gw-b", Name: "*"}},
			Hostnames: []string{"*"},
		}},
	})
	s := For([]fleetv1alpha1.NamespaceGrant{g}, "team-b", nil)
	spec := func(cluster, ns, name, path string, hosts ...string) *fleetv1alpha1.TrafficSpec {
		return &fleetv1alpha1.TrafficSpec{Cluster: cluster,
			ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: ns, Name: name}, Hostnames: hosts, PathPrefix: path}
	}
	const no = "namespace team-b has no NamespaceGrant for "
	tests := []struct {
		name string
		spec *fleetv1alpha1.TrafficSpec
		want string
	}{
		{name: "granted hostname and path", spec: spec("edge", "gw", "public", "/team-b", "b.example.com")},
		{name: "a path under the granted prefix", spec: spec("edge", "gw", "public", "/team-b/v2/", "b.example.com")},
		{name: "a subdomain and a wildcard under the granted wildcard",
			spec: spec("edge", "gw", "public", "/team-b", "x.b.example.com", "*.y.b.example.com")},
		{name: "another team's hostname", spec: spec("edge", "gw", "public", "/team-b", "a.example.com"),
			want: no + "Gateway gw/public hostname a.example.com"},
		{name: "the wildcard's own domain is not under it", spec: spec("edge", "gw", "public", "/team-b", "example.com"),
			want: no + "Gateway gw/public hostname example.com"},
		{name: "a longer path that is not a segment under the prefix", spec: spec("edge", "gw", "public", "/team-bb", "b.example.com"),
			want: no + "Gateway gw/public path prefix /team-bb"},
		{name: "the default path", spec: spec("edge", "gw", "public", "", "b.example.com"),
			want: no + "Gateway gw/public path prefix /"},
		{name: "every hostname needs *", spec: spec("edge", "gw", "public", "/team-b"),
			want: no + "Gateway gw/public with every hostname (the policy sets none; a grant of hostname \"*\" allows that)"},
		{name: "another Gateway", spec: spec("edge", "gw", "internal", "/team-b", "b.example.com"),
			want: no + "Gateway gw/internal on cluster edge"},
		{name: "another traffic cluster", spec: spec("core", "gw", "public", "/team-b", "b.example.com"),
			want: no + "traffic cluster core"},
		{name: "the hub's Gateway in the namespace granted whole", spec: spec("", "gw-b", "any", "")},
		{name: "the hub's cluster, another Gateway namespace", spec: spec("", "gw", "public", "/team-b", "b.example.com"),
			want: no + "Gateway gw/public on the hub's cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.TrafficMissing(tt.spec); got != tt.want {
				t.Errorf("TrafficMissing = %q, want %q", got, tt.want)
			}
		})
	}
	none := For(nil, "team-b", nil)
	if got := none.TrafficMissing(spec("", "gw-b", "x", "")); got != no+"the hub's cluster as traffic cluster" {
		t.Errorf("with no grant: %q", got)
	}
}
