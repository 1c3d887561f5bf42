package raycluster

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestTrimPodKeepsWhatTheReconcilerReads(t *testing.T) {
	exited := &corev1.ContainerStateTerminated{ExitCode: 1}
	pod := rayPod("p", corev1.PodRunning, corev1.RestartPolicyNever, exited)
	pod.Labels = map[string]string{labels.Cluster: "rc", labels.NodeType: "worker"}
	pod.Annotations = map[string]string{labels.UpgradeStrategyRecreateHash: "h"}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_ADDRESS", Value: "x"}}
	pod.Spec.Containers[0].Command = []string{"/bin/bash", "-c", "ray start"}
	pod.Spec.Volumes = []corev1.Volume{{Name: "shm"}}
	pod.Spec.NodeName = "node-1"
	wantDelete, _ := shouldDeletePod(&pod, rayv1.WorkerNode)

	out, err := TrimPod(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if del, _ := shouldDeletePod(got, rayv1.WorkerNode); del != wantDelete {
		t.Fatalf("shouldDeletePod changed after trimming: %v, want %v", del, wantDelete)
	}
	if got.ManagedFields != nil || got.Spec.Volumes != nil || got.Spec.Containers[0].Env != nil || got.Spec.Containers[0].Command != nil {
		t.Fatalf("spec not trimmed: %+v", got.Spec)
	}
	if got.Labels[labels.Cluster] != "rc" || got.Annotations[labels.UpgradeStrategyRecreateHash] != "h" ||
		got.Spec.NodeName != "node-1" || len(got.Status.ContainerStatuses) != 2 || len(got.Spec.Containers) != 2 {
		t.Fatalf("trimmed away what the reconciler reads: %+v", got)
	}
	if same, _ := TrimPod(&corev1.Service{}); same == nil {
		t.Fatal("other kinds pass through")
	}
}
