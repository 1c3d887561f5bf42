//go:build e2e

package localcluster

import "testing"

func TestCRDDirsHoldWhatAMemberNeeds(t *testing.T) {
	ray, err := SpokeCRDDir("")
	if err != nil {
		t.Fatal(err)
	}
	gateway, err := GatewayAPICRDDir()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
		want []string
	}{
		{name: "ray.io", dir: ray, want: []string{"rayclusters.ray.io", "rayservices.ray.io"}},
		{name: "gateway-api", dir: gateway, want: []string{"gateways.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crds, err := readCRDs(tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, crd := range crds {
				names[crd.GetName()] = true
			}
			for _, w := range tt.want {
				if !names[w] {
					t.Errorf("%s: no CRD %s among %v", tt.dir, w, names)
				}
			}
		})
	}
}
