package charts_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/rayfleet/rayfleet/shared/hubpolicy"
)

// The spoke chart's guard is shared/hubpolicy's Build: generated/hubpolicy.yaml re-emitted
// under the release's names, with values setting exactly the Config they name.
func TestHubPolicyIsGenerated(t *testing.T) {
	defaultUser := hubpolicy.HubUsername(releaseNS, "rayfleet-hub-access")
	tests := []struct {
		name     string
		set      []string
		wantName string
		edit     func(*hubpolicy.Config)
	}{
		{name: "defaults", wantName: "rayfleet-spoke-hub-guard"},
		{name: "full name", set: []string{"fullnameOverride=agent"}, wantName: "agent-hub-guard"},
		{name: "hub ServiceAccount", set: []string{"hubAccess.serviceAccountName=hub"}, wantName: "rayfleet-spoke-hub-guard",
			edit: func(c *hubpolicy.Config) { c.HubUsernames = []string{hubpolicy.HubUsername(releaseNS, "hub")} }},
		{name: "hub usernames", set: []string{`json:hubPolicy.hubUsernames=["system:serviceaccount:a:hub","alice"]`}, wantName: "rayfleet-spoke-hub-guard",
			edit: func(c *hubpolicy.Config) { c.HubUsernames = []string{"system:serviceaccount:a:hub", "alice"} }},
		{
			name: "loosened", wantName: "rayfleet-spoke-hub-guard",
			set: []string{
				`json:hubPolicy.allowedServiceAccounts=["default","ray-worker"]`, `json:hubPolicy.allowedNamespaces=["team-a","team-b"]`,
				`json:hubPolicy.allowedCapabilities=["NET_ADMIN"]`, "hubPolicy.allowHostNetwork=true", "hubPolicy.allowNodePorts=true",
				"hubPolicy.minPodSecurityLevel=privileged", "hubPolicy.maxWorkerGroups=20", `json:hubPolicy.unenforcedNamespaces=["legacy"]`,
				"hubPolicy.allowIngress=true", `json:hubPolicy.allowedGatewayClasses=["istio","eg"]`,
				`json:hubPolicy.allowedExistingNamespaces=["argocd"]`,
			},
			edit: func(c *hubpolicy.Config) {
				c.AllowedServiceAccounts = []string{"default", "ray-worker"}
				c.AllowedNamespaces = []string{"team-a", "team-b"}
				c.AllowedCapabilities = []string{"NET_ADMIN"}
				c.AllowHostNetwork, c.AllowNodePorts = true, true
				c.MinPodSecurityLevel = hubpolicy.LevelPrivileged
				c.MaxWorkerGroups = 20
				c.UnenforcedNamespaces = []string{"legacy"}
				c.AllowIngress = true
				c.AllowedGatewayClasses = []string{"istio", "eg"}
				c.AllowedExistingNamespaces = []string{"argocd"}
			},
		},
		{
			// The Gateway's namespace (hubTraffic.namespace) is not named: the hub only deletes
			// there what earlier releases wrote.
			name: "traffic namespaces", wantName: "rayfleet-spoke-hub-guard",
			set:  []string{`json:hubTraffic.namespaces=["team-a","edge"]`, "hubTraffic.namespace=gateway"},
			edit: func(c *hubpolicy.Config) { c.TrafficNamespaces = []string{"team-a", "edge"} },
		},
		{
			name: "tightened", wantName: "rayfleet-spoke-hub-guard",
			set: []string{`json:hubPolicy.allowedServiceAccounts=[]`, `json:hubPolicy.allowedCapabilities=[]`, "hubPolicy.minPodSecurityLevel=restricted"},
			edit: func(c *hubpolicy.Config) {
				c.AllowedServiceAccounts, c.AllowedCapabilities = []string{}, []string{}
				c.MinPodSecurityLevel = hubpolicy.LevelRestricted
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := hubpolicy.Default()
			cfg.HubUsernames = []string{defaultUser}
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			want, err := hubpolicy.Build(tt.wantName, cfg)
			if err != nil {
				t.Fatal(err)
			}
			m := mustRender(t, spokeChart, tt.set...)
			if got, wantN := len(m.ofKind("ValidatingAdmissionPolicy"))+len(m.ofKind("ValidatingAdmissionPolicyBinding")), len(want.List()); got != wantN {
				t.Fatalf("rendered %d policies and bindings, want %d", got, wantN)
			}
			for _, p := range want.Policies {
				var got admissionregistrationv1.ValidatingAdmissionPolicy
				m.decode(t, "ValidatingAdmissionPolicy", p.Name, &got)
				if diff := cmp.Diff(p.Spec, got.Spec); diff != "" {
					t.Errorf("policy %s differs from hubpolicy.Build (-built +rendered):\n%s", p.Name, diff)
				}
				if got.Labels["app.kubernetes.io/component"] != "hub-guard" || got.Labels["app.kubernetes.io/managed-by"] != "Helm" {
					t.Errorf("policy %s labels %v", p.Name, got.Labels)
				}
			}
			for _, b := range want.Bindings {
				var got admissionregistrationv1.ValidatingAdmissionPolicyBinding
				m.decode(t, "ValidatingAdmissionPolicyBinding", b.Name, &got)
				if diff := cmp.Diff(b.Spec, got.Spec); diff != "" {
					t.Errorf("binding %s differs from hubpolicy.Build (-built +rendered):\n%s", b.Name, diff)
				}
			}
		})
	}
}

// hubPolicy.enabled=false renders no guard; hubAccess does not depend on it.
func TestHubPolicyDisabled(t *testing.T) {
	m := mustRender(t, spokeChart, "hubPolicy.enabled=false")
	if n := len(m.ofKind("ValidatingAdmissionPolicy")) + len(m.ofKind("ValidatingAdmissionPolicyBinding")); n != 0 {
		t.Errorf("rendered %d policies and bindings with hubPolicy.enabled=false, want none", n)
	}
	if len(m.ofKind("ClusterRoleBinding")) != 2 {
		t.Errorf("rendered %d ClusterRoleBindings, want the spoke's and the hub's", len(m.ofKind("ClusterRoleBinding")))
	}
}
