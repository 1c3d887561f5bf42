package raycluster

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestReplacesDeletedWorkerAndReportsItReady(t *testing.T) {
	h := startHarness(t, nil)
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.namespace(t, g, "replace")
	g.Expect(h.c.Create(ctx, raybuilder.MakeRayCluster("rc", ns).WorkerGroup("g", 2, 0, 5).Obj())).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(h.pods(g, ns, "rc", "")).To(HaveLen(3)) }, timeout, interval).Should(Succeed())
	h.makeReady(g, ns, "rc")
	g.Eventually(func(g Gomega) {
		g.Expect(h.get(g, ns, "rc").Status.ReadyWorkerReplicas).To(Equal(int32(2)))
	}, timeout, interval).Should(Succeed())

	victim := h.pods(g, ns, "rc", rayv1.WorkerNode)[0]
	g.Expect(h.c.Delete(ctx, &victim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		workers := h.pods(g, ns, "rc", rayv1.WorkerNode)
		g.Expect(workers).To(HaveLen(2))
		for _, p := range workers {
			g.Expect(p.UID).NotTo(Equal(victim.UID))
		}
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(h.get(g, ns, "rc").Status.ReadyWorkerReplicas).To(Equal(int32(1)))
	}, timeout, interval).Should(Succeed())
	h.makeReady(g, ns, "rc")
	g.Eventually(func(g Gomega) {
		g.Expect(h.get(g, ns, "rc").Status.ReadyWorkerReplicas).To(Equal(int32(2)))
	}, timeout, interval).Should(Succeed())
}
