package raycluster

import (
	"fmt"
	"sort"
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// The decisions of the Pod phase, as pure functions of what was read.

// rayContainerTerminated returns the Ray container's terminated state, found by name because
// container statuses are not ordered like the containers.
func rayContainerTerminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if len(pod.Spec.Containers) == 0 {
		return nil
	}
	name := pod.Spec.Containers[0].Name
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.State.Terminated
		}
	}
	return nil
}

// shouldDeletePod decides whether a Ray Pod is beyond repair: its phase is terminal, or its Ray
// container exited and the restart policy will not bring it back. The reason is for events.
func shouldDeletePod(pod *corev1.Pod, nodeType rayv1.RayNodeType) (bool, string) {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return true, fmt.Sprintf("the %s Pod %s is %s, a terminal phase; it will be replaced",
			nodeType, pod.Name, pod.Status.Phase)
	}
	term := rayContainerTerminated(pod)
	if pod.Status.Phase == corev1.PodRunning && term != nil && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return true, fmt.Sprintf("the Ray container of the %s Pod %s exited (%s, exit code %d) and restartPolicy "+
			"is Never; it will be replaced", nodeType, pod.Name, term.Reason, term.ExitCode)
	}
	return false, ""
}

// terminating reports whether the Pod is on its way out. Such Pods are neither counted nor
// deleted again: they are gone as far as scaling is concerned.
func terminating(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil
}

// activePods drops terminating Pods.
func activePods(pods []corev1.Pod) []corev1.Pod {
	out := make([]corev1.Pod, 0, len(pods))
	for i := range pods {
		if !terminating(&pods[i]) {
			out = append(out, pods[i])
		}
	}
	return out
}

// freeIndices returns n replica indices not used by pods, lowest first, so a replaced replica
// takes back its old index.
func freeIndices(pods []corev1.Pod, n int) []int {
	used := map[int]bool{}
	for i := range pods {
		if idx, err := strconv.Atoi(pods[i].Labels[labels.WorkerReplicaIndex]); err == nil {
			used[idx] = true
		}
	}
	out := make([]int, 0, n)
	for idx := 0; len(out) < n; idx++ {
		if !used[idx] {
			out = append(out, idx)
		}
	}
	return out
}

// scaleDownAllowed: with the in-tree autoscaler on, the autoscaler alone picks which workers
// go (through workersToDelete), unless random deletion is switched on.
func scaleDownAllowed(rc *rayv1.RayCluster, randomPodDelete bool) bool {
	auto := rc.Spec.EnableInTreeAutoscaling != nil && *rc.Spec.EnableInTreeAutoscaling
	return !auto || randomPodDelete
}

// pickForScaleDown chooses which n Pods to remove: those not yet running or ready first, so a
// scale-down never removes a working node while a pending one stays; then the newest.
func pickForScaleDown(pods []corev1.Pod, n int) []corev1.Pod {
	sorted := append([]corev1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool {
		ri, rj := podReady(&sorted[i]), podReady(&sorted[j])
		if ri != rj {
			return !ri
		}
		return sorted[j].CreationTimestamp.Before(&sorted[i].CreationTimestamp)
	})
	if n > len(sorted) {
		n = len(sorted)
	}
	return sorted[:n]
}

func podReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// replicaGroups groups multi-host Pods by replica name; Pods without one are returned apart.
func replicaGroups(pods []corev1.Pod) (groups map[string][]corev1.Pod, unnamed []corev1.Pod) {
	groups = map[string][]corev1.Pod{}
	for i := range pods {
		name, ok := pods[i].Labels[labels.WorkerReplicaName]
		if !ok || name == "" {
			unnamed = append(unnamed, pods[i])
			continue
		}
		groups[name] = append(groups[name], pods[i])
	}
	return groups, unnamed
}

// sortedKeys returns a map's keys in order, so decisions do not depend on map iteration.
func sortedKeys(m map[string][]corev1.Pod) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
