package status

import (
	"math"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestCountWorkers(t *testing.T) {
	tests := []struct {
		name             string
		pods             []corev1.Pod
		ready, available int32
	}{
		{name: "none", pods: nil},
		{name: "head is not a worker", pods: podList(headPod().Ready())},
		{name: "ready worker", pods: podList(headPod().Ready(), workerPod("w1").Ready()), ready: 1, available: 1},
		{name: "running unready worker is available only", pods: podList(workerPod("w1").Running()), available: 1},
		{name: "running worker without PodReady condition is not ready",
			pods: podList(workerPod("w1").Phase(corev1.PodRunning)), available: 1},
		{name: "pending worker counts nowhere", pods: podList(workerPod("w1"))},
		{name: "ready condition but not running counts nowhere",
			pods: podList(workerPod("w1").Ready().Phase(corev1.PodSucceeded))},
		{name: "Pod without node-type label is ignored",
			pods: podList(raybuilder.MakePod("x", testNS).Label(labels.Cluster, testCluster).Ready())},
		{name: "mixed", pods: podList(workerPod("w1").Ready(), workerPod("w2").Ready(), workerPod("w3").Running(), workerPod("w4").Phase(corev1.PodFailed)),
			ready: 2, available: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ready, available := countWorkers(tc.pods)
			if ready != tc.ready || available != tc.available {
				t.Errorf("countWorkers = (%d, %d), want (%d, %d)", ready, available, tc.ready, tc.available)
			}
		})
	}
}

func TestWorkerReplicaCounts(t *testing.T) {
	tests := []struct {
		name                   string
		rc                     *rayv1.RayCluster
		desired, minimum, maxi int32
	}{
		{name: "no worker groups", rc: raybuilder.MakeRayCluster("c", testNS).Obj()},
		{name: "one group", rc: raybuilder.MakeRayCluster("c", testNS).WorkerGroup("a", 2, 1, 5).Obj(),
			desired: 2, minimum: 1, maxi: 5},
		{name: "replicas below min clamp up", rc: raybuilder.MakeRayCluster("c", testNS).WorkerGroup("a", 0, 3, 5).Obj(),
			desired: 3, minimum: 3, maxi: 5},
		{name: "replicas above max clamp down", rc: raybuilder.MakeRayCluster("c", testNS).WorkerGroup("a", 9, 0, 4).Obj(),
			desired: 4, minimum: 0, maxi: 4},
		{name: "multi-host groups multiply", rc: raybuilder.MakeRayCluster("c", testNS).WorkerGroup("a", 2, 1, 3).NumOfHosts("a", 4).WorkerGroup("b", 1, 1, 1).Obj(),
			desired: 9, minimum: 5, maxi: 13},
		{name: "suspended group counts nowhere", rc: raybuilder.MakeRayCluster("c", testNS).WorkerGroup("a", 2, 1, 3).WorkerGroup("b", 5, 5, 5).GroupSuspend("b", true).Obj(),
			desired: 2, minimum: 1, maxi: 3},
		{name: "unset max saturates", rc: func() *rayv1.RayCluster {
			rc := raybuilder.MakeRayCluster("c", testNS).WorkerGroup("a", 1, 0, 0).WorkerGroup("b", 1, 0, 0).Obj()
			for i := range rc.Spec.WorkerGroupSpecs {
				rc.Spec.WorkerGroupSpecs[i].MaxReplicas = nil
			}
			return rc
		}(), desired: 2, minimum: 0, maxi: math.MaxInt32},
		{name: "unset replicas means min", rc: func() *rayv1.RayCluster {
			rc := raybuilder.MakeRayCluster("c", testNS).WorkerGroup("a", 0, 2, 4).Obj()
			rc.Spec.WorkerGroupSpecs[0].Replicas = nil
			return rc
		}(), desired: 2, minimum: 2, maxi: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st rayv1.RayClusterStatus
			setReplicaCounts(&st, tc.rc, nil)
			got := [3]int32{st.DesiredWorkerReplicas, st.MinWorkerReplicas, st.MaxWorkerReplicas}
			if want := [3]int32{tc.desired, tc.minimum, tc.maxi}; got != want {
				t.Errorf("desired/min/max = %v, want %v", got, want)
			}
		})
	}
}

