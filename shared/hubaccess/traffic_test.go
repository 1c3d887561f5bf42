package hubaccess

import (
	"slices"
	"testing"
)

func TestTrafficRules(t *testing.T) {
	write := []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	tests := []struct {
		group, resource string
		wantVerbs       []string
	}{
		{group: "gateway.networking.k8s.io", resource: "httproutes", wantVerbs: write},
		{group: "", resource: "services", wantVerbs: write},
		{group: "discovery.k8s.io", resource: "endpointslices", wantVerbs: write},
		// Read and watched (the hub's informers), never written: the members' exports make them.
		{group: "multicluster.x-k8s.io", resource: "serviceimports", wantVerbs: []string{"get", "list", "watch"}},
		// Status is the gateway's to write; Secrets and Gateways are not the hub's business.
		{group: "gateway.networking.k8s.io", resource: "httproutes/status"},
		{group: "gateway.networking.k8s.io", resource: "gateways"},
		{group: "", resource: "secrets"},
		{group: "", resource: "endpoints"},
	}
	for _, tt := range tests {
		t.Run(tt.group+"/"+tt.resource, func(t *testing.T) {
			var verbs []string
			for _, r := range TrafficRules() {
				if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 0 || slices.Contains(r.Verbs, "*") {
					t.Fatalf("rule %+v is not one group, one resource and named verbs", r)
				}
				if r.APIGroups[0] == tt.group && r.Resources[0] == tt.resource {
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
