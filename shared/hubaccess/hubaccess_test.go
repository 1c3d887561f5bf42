package hubaccess

import (
	"slices"
	"testing"
)

func TestHubRules(t *testing.T) {
	tests := []struct {
		group, resource string
		wantVerbs       []string
	}{
		{group: "ray.io", resource: "rayservices", wantVerbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
		{group: "", resource: "namespaces", wantVerbs: []string{"create", "get", "list", "patch", "watch"}},
		{group: "fleet.rayfleet.io", resource: "clusterreports", wantVerbs: []string{"get", "list", "watch"}},
		// A leaked hub kubeconfig must not read a member's credentials or reach into its Pods.
		{group: "", resource: "secrets"},
		{group: "", resource: "pods"},
		{group: "", resource: "pods/exec"},
		{group: "", resource: "serviceaccounts/token"},
		{group: "ray.io", resource: "rayclusters"},
		{group: "rbac.authorization.k8s.io", resource: "clusterroles"},
	}
	for _, tt := range tests {
		t.Run(tt.group+"/"+tt.resource, func(t *testing.T) {
			var verbs []string
			for _, r := range HubRules() {
				if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.Verbs, "*") ||
					len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
					t.Fatalf("rule %+v uses a wildcard, a non-resource URL or resource names", r)
				}
				if slices.Contains(r.APIGroups, tt.group) && slices.Contains(r.Resources, tt.resource) {
					verbs = append(verbs, r.Verbs...)
				}
			}
			slices.Sort(verbs)
			if !slices.Equal(verbs, tt.wantVerbs) {
				t.Errorf("verbs on %s/%s = %v, want %v", tt.group, tt.resource, verbs, tt.wantVerbs)
			}
		})
	}
}

func TestTokenRulesMintOnlyTheHubsOwnTokens(t *testing.T) {
	rules := TokenRules("hub")
	if len(rules) != 1 {
		t.Fatalf("TokenRules = %+v, want one rule", rules)
	}
	r := rules[0]
	if !slices.Equal(r.APIGroups, []string{""}) || !slices.Equal(r.Resources, []string{"serviceaccounts/token"}) ||
		!slices.Equal(r.Verbs, []string{"create"}) || !slices.Equal(r.ResourceNames, []string{"hub"}) {
		t.Errorf("TokenRules(hub) = %+v, want create on serviceaccounts/token named hub only", r)
	}
}
