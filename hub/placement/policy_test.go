package placement

import (
	"testing"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestPolicyName(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		policies    []string
		want        string
		wantBuiltIn bool
	}{
		{name: "nothing: built-in", wantBuiltIn: true},
		{name: "no default in the namespace: built-in", policies: []string{"gpu", "eu"}, wantBuiltIn: true},
		{name: "namespace default", policies: []string{"gpu", "default"}, want: "default"},
		{name: "annotation wins over default", annotations: map[string]string{labels.PlacementPolicy: "gpu"},
			policies: []string{"default", "gpu"}, want: "gpu"},
		{name: "annotated policy that does not exist is still the one", annotations: map[string]string{labels.PlacementPolicy: "missing"},
			policies: []string{"default"}, want: "missing"},
		{name: "empty annotation counts as none", annotations: map[string]string{labels.PlacementPolicy: ""},
			policies: []string{"default"}, want: "default"},
		{name: "other annotations are ignored", annotations: map[string]string{labels.FleetKeyPrefix + "other": "gpu"},
			wantBuiltIn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, builtIn := PolicyName(tt.annotations, tt.policies)
			if got != tt.want || builtIn != tt.wantBuiltIn {
				t.Errorf("PolicyName() = (%q, %t), want (%q, %t)", got, builtIn, tt.want, tt.wantBuiltIn)
			}
		})
	}
}
