package reporter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestTrimPodKeepsWhatComputeReads(t *testing.T) {
	full := func(p *corev1.Pod) {
		p.Labels = map[string]string{"ray.io/cluster": "x"}
		p.Annotations = map[string]string{"a": "b"}
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "shm"}}
		p.Status.PodIP = "10.0.0.1"
	}
	tests := []struct {
		name string
		pod  corev1.Pod
	}{
		{name: "no requests", pod: makePod("n", full)},
		{name: "containers", pod: makePod("n", full, container(rl("cpu", "1", "memory", "1Gi")), container(rl("nvidia.com/gpu", "2")))},
		{name: "init containers and sidecars", pod: makePod("n", full, sidecar(rl("cpu", "1")), initContainer(rl("cpu", "3")), container(rl("cpu", "1")))},
		{name: "pod-level requests and overhead", pod: makePod("n", full, container(rl("cpu", "1")), func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "2")}
			p.Spec.Overhead = rl("memory", "100Mi")
		})},
		{name: "unbound and pending", pod: makePod("", full, container(rl("cpu", "1")), phase(corev1.PodPending))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := PodRequests(&tt.pod)
			obj, err := TrimPod(tt.pod.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			got := obj.(*corev1.Pod)
			if diff := cmp.Diff(want, PodRequests(got), quantityEqual); diff != "" {
				t.Errorf("PodRequests of the trimmed Pod (-want +got):\n%s", diff)
			}
			if got.Name != tt.pod.Name || got.Namespace != tt.pod.Namespace || got.Spec.NodeName != tt.pod.Spec.NodeName ||
				got.Status.Phase != tt.pod.Status.Phase {
				t.Errorf("trimmed Pod lost its identity, Node or phase: %+v", got)
			}
			if got.Labels != nil || got.Annotations != nil || got.ManagedFields != nil || got.Spec.Volumes != nil ||
				got.Status.PodIP != "" || len(got.Spec.InitContainers) != 0 || got.Spec.Resources != nil {
				t.Errorf("trimmed Pod kept what the reporter does not read: %+v", got)
			}
		})
	}
}

func TestTrimNodeKeepsWhatComputeReads(t *testing.T) {
	full := func(n *corev1.Node) {
		n.Labels = map[string]string{"topology.kubernetes.io/zone": "a"}
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"rayproject/ray:2.46.0"}, SizeBytes: 1 << 30}}
		n.Status.Capacity = rl("cpu", "8")
		n.Status.Conditions = append(n.Status.Conditions,
			corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Message: "kubelet has sufficient memory"})
	}
	alloc := rl("cpu", "4", "nvidia.com/gpu", "1")
	tests := []struct {
		name string
		node corev1.Node
	}{
		{name: "ready", node: makeNode("a", alloc, full)},
		{name: "not ready", node: makeNode("a", alloc, full, notReady)},
		{name: "cordoned", node: makeNode("a", alloc, full, cordoned)},
		{name: "tainted", node: makeNode("a", alloc, full, tainted("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute))},
		{name: "being deleted", node: makeNode("a", alloc, full, func(n *corev1.Node) { n.DeletionTimestamp = ptr.To(metav1.Now()) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := TrimNode(tt.node.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			got := obj.(*corev1.Node)
			if Usable(got) != Usable(&tt.node) || NodeReady(got) != NodeReady(&tt.node) {
				t.Errorf("trimming changed Usable/NodeReady: got %v/%v, want %v/%v",
					Usable(got), NodeReady(got), Usable(&tt.node), NodeReady(&tt.node))
			}
			if diff := cmp.Diff(tt.node.Status.Allocatable, got.Status.Allocatable, quantityEqual); diff != "" {
				t.Errorf("allocatable (-want +got):\n%s", diff)
			}
			if got.Labels != nil || got.Status.Images != nil || got.Status.Capacity != nil || len(got.Status.Conditions) > 1 {
				t.Errorf("trimmed Node kept what the reporter does not read: %+v", got)
			}
		})
	}
}

func TestTrimIgnoresOtherObjects(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"}}}
	for name, trim := range map[string]func(any) (any, error){"TrimPod": TrimPod, "TrimNode": TrimNode} {
		got, err := trim(svc)
		if err != nil || got != any(svc) {
			t.Errorf("%s(Service) = %v, %v; want the Service unchanged", name, got, err)
		}
	}
}
