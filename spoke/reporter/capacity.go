package reporter

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Summary is what the reporter computes from the member's Nodes and Pods.
type Summary struct {
	// Allocatable sums the allocatable resources of the Nodes that count (see Usable), every
	// resource name kept (cpu, memory, pods, ephemeral-storage, nvidia.com/gpu, ...).
	Allocatable corev1.ResourceList
	// Free is Allocatable minus the requests of the Pods running on those Nodes, computed per
	// Node and never below zero on any Node.
	Free corev1.ResourceList
	// TotalNodes counts every Node.
	TotalNodes int32
	// ReadyNodes counts the Nodes whose Ready condition is True, usable or not.
	ReadyNodes int32
}

// unusableTaintPrefixes and unusableTaintKeys name the taints that mean "no new Pods here,
// whoever asks": the node lifecycle taints (not-ready, unreachable, unschedulable, the
// pressure conditions, out-of-service), the cloud provider's (uninitialized, shutdown) and
// the node autoscalers' drain marks. Any other NoSchedule/NoExecute taint (a dedicated pool,
// the nvidia.com/gpu taint GPU nodes commonly carry) keeps the Node counted: the Pods meant
// for it tolerate it, and excluding it would report a GPU cluster as having no GPUs. Which
// workloads may go to which member is the hub's business (MemberCluster taints).
var (
	unusableTaintPrefixes = []string{"node.kubernetes.io/", "node.cloudprovider.kubernetes.io/"}
	unusableTaintKeys     = map[string]bool{
		"ToBeDeletedByClusterAutoscaler": true, // cluster-autoscaler scale-down
		"karpenter.sh/disrupted":         true, // Karpenter v1 drain
		"karpenter.sh/disruption":        true, // Karpenter before v1
	}
)

// Usable reports whether node's allocatable counts as capacity: Ready, schedulable, not being
// deleted and without a taint that keeps every new Pod away (see unusableTaintPrefixes).
func Usable(node *corev1.Node) bool {
	if !NodeReady(node) || node.Spec.Unschedulable || node.DeletionTimestamp != nil {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if unusableTaintKeys[t.Key] {
			return false
		}
		for _, p := range unusableTaintPrefixes {
			if strings.HasPrefix(t.Key, p) {
				return false
			}
		}
	}
	return true
}

// NodeReady reports whether node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodTerminal reports whether pod has finished for good; such a Pod holds no resources even
// while it is still bound to its Node.
func PodTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Compute sums the capacity of nodes and subtracts what the pods bound to them request.
// Unbound Pods, terminal Pods and Pods on Nodes that do not count are ignored: they hold no
// capacity that the sum includes. Each counted Pod also takes one of its Node's "pods".
func Compute(nodes []corev1.Node, pods []corev1.Pod) Summary {
	s := Summary{Allocatable: corev1.ResourceList{}, Free: corev1.ResourceList{}}
	// Free is computed per Node first so that one overcommitted Node (static Pods bypass the
	// scheduler) does not eat into another Node's free capacity.
	free := map[string]corev1.ResourceList{}
	for i := range nodes {
		n := &nodes[i]
		s.TotalNodes++
		if NodeReady(n) {
			s.ReadyNodes++
		}
		if !Usable(n) {
			continue
		}
		add(s.Allocatable, n.Status.Allocatable)
		if _, dup := free[n.Name]; !dup {
			free[n.Name] = n.Status.Allocatable.DeepCopy()
		}
	}
	onePod := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	for i := range pods {
		p := &pods[i]
		nodeFree, ok := free[p.Spec.NodeName]
		if !ok || p.Spec.NodeName == "" || PodTerminal(p) {
			continue
		}
		subtract(nodeFree, PodRequests(p))
		subtract(nodeFree, onePod)
	}
	for _, nodeFree := range free {
		for name, q := range nodeFree {
			if q.Sign() < 0 {
				q = *resource.NewQuantity(0, q.Format)
			}
			addQuantity(s.Free, name, q)
		}
	}
	// Every allocatable resource appears in Free, zero when nothing is left.
	for name, q := range s.Allocatable {
		if _, ok := s.Free[name]; !ok {
			s.Free[name] = *resource.NewQuantity(0, q.Format)
		}
	}
	return s
}

// PodRequests is what pod takes from its Node, as the scheduler counts it (the sidecar KEP's
// formula, KEP-753): the regular containers' requests plus those of the restartable init
// containers (sidecars), or, when larger, the peak of the init phase (each regular init
// container plus the sidecars started before it); pod-level requests (spec.resources) replace
// the containers' for the resources they support; the RuntimeClass overhead is added.
//
// Only requests are read: the API server has already defaulted a missing request to its
// limit. Unlike the scheduler, an in-place resize in progress is not looked at (status
// resources): the spec's requests count, so a resize shows as soon as it is asked for.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	reqs := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(reqs, pod.Spec.Containers[i].Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			// A sidecar keeps running next to the containers, and next to every init
			// container that comes after it.
			add(reqs, c.Resources.Requests)
			add(sidecars, c.Resources.Requests)
			maxInto(initPeak, sidecars)
			continue
		}
		during := sidecars.DeepCopy()
		add(during, c.Resources.Requests)
		maxInto(initPeak, during)
	}
	maxInto(reqs, initPeak)
	if pod.Spec.Resources != nil {
		for name, q := range pod.Spec.Resources.Requests {
			if podLevelResource(name) {
				reqs[name] = q.DeepCopy()
			}
		}
	}
	add(reqs, pod.Spec.Overhead)
	return reqs
}

// podLevelResource reports whether pod-level requests of name override the containers' (the
// PodLevelResources feature supports CPU, memory and huge pages).
func podLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// add adds every quantity of delta to total.
func add(total, delta corev1.ResourceList) {
	for name, q := range delta {
		addQuantity(total, name, q)
	}
}

func addQuantity(total corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum, ok := total[name]
	if !ok {
		total[name] = q.DeepCopy()
		return
	}
	sum.Add(q)
	total[name] = sum
}

// subtract takes delta from the resources total has; requests of resources the Node does not
// offer cannot be taken from it and are ignored.
func subtract(total, delta corev1.ResourceList) {
	for name, q := range delta {
		left, ok := total[name]
		if !ok {
			continue
		}
		left.Sub(q)
		total[name] = left
	}
}

// maxInto raises every quantity of total to the one in other when that is larger.
func maxInto(total, other corev1.ResourceList) {
	for name, q := range other {
		if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
			total[name] = q.DeepCopy()
		}
	}
}
