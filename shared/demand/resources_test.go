package demand

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// rl parses a resource list from name/quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// diffLists compares resource lists by value, so "1000m" equals "1" and formats do not matter.
func diffLists(want, got corev1.ResourceList) string {
	return cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }))
}

func container(requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func TestPodResources(t *testing.T) {
	tests := []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{name: "no containers", want: corev1.ResourceList{}},
		{
			name: "requests win over limits",
			spec: corev1.PodSpec{Containers: []corev1.Container{container(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "2", "memory", "2Gi"))}},
			want: rl("cpu", "1", "memory", "1Gi"),
		},
		{
			name: "limits stand in for missing requests",
			spec: corev1.PodSpec{Containers: []corev1.Container{container(rl("cpu", "1"), rl("cpu", "2", "memory", "2Gi", "nvidia.com/gpu", "1"))}},
			want: rl("cpu", "1", "memory", "2Gi", "nvidia.com/gpu", "1"),
		},
		{
			name: "only limits",
			spec: corev1.PodSpec{Containers: []corev1.Container{container(nil, rl("cpu", "500m"))}},
			want: rl("cpu", "500m"),
		},
		{
			name: "containers are summed",
			spec: corev1.PodSpec{Containers: []corev1.Container{
				container(rl("cpu", "1", "memory", "1Gi"), nil),
				container(rl("cpu", "500m"), rl("memory", "512Mi")),
			}},
			want: rl("cpu", "1500m", "memory", "1536Mi"),
		},
		{
			name: "init containers and overhead are not counted",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container(rl("cpu", "4"), nil)},
				Containers:     []corev1.Container{container(rl("cpu", "1"), nil)},
				Overhead:       rl("cpu", "250m"),
			},
			want: rl("cpu", "1"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.spec.DeepCopy()
			got := PodResources(tt.spec)
			if d := diffLists(tt.want, got); d != "" {
				t.Errorf("PodResources() mismatch (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, &tt.spec); d != "" {
				t.Errorf("PodResources() changed its input (-before +after):\n%s", d)
			}
		})
	}
}

