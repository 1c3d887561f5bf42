package raycluster

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// A cluster coming up costs two status writes, provisioning and ready, however its Pods turn
// ready; one that stays partly up still shows its progress once progressHold has passed.
func TestStatusWritesOfAClusterComingUp(t *testing.T) {
	h := startHarness(t, nil)
	ctx := context.Background()

	// firstWrite creates a cluster of a head and two workers, named as its namespace (the
	// write counter goes by name), and waits for its Pods and its first status (provisioning).
	firstWrite := func(g Gomega, ns string) {
		g.Expect(h.c.Create(ctx, raybuilder.MakeRayCluster(ns, ns).WorkerGroup("g", 2, 0, 2).Obj())).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(h.pods(g, ns, ns, "")).To(HaveLen(3))
			g.Expect(h.writes.get(ns)).To(Equal(1))
		}, timeout, interval).Should(Succeed())
		g.Expect(conditionStatus(h.get(g, ns, ns), rayv1.RayClusterProvisioned)).To(Equal(metav1.ConditionFalse))
	}

	t.Run("Pods ready one by one: provisioning, then ready", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "one-by-one")
		firstWrite(g, ns)
		// The head first, then each worker: each step is held while the rest start.
		pods := append(h.pods(g, ns, ns, rayv1.HeadNode), h.pods(g, ns, ns, rayv1.WorkerNode)...)
		for i, p := range pods {
			h.makePodReady(g, p)
			if i < len(pods)-1 {
				g.Consistently(func() int { return h.writes.get(ns) }, "300ms", interval).Should(Equal(1))
			}
		}
		g.Eventually(func(g Gomega) {
			got := h.get(g, ns, ns)
			g.Expect(got.Status.State).To(Equal(rayv1.Ready))
			g.Expect(got.Status.ReadyWorkerReplicas).To(Equal(int32(2)))
			g.Expect(conditionStatus(got, rayv1.HeadPodReady)).To(Equal(metav1.ConditionTrue))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func() int { return h.writes.get(ns) }, "1s", interval).Should(Equal(2))
	})

	t.Run("a cluster partly up shows its progress after the hold", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "partly-up")
		firstWrite(g, ns)
		heads := h.pods(g, ns, ns, rayv1.HeadNode)
		g.Expect(heads).To(HaveLen(1))
		h.makePodReady(g, heads[0])
		g.Consistently(func() int { return h.writes.get(ns) }, "500ms", interval).Should(Equal(1))

		// The workers never turn ready. Once the hold has run out, the next reconcile (a Pod
		// event here, the hold's own requeue otherwise) writes the head ready.
		h.clock.Step(progressHold)
		worker := h.pods(g, ns, ns, rayv1.WorkerNode)[0]
		worker.Annotations = map[string]string{"poke": "1"}
		g.Expect(h.c.Update(ctx, &worker)).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := h.get(g, ns, ns)
			g.Expect(conditionStatus(got, rayv1.HeadPodReady)).To(Equal(metav1.ConditionTrue))
			g.Expect(got.Status.Head.PodIP).To(Equal("10.1.0.1"))
			g.Expect(got.Status.State).To(BeEmpty())
		}, timeout, interval).Should(Succeed())
		g.Expect(h.writes.get(ns)).To(Equal(2))
	})

	t.Run("a worker that cannot start shows at once", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "stuck")
		firstWrite(g, ns)
		worker := h.pods(g, ns, ns, rayv1.WorkerNode)[0]
		worker.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: worker.Spec.Containers[0].Name,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
		g.Expect(h.c.Status().Update(ctx, &worker)).To(Succeed())
		h.makePodReady(g, h.pods(g, ns, ns, rayv1.HeadNode)[0])
		g.Eventually(func(g Gomega) {
			g.Expect(conditionStatus(h.get(g, ns, ns), rayv1.HeadPodReady)).To(Equal(metav1.ConditionTrue))
		}, timeout, interval).Should(Succeed())
	})
}
