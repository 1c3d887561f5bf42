package propagation

import (
	"regexp"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestSpecHashStable(t *testing.T) {
	base := raybuilder.MakeRayService("svc", "ns").Obj()
	// The same maps filled in opposite orders: Go keeps no insertion order, but a hash over a
	// hand-rolled encoding easily would.
	forward, backward := base.DeepCopy(), base.DeepCopy()
	keys := []string{"num-cpus", "object-store-memory", "dashboard-host", "metrics-export-port"}
	forward.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams = map[string]string{}
	backward.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams = map[string]string{}
	for i := range keys {
		forward.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams[keys[i]] = keys[i] + "-v"
		k := keys[len(keys)-1-i]
		backward.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams[k] = k + "-v"
	}
	// A quantity written differently but equal in value encodes canonically.
	forward.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Resources.Limits =
		corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	backward.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Resources.Limits =
		corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")}

	h1, h2 := mustHash(t, &forward.Spec), mustHash(t, &backward.Spec)
	if h1 != h2 {
		t.Errorf("equal specs hash differently: %s vs %s", h1, h2)
	}
	if again := mustHash(t, &forward.Spec); again != h1 {
		t.Errorf("hash not repeatable: %s then %s", h1, again)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(h1) {
		t.Errorf("hash %q is not 64 lowercase hex characters", h1)
	}
}

func TestSpecHashChangesWithSpec(t *testing.T) {
	base := raybuilder.MakeRayService("svc", "ns")
	baseHash := mustHash(t, &base.Obj().Spec)
	tests := []struct {
		name   string
		mutate func(*rayv1.RayServiceSpec)
	}{
		{"image", func(s *rayv1.RayServiceSpec) { raybuilder.SetImage(&s.RayClusterSpec, "rayproject/ray:2.99.0") }},
		{"worker replicas", func(s *rayv1.RayServiceSpec) { s.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) }},
		{"serve config", func(s *rayv1.RayServiceSpec) { s.ServeConfigV2 += "  - name: other\n" }},
		{"worker group added", func(s *rayv1.RayServiceSpec) { raybuilder.AppendGroup(&s.RayClusterSpec, "big", 1) }},
		{"ray start param", func(s *rayv1.RayServiceSpec) {
			s.RayClusterSpec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "0"}
		}},
		{"deletion delay", func(s *rayv1.RayServiceSpec) { s.RayClusterDeletionDelaySeconds = ptr.To[int32](30) }},
		{"upgrade strategy", func(s *rayv1.RayServiceSpec) {
			s.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceUpgradeNone)}
		}},
		{"suspend", func(s *rayv1.RayServiceSpec) { s.RayClusterSpec.Suspend = ptr.To(true) }},
	}
	seen := map[string]string{baseHash: "base"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := base.Obj().Spec
			tc.mutate(&spec)
			h := mustHash(t, &spec)
			if prev, dup := seen[h]; dup {
				t.Errorf("hash %s equals that of %q", h, prev)
			}
			seen[h] = tc.name
		})
	}
}

func TestSpecHashNil(t *testing.T) {
	if h, err := SpecHash(nil); err == nil {
		t.Errorf("SpecHash(nil) = %q, want an error", h)
	}
}

func TestJSONHash(t *testing.T) {
	spec := raybuilder.MakeRayService("svc", "ns").Obj().Spec
	if got, want := mustJSONHash(t, &spec), mustHash(t, &spec); got != want {
		t.Errorf("JSONHash(spec) = %s, SpecHash(spec) = %s: one scheme must give one hash", got, want)
	}
	// encoding/json cannot encode a func: the error names what was hashed.
	if _, err := JSONHash("revision", func() {}); err == nil || !strings.Contains(err.Error(), "hashing revision") {
		t.Errorf("JSONHash(func) error = %v, want one naming the revision", err)
	}
}

func mustJSONHash(t *testing.T, v any) string {
	t.Helper()
	h, err := JSONHash("test value", v)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
