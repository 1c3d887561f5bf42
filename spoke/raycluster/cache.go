package raycluster

import (
	corev1 "k8s.io/api/core/v1"
)

// TrimPod is the spoke's cache transform for Pods. A Ray Pod's spec (command, env, probes,
// volumes, sidecars) is most of its size, and the reconciler reads only the metadata, the
// status, the restart policy and the Ray container's name; keeping the rest would more than
// double the spoke's memory on a large member. Cached Pods are never written back whole: they
// are deleted by name or patched with a diff of their annotations.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	containers := make([]corev1.Container, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		containers[i] = corev1.Container{Name: pod.Spec.Containers[i].Name}
	}
	pod.Spec = corev1.PodSpec{
		Containers:    containers,
		RestartPolicy: pod.Spec.RestartPolicy,
		NodeName:      pod.Spec.NodeName,
	}
	return pod, nil
}
