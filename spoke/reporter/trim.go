package reporter

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrimPod is the transform of the reporter's Pod informer. The reporter watches every Pod of
// the member, not only Ray's, so full objects would cost more than everything else the spoke
// caches. Compute reads only a Pod's Node, phase and effective requests, so the trimmed Pod
// keeps its name, Node and phase, and one container whose requests are PodRequests of the
// original: the sidecar and init container arithmetic, the pod-level requests and the overhead
// are folded in, and PodRequests of the trimmed Pod gives the same answer. Measured on a Ray
// worker Pod with two containers and a sidecar, that is about 2.5 KiB per Pod in memory
// instead of 8 KiB, most of it the fixed size of the Pod and Container structs (Pods with long
// commands, environments or many volumes are larger in full, the same trimmed); 10,000 Pods
// cost about 25 MiB. Trimmed Pods are only read, never written.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	trimmed := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		// The informer keys objects by namespace and name; the resource version tells the
		// versions of a Pod apart when debugging.
		ObjectMeta: metav1.ObjectMeta{
			Name:            pod.Name,
			Namespace:       pod.Namespace,
			ResourceVersion: pod.ResourceVersion,
		},
		Spec:   corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	if reqs := PodRequests(pod); len(reqs) > 0 {
		trimmed.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: reqs}}}
	}
	return trimmed, nil
}

// TrimNode is the transform of the reporter's Node informer. A Node's status lists its
// container images and volumes, often tens of KiB; Usable and Compute read only the
// allocatable resources, the Ready condition, the taints and whether it is cordoned or being
// deleted.
func TrimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	trimmed := &corev1.Node{
		TypeMeta: node.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              node.Name,
			UID:               node.UID,
			ResourceVersion:   node.ResourceVersion,
			DeletionTimestamp: node.DeletionTimestamp,
		},
		Spec: corev1.NodeSpec{
			Unschedulable: node.Spec.Unschedulable,
			Taints:        node.Spec.Taints,
		},
		Status: corev1.NodeStatus{Allocatable: node.Status.Allocatable},
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			trimmed.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
			break
		}
	}
	return trimmed, nil
}