func TestDesiredResources(t *testing.T) {
	tests := []struct {
		name               string
		rc                 *rayv1.RayCluster
		cpu, mem, gpu, tpu string
	}{
		{name: "head only", rc: raybuilder.MakeRayCluster("c", testNS).Head("2", "4Gi").Obj(),
			cpu: "2", mem: "4Gi", gpu: "0", tpu: "0"},
		{name: "workers times replicas times hosts",
			rc:  raybuilder.MakeRayCluster("c", testNS).Head("1", "1Gi").WorkerGroup("a", 3, 0, 5).WorkerResources("a", "500m", "1Gi").NumOfHosts("a", 2).Obj(),
			cpu: "4", mem: "7Gi", gpu: "0", tpu: "0"},
		{name: "replicas are not clamped (KubeRay)",
			rc:  raybuilder.MakeRayCluster("c", testNS).Head("1", "1Gi").WorkerGroup("a", 9, 0, 2).Obj(),
			cpu: "10", mem: "10Gi", gpu: "0", tpu: "0"},
		{name: "suspended group is left out",
			rc:  raybuilder.MakeRayCluster("c", testNS).Head("1", "1Gi").WorkerGroup("a", 3, 0, 5).GroupSuspend("a", true).Obj(),
			cpu: "1", mem: "1Gi", gpu: "0", tpu: "0"},
		{name: "GPU names of every vendor and MIG slices add up",
			rc: raybuilder.MakeRayCluster("c", testNS).Head("1", "1Gi").
				GPU(labels.HeadGroupValue, "nvidia.com/gpu", "1").
				WorkerGroup("a", 2, 0, 5).GPU("a", "amd.com/gpu", "2").
				WorkerGroup("b", 1, 0, 5).GPU("b", "nvidia.com/mig-1g.5gb", "3").
				WorkerGroup("c", 1, 0, 5).GPU("c", "google.com/tpu", "4").Obj(),
			cpu: "5", mem: "5Gi", gpu: "8", tpu: "4"},
		{name: "names that merely mention gpu do not count",
			rc: raybuilder.MakeRayCluster("c", testNS).Head("1", "1Gi").
				GPU(labels.HeadGroupValue, "example.com/gpu-memory", "16").
				GPU(labels.HeadGroupValue, "nvidia.com/mig-1g.5gb-extra", "1").Obj(),
			cpu: "1", mem: "1Gi", gpu: "0", tpu: "0"},
		{name: "limit stands in for a missing request, sidecars add up",
			rc: func() *rayv1.RayCluster {
				rc := raybuilder.MakeRayCluster("c", testNS).Head("1", "1Gi").Obj()
				c := &rc.Spec.HeadGroupSpec.Template.Spec.Containers[0]
				delete(c.Resources.Requests, corev1.ResourceCPU)
				c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("3")
				rc.Spec.HeadGroupSpec.Template.Spec.Containers = append(rc.Spec.HeadGroupSpec.Template.Spec.Containers, corev1.Container{
					Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
				})
				rc.Spec.HeadGroupSpec.Template.Spec.InitContainers = []corev1.Container{{
					Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}},
				}}
				return rc
			}(),
			cpu: "3", mem: "1536Mi", gpu: "0", tpu: "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st rayv1.RayClusterStatus
			before := tc.rc.DeepCopy()
			setDesiredResources(&st, tc.rc)
			for _, c := range []struct {
				field string
				got   resource.Quantity
				want  string
			}{{"cpu", st.DesiredCPU, tc.cpu}, {"memory", st.DesiredMemory, tc.mem}, {"gpu", st.DesiredGPU, tc.gpu}, {"tpu", st.DesiredTPU, tc.tpu}} {
				if c.got.Cmp(resource.MustParse(c.want)) != 0 {
					t.Errorf("desired %s = %s, want %s", c.field, c.got.String(), c.want)
				}
			}
			if before.Spec.HeadGroupSpec.Template.Spec.Containers[0].Resources.Requests.Cpu().Cmp(*tc.rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Resources.Requests.Cpu()) != 0 {
				t.Error("the spec was modified")
			}
		})
	}
}

func TestDesiredGPUKeys(t *testing.T) {
	tests := map[corev1.ResourceName]bool{
		"nvidia.com/gpu":         true,
		"amd.com/gpu":            true,
		"example.com/vgpu":       true,
		"nvidia.com/mig-2g.32gb": true,
		"nvidia.com/mig-1g.5gb":  true,
		"nvidia.com/mig-1g.5gbx": false,
		"nvidia.com/gpu-memory":  false,
		"google.com/tpu":         false,
		"habana.ai/gaudi":        false,
	}
	for name, isGPU := range tests {
		t.Run(string(name), func(t *testing.T) {
			rc := raybuilder.MakeRayCluster("c", testNS).GPU(labels.HeadGroupValue, name, "2").
				WorkerGroup("a", 3, 0, 5).GPU("a", name, "1").Obj()
			var st rayv1.RayClusterStatus
			setDesiredResources(&st, rc)
			want := int64(0)
			if isGPU {
				want = 5
			}
			if got := st.DesiredGPU.Value(); got != want {
				t.Errorf("desiredGPU = %d, want %d", got, want)
			}
		})
	}
}
