package rayspec

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// hashSpec is a small cluster spec: a head and one worker group, rayStartParams set.
func hashSpec() *rayv1.RayClusterSpec {
	return &raybuilder.MakeRayCluster("rc", "ns").WorkerGroup("small", 1, 0, 5).Obj().Spec
}

func TestClusterSpecHashIgnoresScalingAndScheduling(t *testing.T) {
	base, err := ClusterSpecHash(hashSpec())
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
		{name: "rayStartParams left nil (hashed as given, not defaulted)", change: true, mutate: func(s *rayv1.RayClusterSpec) {
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
			spec := hashSpec()
			tt.mutate(spec)
			before := spec.DeepCopy()
			got, err := ClusterSpecHash(spec)
			if err != nil {
				t.Fatal(err)
			}
			if changed := got != base; changed != tt.change {
				t.Errorf("hash changed = %v, want %v (base %s, got %s)", changed, tt.change, base, got)
			}
			if before.WorkerGroupSpecs[0].Replicas != nil && *spec.WorkerGroupSpecs[0].Replicas != *before.WorkerGroupSpecs[0].Replicas {
				t.Errorf("ClusterSpecHash modified the spec")
			}
		})
	}
}

// The golden values below were computed with KubeRay v1.6.2's own hashing of the same specs.
func TestClusterSpecHashMatchesKubeRay(t *testing.T) {
	if got, _ := ClusterSpecHash(&rayv1.RayClusterSpec{}); got != "PTVF5IPRTR0A2EELQNRVADOG3HF01KC8" {
		t.Errorf("ClusterSpecHash(empty spec) = %s", got)
	}
	sample := loadKubeRaySample(t, "ray-cluster.sample.yaml")
	if got, _ := ClusterSpecHash(&sample.Spec); got != "6RKSSRH0TUUOPMDVECMHUNDSDORCPGVT" {
		t.Errorf("ClusterSpecHash(sample) = %s", got)
	}
	undefaulted := sample.DeepCopy()
	undefaulted.Spec.HeadGroupSpec.RayStartParams = nil
	undefaulted.Spec.WorkerGroupSpecs[0].RayStartParams = nil
	if got, _ := ClusterSpecHash(&undefaulted.Spec); got != "IUIE5R6B0ST853A8B6SKRTOKNABSM956" {
		t.Errorf("ClusterSpecHash(sample without rayStartParams) = %s", got)
	}
}

func TestServeConfigHash(t *testing.T) {
	const cfg = "applications:\n- name: fruit\n  import_path: fruit.app\n"
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{name: "same text", a: cfg, b: cfg, same: true},
		{name: "both empty", a: "", b: "", same: true},
		{name: "empty and a config", a: "", b: cfg},
		{name: "an application renamed", a: cfg, b: strings.Replace(cfg, "fruit\n", "veggie\n", 1)},
		{name: "trailing newline (the text is hashed as written)", a: cfg, b: strings.TrimSuffix(cfg, "\n")},
		{name: "reindented", a: cfg, b: strings.ReplaceAll(cfg, "\n  ", "\n    ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := ServeConfigHash(tt.a), ServeConfigHash(tt.b)
			if same := a == b; same != tt.same {
				t.Errorf("ServeConfigHash(%q) = %s, ServeConfigHash(%q) = %s: same = %v, want %v", tt.a, a, tt.b, b, same, tt.same)
			}
			if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
				t.Errorf("ServeConfigHash(%q) = %q, want 32 lowercase hex characters", tt.a, a)
			}
		})
	}
	// Stable across processes and releases: the hub and the spoke compare values either wrote.
	if got := ServeConfigHash(""); got != "e3b0c44298fc1c149afbf4c8996fb924" {
		t.Errorf(`ServeConfigHash("") = %s, want the first 16 bytes of SHA-256("")`, got)
	}
}

// loadKubeRaySample reads a RayCluster from KubeRay's config/samples: $KUBERAY/config/samples
// when KUBERAY is set, else those of the KubeRay module this build uses. Without them the test
// is skipped.
func loadKubeRaySample(t *testing.T, name string) *rayv1.RayCluster {
	t.Helper()
	root := os.Getenv("KUBERAY")
	if root == "" {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ray-project/kuberay/ray-operator").Output()
		if err != nil {
			t.Skipf("cannot locate the KubeRay module: %v", err)
		}
		root = strings.TrimSpace(string(out))
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", name))
	if err != nil {
		t.Skipf("KubeRay sample %s not available: %v", name, err)
	}
	var rc rayv1.RayCluster
	if err := yaml.Unmarshal(data, &rc); err != nil {
		t.Fatal(err)
	}
	return &rc
}
