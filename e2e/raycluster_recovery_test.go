//go:build e2e

package e2e

import (
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// A worker Pod deleted by hand is replaced; the other Pods are left alone.
func TestRayClusterReplacesDeletedWorker(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("wdel", ns).WorkerGroup("g", 2, 0, 5).Obj())
	expectReady(t, key, 2)

	g := gomega.NewWithT(t)
	before := rayPods(g, key, "")
	var victim corev1.Pod
	for _, p := range before {
		if p.Labels[labels.NodeType] == string(rayv1.WorkerNode) {
			victim = p
			break
		}
	}
	g.Expect(env.k8s.Delete(t.Context(), &victim)).To(gomega.Succeed())
	eventually(t, func(g gomega.Gomega) {
		after := uids(rayPods(g, key, ""))
		g.Expect(after).To(gomega.HaveLen(3))
		g.Expect(after).NotTo(gomega.HaveKey(victim.UID))
		for _, p := range before {
			if p.UID != victim.UID {
				g.Expect(after).To(gomega.HaveKey(p.UID), "Pod %s kept", p.Name)
			}
		}
	})
	expectReady(t, key, 2)
}

// A Pod that has terminated for good (phase Failed) is deleted and replaced, head or worker.
func TestRayClusterReplacesFailedPods(t *testing.T) {
	t.Parallel()
	for _, group := range []string{labels.HeadGroupValue, "g"} {
		t.Run(group, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			key := createRayCluster(t, raybuilder.MakeRayCluster("failed", ns).WorkerGroup("g", 1, 0, 5).Obj())
			expectReady(t, key, 1)

			g := gomega.NewWithT(t)
			failed := rayPods(g, key, group)[0]
			markFailed(t, types.NamespacedName{Namespace: ns, Name: failed.Name})
			eventually(t, func(g gomega.Gomega) {
				pods := rayPods(g, key, group)
				g.Expect(pods).To(gomega.HaveLen(1))
				g.Expect(pods[0].UID).NotTo(gomega.Equal(failed.UID), "the failed Pod is replaced")
			})
			expectReady(t, key, 1)
		})
	}
}

// markFailed does what a kubelet does when a Pod's containers exit for good.
func markFailed(t *testing.T, key types.NamespacedName) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := &corev1.Pod{}
		if err := env.k8s.Get(t.Context(), key, pod); err != nil {
			return err
		}
		pod.Status.Phase = corev1.PodFailed
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == corev1.PodReady || pod.Status.Conditions[i].Type == corev1.ContainersReady {
				pod.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
		for i := range pod.Status.ContainerStatuses {
			pod.Status.ContainerStatuses[i].Ready = false
			pod.Status.ContainerStatuses[i].State = corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"},
			}
		}
		return env.k8s.Status().Update(t.Context(), pod)
	})
	if err != nil {
		t.Fatalf("marking Pod %s Failed: %v", key, err)
	}
}
