package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestDemandOf(t *testing.T) {
	// Every builder RayService has a head of 1 CPU / 2Gi and a group "small" of 1 CPU / 1Gi
	// workers, bounds 0..5.
	tests := []struct {
		name string
		rs   *rayv1.RayService
		want corev1.ResourceList
	}{
		{name: "nil", want: corev1.ResourceList{}},
		{
			name: "head and one worker",
			rs:   raybuilder.MakeRayService("x", "ns").Obj(),
			want: rl("cpu", "2", "memory", "3Gi"),
		},
		{
			name: "replicas times workers",
			rs:   raybuilder.MakeRayService("x", "ns").Replicas(0, 4).Obj(),
			want: rl("cpu", "5", "memory", "6Gi"),
		},
		{
			name: "replicas above maxReplicas: only maxReplicas Pods are made",
			rs:   raybuilder.MakeRayService("x", "ns").Replicas(0, 9).Obj(),
			want: rl("cpu", "6", "memory", "7Gi"),
		},
		{
			name: "replicas below minReplicas: minReplicas Pods are made",
			rs:   raybuilder.MakeRayService("x", "ns").Replicas(0, 0).ReplicaBounds(0, 2, 5).Obj(),
			want: rl("cpu", "3", "memory", "4Gi"),
		},
		{
			name: "two groups",
			rs:   raybuilder.MakeRayService("x", "ns").WorkerGroup("more", 2).Obj(),
			want: rl("cpu", "4", "memory", "5Gi"),
		},
		{
			name: "GPUs by name, multi-host groups count every host",
			rs: withCluster(raybuilder.MakeRayService("x", "ns").Obj(), func(spec *rayv1.RayClusterSpec) {
				gpu := raybuilder.MakeRayCluster("c", "ns").
					WorkerGroup("nv", 2, 0, 4).GPU("nv", "nvidia.com/gpu", "4").
					WorkerGroup("tpu", 1, 0, 1).NumOfHosts("tpu", 4).GPU("tpu", "google.com/tpu", "4").
					GPU("headgroup", "amd.com/gpu", "1").Obj()
				*spec = gpu.Spec
			}),
			want: rl("cpu", "7", "memory", "8Gi", "nvidia.com/gpu", "8", "google.com/tpu", "16", "amd.com/gpu", "1"),
		},
		{
			name: "suspended group needs nothing",
			rs: withCluster(raybuilder.MakeRayService("x", "ns").Replicas(0, 3).Obj(), func(spec *rayv1.RayClusterSpec) {
				s := true
				spec.WorkerGroupSpecs[0].Suspend = &s
			}),
			want: rl("cpu", "1", "memory", "2Gi"),
		},
		{
			name: "suspended cluster still needs its room",
			rs:   raybuilder.MakeRayService("x", "ns").Suspend(true).Obj(),
			want: rl("cpu", "2", "memory", "3Gi"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DemandOf(tt.rs)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("DemandOf() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDemandOfDoesNotModifyTheRayService(t *testing.T) {
	rs := raybuilder.MakeRayService("x", "ns").Replicas(0, 3).Obj()
	before := rs.DeepCopy()
	DemandOf(rs)
	DemandOf(rs)
	if diff := cmp.Diff(before, rs); diff != "" {
		t.Errorf("DemandOf changed the RayService (-before +after):\n%s", diff)
	}
}

func withCluster(rs *rayv1.RayService, edit func(*rayv1.RayClusterSpec)) *rayv1.RayService {
	edit(&rs.Spec.RayClusterSpec)
	return rs
}
