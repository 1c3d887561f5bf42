package builder

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// RecreateHash is rayspec.ClusterSpecHash after KubeRay's defaulting of nil rayStartParams;
// the golden value was computed with KubeRay v1.6.2's own hashing of the same spec.
func TestRecreateHash(t *testing.T) {
	sample := loadSample(t, "ray-cluster.sample.yaml")
	undefaulted := sample.DeepCopy()
	undefaulted.Spec.HeadGroupSpec.RayStartParams = nil
	undefaulted.Spec.WorkerGroupSpecs[0].RayStartParams = nil
	defaultedHash, err := rayspec.ClusterSpecHash(&sample.Spec)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec *rayv1.RayClusterSpec
		want string
	}{
		{name: "sample, rayStartParams set", spec: &sample.Spec, want: "6RKSSRH0TUUOPMDVECMHUNDSDORCPGVT"},
		{name: "sample, rayStartParams nil (KubeRay defaults them first)", spec: &undefaulted.Spec, want: "6RKSSRH0TUUOPMDVECMHUNDSDORCPGVT"},
		{name: "defaulted spec: same as ClusterSpecHash", spec: &sample.Spec, want: defaultedHash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.spec.DeepCopy()
			got, err := RecreateHash(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("RecreateHash = %s, want %s", got, tt.want)
			}
			if (before.HeadGroupSpec.RayStartParams == nil) != (tt.spec.HeadGroupSpec.RayStartParams == nil) {
				t.Errorf("RecreateHash modified the spec")
			}
		})
	}
}
