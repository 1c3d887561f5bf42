package builder

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestRecreateHashIgnoresScalingAndScheduling(t *testing.T) {
	base, err := RecreateHash(&newCluster("rc").Obj().Spec)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(s *rayv1.RayClusterSpec)
		change bool
	}{
		{name: "replicas", mutate: func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].Replicas = ptr.To[int32](7) }},
		{name: "min and max replicas", mutate: func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](2)
			s.WorkerGroupSpecs[0].MaxReplicas = nil
		}},
		{name: "workersToDelete", mutate: func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{"rc-small-worker-abcde"}
		}},
		{name: "upgradeStrategy", mutate: func(s *rayv1.RayClusterSpec) {
			s.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
		}},
		{name: "tolerations and scheduling gates injected by Kueue", mutate: func(s *rayv1.RayClusterSpec) {
			s.HeadGroupSpec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "k"}}
			s.HeadGroupSpec.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}}
			s.WorkerGroupSpecs[0].Template.Spec.Tolerations = []corev1.Toleration{{Key: "k"}}
			s.WorkerGroupSpecs[0].Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}}
		}},
		{name: "rayStartParams left nil (KubeRay defaults them first)", mutate: func(s *rayv1.RayClusterSpec) {
			s.HeadGroupSpec.RayStartParams = nil
			s.WorkerGroupSpecs[0].RayStartParams = nil
		}},
		{name: "worker image", change: true, mutate: func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		}},
		{name: "head rayStartParams", change: true, mutate: func(s *rayv1.RayClusterSpec) {
			s.HeadGroupSpec.RayStartParams["num-cpus"] = "0"
		}},
		{name: "head template label", change: true, mutate: func(s *rayv1.RayClusterSpec) {
			s.HeadGroupSpec.Template.Labels = map[string]string{"a": "b"}
		}},
		{name: "new worker group", change: true, mutate: func(s *rayv1.RayClusterSpec) {
			g := *s.WorkerGroupSpecs[0].DeepCopy()
			g.GroupName = "other"
			s.WorkerGroupSpecs = append(s.WorkerGroupSpecs, g)
		}},
		{name: "suspend", change: true, mutate: func(s *rayv1.RayClusterSpec) { s.Suspend = ptr.To(true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newCluster("rc").Spec(tt.mutate).Obj()
			before := rc.DeepCopy()
			got, err := RecreateHash(&rc.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if changed := got != base; changed != tt.change {
				t.Errorf("hash changed = %v, want %v (base %s, got %s)", changed, tt.change, base, got)
			}
			if before.Spec.WorkerGroupSpecs[0].Replicas != nil && *rc.Spec.WorkerGroupSpecs[0].Replicas != *before.Spec.WorkerGroupSpecs[0].Replicas {
				t.Errorf("RecreateHash modified the spec")
			}
		})
	}
}

// The golden values below were computed with KubeRay v1.6.2's own hashing of the same specs.
func TestHashesMatchKubeRay(t *testing.T) {
	if got, _ := HashWithoutReplicas(&rayv1.RayClusterSpec{}); got != "PTVF5IPRTR0A2EELQNRVADOG3HF01KC8" {
		t.Errorf("HashWithoutReplicas(empty spec) = %s", got)
	}
	sample := loadSample(t, "ray-cluster.sample.yaml")
	if got, _ := HashWithoutReplicas(&sample.Spec); got != "6RKSSRH0TUUOPMDVECMHUNDSDORCPGVT" {
		t.Errorf("HashWithoutReplicas(sample) = %s", got)
	}
	undefaulted := sample.DeepCopy()
	undefaulted.Spec.HeadGroupSpec.RayStartParams = nil
	undefaulted.Spec.WorkerGroupSpecs[0].RayStartParams = nil
	if got, _ := HashWithoutReplicas(&undefaulted.Spec); got != "IUIE5R6B0ST853A8B6SKRTOKNABSM956" {
		t.Errorf("HashWithoutReplicas(sample without rayStartParams) = %s", got)
	}
	// The RayCluster reconciler hashes after defaulting nil rayStartParams to {}.
	if got, _ := RecreateHash(&undefaulted.Spec); got != "6RKSSRH0TUUOPMDVECMHUNDSDORCPGVT" {
		t.Errorf("RecreateHash(sample without rayStartParams) = %s", got)
	}
}
