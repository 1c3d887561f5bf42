package reporter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// quantityEqual compares quantities by value: "1" and "1000m" are the same CPU.
var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// rl builds a ResourceList from name, quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// nodeOpt changes a test Node.
type nodeOpt func(*corev1.Node)

func makeNode(name string, alloc corev1.ResourceList, opts ...nodeOpt) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: alloc,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func notReady(n *corev1.Node) {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
}

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

func tainted(key string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	}
}

// podOpt changes a test Pod.
type podOpt func(*corev1.Pod)

func makePod(node string, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func container(req corev1.ResourceList) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Resources: corev1.ResourceRequirements{Requests: req}})
	}
}

func initContainer(req corev1.ResourceList) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Resources: corev1.ResourceRequirements{Requests: req}})
	}
}

func sidecar(req corev1.ResourceList) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
			Resources:     corev1.ResourceRequirements{Requests: req},
		})
	}
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		pod  corev1.Pod
		want corev1.ResourceList
	}{
		{
			name: "no containers request nothing",
			pod:  makePod("n"),
			want: corev1.ResourceList{},
		},
		{
			name: "containers are summed, every resource name kept",
			pod: makePod("n", container(rl("cpu", "1", "memory", "1Gi", "nvidia.com/gpu", "1")),
				container(rl("cpu", "500m", "example.com/fpga", "2"))),
			want: rl("cpu", "1500m", "memory", "1Gi", "nvidia.com/gpu", "1", "example.com/fpga", "2"),
		},
		{
			name: "a larger init container raises the request",
			pod:  makePod("n", container(rl("cpu", "1", "memory", "1Gi")), initContainer(rl("cpu", "3"))),
			want: rl("cpu", "3", "memory", "1Gi"),
		},
		{
			name: "a smaller init container changes nothing",
			pod:  makePod("n", container(rl("cpu", "2")), initContainer(rl("cpu", "1")), initContainer(rl("cpu", "1500m"))),
			want: rl("cpu", "2"),
		},
		{
			name: "init containers run one at a time: the largest counts, not their sum",
			pod:  makePod("n", initContainer(rl("cpu", "2")), initContainer(rl("cpu", "3"))),
			want: rl("cpu", "3"),
		},
		{
			name: "a sidecar counts like a container",
			pod:  makePod("n", sidecar(rl("cpu", "500m")), container(rl("cpu", "1"))),
			want: rl("cpu", "1500m"),
		},
		{
			name: "an init container after a sidecar runs next to it",
			pod:  makePod("n", sidecar(rl("cpu", "1")), initContainer(rl("cpu", "3")), container(rl("cpu", "1"))),
			want: rl("cpu", "4"), // init phase peak 1+3 > steady 1+1
		},
		{
			name: "an init container before a sidecar does not run next to it",
			pod:  makePod("n", initContainer(rl("cpu", "3")), sidecar(rl("cpu", "1")), container(rl("cpu", "1"))),
			want: rl("cpu", "3"), // peak 3 > steady 2
		},
		{
			name: "overhead is added",
			pod: makePod("n", container(rl("cpu", "1")), func(p *corev1.Pod) {
				p.Spec.Overhead = rl("cpu", "250m", "memory", "120Mi")
			}),
			want: rl("cpu", "1250m", "memory", "120Mi"),
		},
		{
			name: "pod-level requests replace cpu and memory, not other resources",
			pod: makePod("n", container(rl("cpu", "1", "memory", "1Gi", "nvidia.com/gpu", "2")), func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "4", "memory", "8Gi", "nvidia.com/gpu", "7")}
			}),
			want: rl("cpu", "4", "memory", "8Gi", "nvidia.com/gpu", "2"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodRequests(&tt.pod)
			if diff := cmp.Diff(tt.want, got, quantityEqual); diff != "" {
				t.Errorf("PodRequests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsable(t *testing.T) {
	alloc := rl("cpu", "4")
	tests := []struct {
		name string
		node corev1.Node
		want bool
	}{
		{name: "ready", node: makeNode("n", alloc), want: true},
		{name: "not ready", node: makeNode("n", alloc, notReady), want: false},
		{name: "no Ready condition", node: makeNode("n", alloc, func(n *corev1.Node) { n.Status.Conditions = nil }), want: false},
		{name: "cordoned", node: makeNode("n", alloc, cordoned), want: false},
		{name: "being deleted", node: makeNode("n", alloc, func(n *corev1.Node) {
			n.DeletionTimestamp = ptr.To(metav1.Now())
		}), want: false},
		{name: "unreachable taint", node: makeNode("n", alloc, tainted("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute)), want: false},
		{name: "disk pressure taint", node: makeNode("n", alloc, tainted("node.kubernetes.io/disk-pressure", corev1.TaintEffectNoSchedule)), want: false},
		{name: "cloud provider uninitialized", node: makeNode("n", alloc, tainted("node.cloudprovider.kubernetes.io/uninitialized", corev1.TaintEffectNoSchedule)), want: false},
		{name: "cluster-autoscaler scale-down", node: makeNode("n", alloc, tainted("ToBeDeletedByClusterAutoscaler", corev1.TaintEffectNoSchedule)), want: false},
		{name: "karpenter drain", node: makeNode("n", alloc, tainted("karpenter.sh/disrupted", corev1.TaintEffectNoSchedule)), want: false},
		{name: "GPU taint is tolerated by the Pods meant for it", node: makeNode("n", alloc, tainted("nvidia.com/gpu", corev1.TaintEffectNoSchedule)), want: true},
		{name: "dedicated pool", node: makeNode("n", alloc, tainted("dedicated", corev1.TaintEffectNoExecute)), want: true},
		{name: "lifecycle taint with PreferNoSchedule", node: makeNode("n", alloc, tainted("node.kubernetes.io/unschedulable", corev1.TaintEffectPreferNoSchedule)), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Usable(&tt.node); got != tt.want {
				t.Errorf("Usable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name  string
		nodes []corev1.Node
		pods  []corev1.Pod
		want  Summary
	}{
		{
			name: "empty cluster",
			want: Summary{Allocatable: corev1.ResourceList{}, Free: corev1.ResourceList{}},
		},
		{
			name: "usable nodes are summed and pods subtracted, one pod slot each",
			nodes: []corev1.Node{
				makeNode("a", rl("cpu", "4", "memory", "16Gi", "pods", "110")),
				makeNode("b", rl("cpu", "8", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "8")),
			},
			pods: []corev1.Pod{
				makePod("a", container(rl("cpu", "1", "memory", "2Gi"))),
				makePod("b", container(rl("cpu", "2", "nvidia.com/gpu", "4"))),
				makePod("b", container(rl("memory", "4Gi"))),
			},
			want: Summary{
				Allocatable: rl("cpu", "12", "memory", "48Gi", "pods", "220", "nvidia.com/gpu", "8"),
				Free:        rl("cpu", "9", "memory", "42Gi", "pods", "217", "nvidia.com/gpu", "4"),
				TotalNodes:  2, ReadyNodes: 2,
			},
		},
		{
			name: "unusable nodes count in totals only, and their pods are ignored",
			nodes: []corev1.Node{
				makeNode("ok", rl("cpu", "4")),
				makeNode("down", rl("cpu", "4"), notReady),
				makeNode("cordoned", rl("cpu", "4"), cordoned),
				makeNode("draining", rl("cpu", "4"), tainted("ToBeDeletedByClusterAutoscaler", corev1.TaintEffectNoSchedule)),
			},
			pods: []corev1.Pod{
				makePod("ok", container(rl("cpu", "1"))),
				makePod("cordoned", container(rl("cpu", "3"))),
			},
			want: Summary{
				Allocatable: rl("cpu", "4"),
				Free:        rl("cpu", "3"),
				TotalNodes:  4, ReadyNodes: 3,
			},
		},
		{
			name:  "terminal, unbound and orphaned pods hold nothing",
			nodes: []corev1.Node{makeNode("a", rl("cpu", "4", "pods", "10"))},
			pods: []corev1.Pod{
				makePod("a", container(rl("cpu", "1")), phase(corev1.PodSucceeded)),
				makePod("a", container(rl("cpu", "1")), phase(corev1.PodFailed)),
				makePod("", container(rl("cpu", "1")), phase(corev1.PodPending)),
				makePod("gone", container(rl("cpu", "1"))),
				makePod("a", container(rl("cpu", "500m")), phase(corev1.PodPending)),
			},
			want: Summary{
				Allocatable: rl("cpu", "4", "pods", "10"),
				Free:        rl("cpu", "3500m", "pods", "9"),
				TotalNodes:  1, ReadyNodes: 1,
			},
		},
		{
			name: "an overcommitted node is zero, not negative, and does not eat another node's capacity",
			nodes: []corev1.Node{
				makeNode("full", rl("cpu", "2", "memory", "1Gi")),
				makeNode("idle", rl("cpu", "2", "memory", "1Gi")),
			},
			pods: []corev1.Pod{makePod("full", container(rl("cpu", "3", "memory", "512Mi")))},
			want: Summary{
				Allocatable: rl("cpu", "4", "memory", "2Gi"),
				Free:        rl("cpu", "2", "memory", "1536Mi"),
				TotalNodes:  2, ReadyNodes: 2,
			},
		},
		{
			name:  "requests of resources the node does not offer are ignored",
			nodes: []corev1.Node{makeNode("a", rl("cpu", "2"))},
			pods:  []corev1.Pod{makePod("a", container(rl("cpu", "1", "nvidia.com/gpu", "1")))},
			want: Summary{
				Allocatable: rl("cpu", "2"),
				Free:        rl("cpu", "1"),
				TotalNodes:  1, ReadyNodes: 1,
			},
		},
		{
			name: "a resource used up on every node stays in Free as zero",
			nodes: []corev1.Node{
				makeNode("a", rl("cpu", "2", "nvidia.com/gpu", "1")),
			},
			pods: []corev1.Pod{makePod("a", container(rl("nvidia.com/gpu", "1")))},
			want: Summary{
				Allocatable: rl("cpu", "2", "nvidia.com/gpu", "1"),
				Free:        rl("cpu", "2", "nvidia.com/gpu", "0"),
				TotalNodes:  1, ReadyNodes: 1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(tt.nodes, tt.pods)
			if diff := cmp.Diff(tt.want, got, quantityEqual); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
		})
	}
}

// TestComputeDoesNotChangeItsInput guards the cached objects Compute is given: a Node's
// allocatable list must not become its free list.
func TestComputeDoesNotChangeItsInput(t *testing.T) {
	nodes := []corev1.Node{makeNode("a", rl("cpu", "2"))}
	pods := []corev1.Pod{makePod("a", container(rl("cpu", "1")), initContainer(rl("cpu", "2")))}
	Compute(nodes, pods)
	Compute(nodes, pods)
	if got := nodes[0].Status.Allocatable[corev1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("node allocatable cpu = %s after Compute, want 2", got.String())
	}
	if got := pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("container request cpu = %s after Compute, want 1", got.String())
	}
}
