package raycluster

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func TestStatusPatchCarriesDesiredQuantities(t *testing.T) {
	withStatus := func(st rayv1.RayClusterStatus) *rayv1.RayCluster {
		rc := &rayv1.RayCluster{}
		rc.Namespace, rc.Name = "ns", "rc"
		rc.Status = st
		return rc
	}
	cpuMem := rayv1.RayClusterStatus{
		DesiredCPU: resource.MustParse("2"), DesiredMemory: resource.MustParse("3Gi"), DesiredWorkerReplicas: 1,
	}
	withGPU := cpuMem
	withGPU.DesiredGPU = resource.MustParse("4")
	ready := cpuMem
	ready.State = rayv1.Ready

	tests := []struct {
		name     string
		original rayv1.RayClusterStatus
		next     rayv1.RayClusterStatus
		want     map[string]any
	}{
		{
			name: "first write: zero GPU and TPU as 0",
			next: cpuMem,
			want: map[string]any{"desiredCPU": "2", "desiredMemory": "3Gi", "desiredGPU": "0", "desiredTPU": "0",
				"desiredWorkerReplicas": float64(1)},
		},
		{
			name:     "a later write repeats them next to what changed",
			original: cpuMem, next: ready,
			want: map[string]any{"desiredCPU": "2", "desiredMemory": "3Gi", "desiredGPU": "0", "desiredTPU": "0",
				"state": string(rayv1.Ready)},
		},
		{
			name:     "a changed quantity carries its new value",
			original: cpuMem, next: withGPU,
			want: map[string]any{"desiredCPU": "2", "desiredMemory": "3Gi", "desiredGPU": "4", "desiredTPU": "0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newStatusPatch(withStatus(tt.original))
			if p.Type() != types.MergePatchType {
				t.Errorf("patch type = %s, want %s", p.Type(), types.MergePatchType)
			}
			data, err := p.Data(withStatus(tt.next))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Status map[string]any `json:"status"`
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("patch %s: %v", data, err)
			}
			if d := cmp.Diff(tt.want, got.Status); d != "" {
				t.Errorf("patched status (-want +got):\n%s", d)
			}
		})
	}
}

func TestStatusPatchRefusesOtherKinds(t *testing.T) {
	if _, err := newStatusPatch(&rayv1.RayCluster{}).Data(&corev1.Pod{}); err == nil {
		t.Error("a status patch of a Pod succeeded, want an error")
	}
}
