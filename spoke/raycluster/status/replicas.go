package status

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/demand"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// setReplicaCounts fills the worker replica counters from the observed Pods and the spec.
func setReplicaCounts(st *rayv1.RayClusterStatus, rc *rayv1.RayCluster, pods []corev1.Pod) {
	st.ReadyWorkerReplicas, st.AvailableWorkerReplicas = countWorkers(pods)
	st.DesiredWorkerReplicas = demand.DesiredWorkers(&rc.Spec)
	st.MinWorkerReplicas = demand.MinWorkers(&rc.Spec)
	st.MaxWorkerReplicas = demand.MaxWorkers(&rc.Spec)
}

// countWorkers returns how many worker Pods are running and ready (ready) and how many are
// merely running (available). Head Pods and Pods without the node-type label do not count.
func countWorkers(pods []corev1.Pod) (ready, available int32) {
	for i := range pods {
		p := &pods[i]
		if p.Labels[labels.NodeType] != string(rayv1.WorkerNode) || p.Status.Phase != corev1.PodRunning {
			continue
		}
		available++
		if podReadyStatus(p) == corev1.ConditionTrue {
			ready++
		}
	}
	return ready, available
}

// setDesiredResources fills desiredCPU/Memory/GPU/TPU from the spec. Note that KubeRay's
// resource sums use replicas as written while desiredWorkerReplicas clamps them to
// [minReplicas, maxReplicas]; shared/demand keeps that difference.
func setDesiredResources(st *rayv1.RayClusterStatus, rc *rayv1.RayCluster) {
	total := demand.Desired(&rc.Spec)
	st.DesiredCPU = total[corev1.ResourceCPU]
	st.DesiredMemory = total[corev1.ResourceMemory]
	st.DesiredGPU = demand.GPU(total)
	st.DesiredTPU = demand.TPU(total)
}