func TestDesiredAndMin(t *testing.T) {
	// Head: 1 CPU, 100Mi, as in KubeRay's own resource tests.
	base := func() *raybuilder.RayClusterWrapper { return raybuilder.MakeRayCluster("x", "ns").Head("1", "100Mi") }
	tests := []struct {
		name        string
		cluster     *rayv1.RayCluster
		wantDesired corev1.ResourceList
		wantMin     corev1.ResourceList
	}{
		{
			name:        "head only",
			cluster:     base().Obj(),
			wantDesired: rl("cpu", "1", "memory", "100Mi"),
			wantMin:     rl("cpu", "1", "memory", "100Mi"),
		},
		{
			name:        "one two-host group",
			cluster:     base().WorkerGroup("g", 4, 3, 5).NumOfHosts("g", 2).WorkerResources("g", "1", "200Mi").Obj(),
			wantDesired: rl("cpu", "9", "memory", "1700Mi"),
			wantMin:     rl("cpu", "7", "memory", "1300Mi"),
		},
		{
			name: "two groups of different sizes",
			cluster: base().
				WorkerGroup("a", 2, 1, 5).NumOfHosts("a", 2).WorkerResources("a", "2", "100Mi").
				WorkerGroup("b", 3, 0, 5).WorkerResources("b", "1", "200Mi").Obj(),
			wantDesired: rl("cpu", "12", "memory", "1100Mi"),
			wantMin:     rl("cpu", "5", "memory", "300Mi"),
		},
		{
			name:        "suspended group counts for nothing",
			cluster:     base().WorkerGroup("g", 3, 2, 3).NumOfHosts("g", 2).WorkerResources("g", "2", "200Mi").GroupSuspend("g", true).Obj(),
			wantDesired: rl("cpu", "1", "memory", "100Mi"),
			wantMin:     rl("cpu", "1", "memory", "100Mi"),
		},
		{
			name:        "replicas above maxReplicas are counted as written, like KubeRay's status",
			cluster:     base().WorkerGroup("g", 10, 1, 2).WorkerResources("g", "1", "1Gi").Obj(),
			wantDesired: rl("cpu", "11", "memory", "10340Mi"),
			wantMin:     rl("cpu", "2", "memory", "1124Mi"),
		},
		{
			name:        "replicas below minReplicas are counted as written",
			cluster:     base().WorkerGroup("g", 0, 2, 3).WorkerResources("g", "1", "1Gi").Obj(),
			wantDesired: rl("cpu", "1", "memory", "100Mi"),
			wantMin:     rl("cpu", "3", "memory", "2148Mi"),
		},
		{
			name: "accelerators are multiplied too",
			cluster: base().WorkerGroup("g", 2, 0, 2).NumOfHosts("g", 4).
				GPU("g", "google.com/tpu", "4").GPU("headgroup", "nvidia.com/gpu", "1").Obj(),
			wantDesired: rl("cpu", "9", "memory", "8292Mi", "google.com/tpu", "32", "nvidia.com/gpu", "1"),
			wantMin:     rl("cpu", "1", "memory", "100Mi", "nvidia.com/gpu", "1"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.cluster.DeepCopy()
			if d := diffLists(tt.wantDesired, Desired(&tt.cluster.Spec)); d != "" {
				t.Errorf("Desired() mismatch (-want +got):\n%s", d)
			}
			if d := diffLists(tt.wantMin, Min(&tt.cluster.Spec)); d != "" {
				t.Errorf("Min() mismatch (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, tt.cluster); d != "" {
				t.Errorf("changed the cluster (-before +after):\n%s", d)
			}
		})
	}
}

func TestDesiredNilReplicas(t *testing.T) {
	rc := raybuilder.MakeRayCluster("x", "ns").Head("1", "1Gi").WorkerGroup("g", 0, 1, 2).Obj()
	rc.Spec.WorkerGroupSpecs[0].Replicas = nil
	if d := diffLists(rl("cpu", "1", "memory", "1Gi"), Desired(&rc.Spec)); d != "" {
		t.Errorf("Desired() with nil replicas mismatch (-want +got):\n%s", d)
	}
}

func TestIsGPUKey(t *testing.T) {
	tests := []struct {
		name corev1.ResourceName
		want bool
	}{
		{"nvidia.com/gpu", true},
		{"amd.com/gpu", true},
		{"gpu.intel.com/i915", false},
		{"example.com/vgpu", true},
		{"nvidia.com/mig-1g.5gb", true},
		{"nvidia.com/mig-12g.128gb", true},
		{"nvidia.com/gpu-mig-12g.128gb", false},
		{"nvidia.com/mig-1g.5gb.shared", false},
		{"nvidia.com/mig-xg.5gb", false},
		{"google.com/tpu", false},
		{"cpu", false},
		{"memory", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.name), func(t *testing.T) {
			if got := IsGPUKey(tt.name); got != tt.want {
				t.Errorf("IsGPUKey(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestGPUAndTPU(t *testing.T) {
	tests := []struct {
		name             string
		list             corev1.ResourceList
		wantGPU, wantTPU string
	}{
		{name: "empty", list: corev1.ResourceList{}, wantGPU: "0", wantTPU: "0"},
		{name: "cpu and memory only", list: rl("cpu", "4", "memory", "8Gi"), wantGPU: "0", wantTPU: "0"},
		{name: "nvidia", list: rl("cpu", "4", "nvidia.com/gpu", "2"), wantGPU: "2", wantTPU: "0"},
		{name: "every GPU kind is summed", list: rl("nvidia.com/gpu", "2", "amd.com/gpu", "1", "nvidia.com/mig-1g.5gb", "3"), wantGPU: "6", wantTPU: "0"},
		{name: "zero GPUs are skipped", list: rl("nvidia.com/gpu", "0", "amd.com/gpu", "1"), wantGPU: "1", wantTPU: "0"},
		{name: "tpu", list: rl("google.com/tpu", "8", "nvidia.com/gpu", "1"), wantGPU: "1", wantTPU: "8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gpu, tpu := GPU(tt.list), TPU(tt.list)
			if gpu.Cmp(resource.MustParse(tt.wantGPU)) != 0 {
				t.Errorf("GPU() = %s, want %s", gpu.String(), tt.wantGPU)
			}
			if tpu.Cmp(resource.MustParse(tt.wantTPU)) != 0 {
				t.Errorf("TPU() = %s, want %s", tpu.String(), tt.wantTPU)
			}
		})
	}
}
