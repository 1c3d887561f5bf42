package fleet

import (
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestGreenDemand(t *testing.T) {
	rs := raybuilder.MakeRayService("svc", "ns").Replicas(0, 4).Obj()
	rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		"nvidia.com/gpu": resource.MustParse("1"),
	}
	for _, tt := range []struct {
		capacity int32
		wantGPUs int64
	}{{25, 1}, {50, 2}, {60, 3}, {100, 4}} {
		d := greenDemand(rs, tt.capacity, "green's first step")
		if d == nil {
			t.Fatalf("greenDemand(%d%%) = nil", tt.capacity)
		}
		got := d.Demand["nvidia.com/gpu"]
		if got.Value() != tt.wantGPUs || d.For != "green's first step" {
			t.Errorf("greenDemand(%d%%) = %s GPUs for %q, want %d", tt.capacity, got.String(), d.For, tt.wantGPUs)
		}
	}
	broken := rs.DeepCopy()
	broken.Spec.ServeConfigV2 = "applications: 3"
	if d := greenDemand(broken, 25, ""); d != nil {
		t.Errorf("greenDemand of a config that does not parse = %+v, want nil", d)
	}
}

func TestAsResized(t *testing.T) {
	base := raybuilder.MakeRayService("svc", "ns").Obj()
	base.Annotations = map[string]string{labels.SpecHash: "full"}
	withCapacity := func(green, blue int32) *group {
		return &group{binding: &fleetv1alpha1.RayServiceBinding{Status: fleetv1alpha1.RayServiceBindingStatus{
			Rollout: &fleetv1alpha1.RolloutStatus{BlueGreen: &fleetv1alpha1.BlueGreenStatus{
				Blue: []string{"east"}, Green: []string{"west"},
				Capacity: &fleetv1alpha1.BlueGreenCapacityStatus{Direction: fleetv1alpha1.CapacityForward, Green: green, Blue: blue},
			}},
		}}}
	}
	copyWith := func(annotations map[string]string) *rayv1.RayService {
		c := base.DeepCopy()
		c.Annotations = annotations
		return c
	}
	tests := []struct {
		name      string
		g         *group
		member    *rayv1.RayService
		cluster   string
		wantHash  string
		wantLine  string
		unchanged bool
	}{
		{name: "a copy at full size is judged as it is", g: withCapacity(25, 100),
			member: copyWith(map[string]string{labels.SpecHash: "full"}), cluster: "west", unchanged: true},
		{name: "a copy resized from another spec is judged as it is", g: withCapacity(25, 100),
			member: copyWith(map[string]string{labels.SpecHash: "resized", labels.BaseSpecHash: "other"}), cluster: "west", unchanged: true},
		{name: "green resized: its own hash, Serve at green's recorded capacity", g: withCapacity(25, 100),
			member:  copyWith(map[string]string{labels.SpecHash: "resized", labels.BaseSpecHash: "full"}),
			cluster: "west", wantHash: "resized", wantLine: "target_capacity: 25"},
		{name: "blue resized: blue's capacity", g: withCapacity(50, 75),
			member:  copyWith(map[string]string{labels.SpecHash: "resized", labels.BaseSpecHash: "full"}),
			cluster: "east", wantHash: "resized", wantLine: "target_capacity: 75"},
		{name: "no capacity recorded any more: the hash only", g: &group{},
			member:  copyWith(map[string]string{labels.SpecHash: "resized", labels.BaseSpecHash: "full"}),
			cluster: "west", wantHash: "resized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := asResized(tt.g, tt.member, base, tt.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if tt.unchanged {
				if got != base {
					t.Fatalf("asResized() = a new object, want desired itself")
				}
				return
			}
			if got.Annotations[labels.SpecHash] != tt.wantHash {
				t.Errorf("SpecHash = %q, want %q", got.Annotations[labels.SpecHash], tt.wantHash)
			}
			if tt.wantLine == "" && got.Spec.ServeConfigV2 != base.Spec.ServeConfigV2 {
				t.Errorf("Serve config changed without a recorded capacity:\n%s", got.Spec.ServeConfigV2)
			}
			if tt.wantLine != "" && !strings.Contains(got.Spec.ServeConfigV2, tt.wantLine) {
				t.Errorf("Serve config lacks %q:\n%s", tt.wantLine, got.Spec.ServeConfigV2)
			}
			if base.Annotations[labels.SpecHash] != "full" {
				t.Fatalf("desired was modified")
			}
		})
	}
}
