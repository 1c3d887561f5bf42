package raybuilder

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// PodWrapper wraps a Pod under construction.
type PodWrapper struct{ corev1.Pod }

// MakePod returns a Pending Pod with one Ray container (ray-worker) and no labels.
func MakePod(name, ns string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: WorkerContainerName, Image: RayImage},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

// Obj returns a copy of the Pod built so far; the wrapper stays usable.
func (w *PodWrapper) Obj() *corev1.Pod { return w.DeepCopy() }

// Labels merges the given labels into the Pod's.
func (w *PodWrapper) Labels(l map[string]string) *PodWrapper {
	if w.ObjectMeta.Labels == nil {
		w.ObjectMeta.Labels = map[string]string{}
	}
	for k, v := range l {
		w.ObjectMeta.Labels[k] = v
	}
	return w
}

// Label sets one label.
func (w *PodWrapper) Label(key, value string) *PodWrapper {
	return w.Labels(map[string]string{key: value})
}

// Annotation sets one annotation.
func (w *PodWrapper) Annotation(key, value string) *PodWrapper {
	metav1.SetMetaDataAnnotation(&w.ObjectMeta, key, value)
	return w
}

// HeadOf gives the Pod the labels and container name of the head Pod of cluster.
func (w *PodWrapper) HeadOf(cluster string) *PodWrapper {
	w.renameRayContainer(HeadContainerName)
	return w.Labels(rayNodeLabels(cluster, rayv1.HeadNode, labels.HeadGroupValue))
}

// WorkerOf gives the Pod the labels of a worker Pod of the group in cluster.
func (w *PodWrapper) WorkerOf(cluster, group string) *PodWrapper {
	w.renameRayContainer(WorkerContainerName)
	return w.Labels(rayNodeLabels(cluster, rayv1.WorkerNode, group))
}

// Owner makes rc the Pod's controller owner.
func (w *PodWrapper) Owner(rc *rayv1.RayCluster) *PodWrapper {
	w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{
		APIVersion:         rayv1.GroupVersion.String(),
		Kind:               "RayCluster",
		Name:               rc.Name,
		UID:                rc.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	})
	return w
}

// RestartPolicy sets spec.restartPolicy, which decides whether KubeRay replaces a failed Pod.
func (w *PodWrapper) RestartPolicy(p corev1.RestartPolicy) *PodWrapper {
	w.Spec.RestartPolicy = p
	return w
}

// Phase sets status.phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper {
	w.Status.Phase = p
	return w
}

// Running puts the Pod in phase Running with its Ray container running but not ready.
func (w *PodWrapper) Running() *PodWrapper {
	w.Status.Phase = corev1.PodRunning
	w.rayStatus().State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	return w
}

// Ready makes the Pod Running and Ready (the PodReady and ContainersReady conditions True).
func (w *PodWrapper) Ready() *PodWrapper {
	w.Running()
	w.rayStatus().Ready = true
	w.Condition(corev1.ContainersReady, corev1.ConditionTrue)
	return w.Condition(corev1.PodReady, corev1.ConditionTrue)
}

// Condition sets a Pod condition, replacing one of the same type.
func (w *PodWrapper) Condition(t corev1.PodConditionType, s corev1.ConditionStatus) *PodWrapper {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == t {
			w.Status.Conditions[i].Status = s
			return w
		}
	}
	w.Status.Conditions = append(w.Status.Conditions, corev1.PodCondition{Type: t, Status: s})
	return w
}

// ContainerWaiting puts the Ray container in the waiting state (e.g. "ImagePullBackOff").
func (w *PodWrapper) ContainerWaiting(reason, message string) *PodWrapper {
	w.rayStatus().State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	return w
}

// Terminated puts the Ray container in the terminated state with a reason and exit code.
func (w *PodWrapper) Terminated(reason string, exitCode int32) *PodWrapper {
	w.rayStatus().State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode}}
	return w
}

// rayStatus returns the status of the Ray container (the first one), adding it if missing.
func (w *PodWrapper) rayStatus() *corev1.ContainerStatus {
	name := w.Spec.Containers[0].Name
	for i := range w.Status.ContainerStatuses {
		if w.Status.ContainerStatuses[i].Name == name {
			return &w.Status.ContainerStatuses[i]
		}
	}
	w.Status.ContainerStatuses = append(w.Status.ContainerStatuses, corev1.ContainerStatus{Name: name, Image: w.Spec.Containers[0].Image})
	return &w.Status.ContainerStatuses[len(w.Status.ContainerStatuses)-1]
}

// renameRayContainer renames the Ray container and its status, so the order of calls does not matter.
func (w *PodWrapper) renameRayContainer(name string) {
	old := w.Spec.Containers[0].Name
	w.Spec.Containers[0].Name = name
	for i := range w.Status.ContainerStatuses {
		if w.Status.ContainerStatuses[i].Name == old {
			w.Status.ContainerStatuses[i].Name = name
		}
	}
}

func rayNodeLabels(cluster string, nodeType rayv1.RayNodeType, group string) map[string]string {
	return map[string]string{
		labels.Cluster:    cluster,
		labels.NodeType:   string(nodeType),
		labels.Group:      group,
		labels.IsRayNode:  "yes",
		labels.Identifier: cluster + "-" + string(nodeType),
		labels.AppName:    labels.ApplicationNameValue,
		labels.CreatedBy:  labels.CreatedByValue,
	}
}
