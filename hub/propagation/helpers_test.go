package propagation

import (
	"encoding/json"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// override builds a ClusterOverride selecting clusters with all of the given labels (none:
// every cluster) and patching with the given JSON.
func override(selector map[string]string, patch string) fleetv1alpha1.ClusterOverride {
	return fleetv1alpha1.ClusterOverride{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: selector},
		Patch:           apiextensionsv1.JSON{Raw: []byte(patch)},
	}
}

// mustJSON encodes v, failing the test on error.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %T: %v", v, err)
	}
	return string(data)
}

// mustHash is SpecHash failing the test on error.
func mustHash(t *testing.T, spec *rayv1.RayServiceSpec) string {
	t.Helper()
	h, err := SpecHash(spec)
	if err != nil {
		t.Fatalf("SpecHash: %v", err)
	}
	return h
}
