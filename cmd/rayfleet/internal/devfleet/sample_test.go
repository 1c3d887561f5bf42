package devfleet

import (
	"strings"
	"testing"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestLoadSample(t *testing.T) {
	s, err := LoadSample()
	if err != nil {
		t.Fatal(err)
	}
	if s.Policy.Namespace != "demo" || s.Policy.Name != "two-regions" || s.Policy.Spec.Clusters == nil ||
		*s.Policy.Spec.Clusters != 2 || s.Policy.Spec.SpreadBy != "region" {
		t.Errorf("PlacementPolicy = %s/%s %+v, want demo/two-regions with clusters 2 spread by region",
			s.Policy.Namespace, s.Policy.Name, s.Policy.Spec)
	}
	if s.Service.Namespace != "demo" || s.Service.Name != "fruit" || s.Service.Annotations[labels.PlacementPolicy] != "two-regions" {
		t.Errorf("RayService = %s/%s annotations %v, want demo/fruit placed by two-regions",
			s.Service.Namespace, s.Service.Name, s.Service.Annotations)
	}
	groups := s.Service.Spec.RayClusterSpec.WorkerGroupSpecs
	if len(groups) != 1 || *groups[0].MinReplicas != 0 || *groups[0].Replicas != 1 || *groups[0].MaxReplicas != 2 {
		t.Errorf("worker groups = %+v, want one with min 0, replicas 1, max 2", groups)
	}
}

// TestDecodeSampleRejects checks that a broken sample is caught when it is decoded, not on the
// hub: the embedded one passes the same checks (TestLoadSample).
func TestDecodeSampleRejects(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(string) string
		wantErr string
	}{
		{name: "unknown field", edit: func(s string) string { return strings.Replace(s, "spreadBy:", "spreadAcross:", 1) }, wantErr: "unknown field"},
		{name: "unknown kind", edit: func(s string) string { return strings.Replace(s, "kind: PlacementPolicy", "kind: Placement", 1) }, wantErr: "unexpected"},
		{name: "no PlacementPolicy", edit: func(s string) string { _, after, _ := strings.Cut(s, "---\n"); return after }, wantErr: "needs a PlacementPolicy"},
		{name: "annotation names another policy", edit: func(s string) string {
			return strings.Replace(s, labels.PlacementPolicy+": two-regions", labels.PlacementPolicy+": one-region", 1)
		}, wantErr: `want the PlacementPolicy's name "two-regions"`},
		{name: "namespaces differ", edit: func(s string) string { return strings.Replace(s, "namespace: demo", "namespace: other", 1) }, wantErr: "need one namespace"},
		{name: "invalid for KubeRay", edit: func(s string) string { return strings.Replace(s, "minReplicas: 0", "minReplicas: 3", 1) }, wantErr: "RayService demo/fruit: The RayService spec is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeSample([]byte(tt.edit(string(sampleYAML))))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("decodeSample error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
