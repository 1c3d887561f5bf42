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

// A cluster coming up writes its head's readiness at once, the moment the head Pod is Ready
// (a RayService waits on it), and its workers' progress with ready; a worker that turns ready
// before the head still shows once progressHold has passed. The fake clock stands still
// except where a subtest steps it, so a change held is never written unless it steps it.
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

	t.Run("head ready at once, then the workers with ready", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "head-first")
		firstWrite(g, ns)
		heads := h.pods(g, ns, ns, rayv1.HeadNode)
		g.Expect(heads).To(HaveLen(1))
		h.makePodReady(g, heads[0])
		g.Eventually(func(g Gomega) {
			got := h.get(g, ns, ns)
			g.Expect(conditionStatus(got, rayv1.HeadPodReady)).To(Equal(metav1.ConditionTrue))
			g.Expect(got.Status.State).To(BeEmpty())
		}, timeout, interval).Should(Succeed())
		g.Expect(h.writes.get(ns)).To(Equal(2))

		// Each worker but the last is held while the rest start.
		workers := h.pods(g, ns, ns, rayv1.WorkerNode)
		for i, p := range workers {
			h.makePodReady(g, p)
			if i < len(workers)-1 {
				g.Consistently(func() int { return h.writes.get(ns) }, "300ms", interval).Should(Equal(2))
			}
		}
		g.Eventually(func(g Gomega) {
			got := h.get(g, ns, ns)
			g.Expect(got.Status.State).To(Equal(rayv1.Ready))
			g.Expect(got.Status.ReadyWorkerReplicas).To(Equal(int32(2)))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func() int { return h.writes.get(ns) }, "1s", interval).Should(Equal(3))
	})

	t.Run("a worker ready before the head shows after the hold", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "partly-up")
		firstWrite(g, ns)
		workers := h.pods(g, ns, ns, rayv1.WorkerNode)
		g.Expect(workers).To(HaveLen(2))
		h.makePodReady(g, workers[0])
		g.Consistently(func() int { return h.writes.get(ns) }, "500ms", interval).Should(Equal(1))

		// Nothing else turns ready. Once the hold has run out, the next reconcile (a Pod event
		// here, the hold's own requeue otherwise) writes the worker's progress.
		h.clock.Step(progressHold)
		poked := h.pods(g, ns, ns, rayv1.WorkerNode)[1]
		poked.Annotations = map[string]string{"poke": "1"}
		g.Expect(h.c.Update(ctx, &poked)).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := h.get(g, ns, ns)
			g.Expect(got.Status.ReadyWorkerReplicas).To(Equal(int32(1)))
			g.Expect(conditionStatus(got, rayv1.HeadPodReady)).To(Equal(metav1.ConditionFalse))
			g.Expect(got.Status.State).To(BeEmpty())
		}, timeout, interval).Should(Succeed())
		g.Expect(h.writes.get(ns)).To(Equal(2))
	})

	t.Run("a worker that cannot start shows the progress at once", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "stuck")
		firstWrite(g, ns)
		workers := h.pods(g, ns, ns, rayv1.WorkerNode)
		g.Expect(workers).To(HaveLen(2))
		stuck := workers[0]
		stuck.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: stuck.Spec.Containers[0].Name,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
		g.Expect(h.c.Status().Update(ctx, &stuck)).To(Succeed())
		h.makePodReady(g, workers[1])
		g.Eventually(func(g Gomega) {
			g.Expect(h.get(g, ns, ns).Status.ReadyWorkerReplicas).To(Equal(int32(1)))
		}, timeout, interval).Should(Succeed())
	})
}
