package rayservice

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// autoscale plays the Ray autoscaler: it sets the replicas of the cluster's first worker group.
func (h *harness) autoscale(g Gomega, ns, cluster string, replicas int32) {
	g.Eventually(func() error {
		var rc rayv1.RayCluster
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cluster}, &rc); err != nil {
			return err
		}
		rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(replicas)
		return h.c.Update(context.Background(), &rc)
	}, timeout, interval).Should(Succeed())
}

// firstGroup returns the first worker group of the cluster as stored.
func (h *harness) firstGroup(g Gomega, ns, cluster string) rayv1.WorkerGroupSpec {
	var rc rayv1.RayCluster
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cluster}, &rc)).To(Succeed())
	return rc.Spec.WorkerGroupSpecs[0]
}

// The hub moves a blue/green's capacity under the autoscaler through worker-group bounds: the
// spoke applies them to the serving cluster in place, and never resets the autoscaler's
// replicas to the RayService's.
func TestAutoscaledBoundsAppliedInPlace(t *testing.T) {
	h := startHarness(t)
	g := NewWithT(t)
	ns := h.namespace(g, "autoscaled-bounds")
	rc := h.deploy(g, ns, raybuilder.MakeRayService("svc", ns).Autoscaling().ReplicaBounds(0, 0, 4).Obj())
	h.autoscale(g, ns, rc, 3)

	h.update(g, ns, "svc", func(rs *rayv1.RayService) {
		rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](1)
	})
	g.Eventually(func(g Gomega) {
		got := h.firstGroup(g, ns, rc)
		g.Expect(got.MaxReplicas).To(HaveValue(BeEquivalentTo(1)))
		g.Expect(got.Replicas).To(HaveValue(BeNumerically("<=", 1)))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(h.clusters(g, ns)).To(HaveLen(1))
		st := h.rayService(g, ns, "svc").Status
		g.Expect(st.ActiveServiceStatus.RayClusterName).To(Equal(rc))
		g.Expect(st.PendingServiceStatus.RayClusterName).To(BeEmpty())
	}, settle, interval).Should(Succeed())

	// Raising the bounds again leaves the replicas to the autoscaler, and so does a change of
	// the RayService's replicas alone.
	h.update(g, ns, "svc", func(rs *rayv1.RayService) {
		w := &rs.Spec.RayClusterSpec.WorkerGroupSpecs[0]
		w.MinReplicas, w.MaxReplicas = ptr.To[int32](2), ptr.To[int32](4)
	})
	g.Eventually(func(g Gomega) {
		got := h.firstGroup(g, ns, rc)
		g.Expect(got.MinReplicas).To(HaveValue(BeEquivalentTo(2)))
		g.Expect(got.MaxReplicas).To(HaveValue(BeEquivalentTo(4)))
		g.Expect(got.Replicas).To(HaveValue(BeEquivalentTo(2)), "a raised minReplicas takes effect at once")
	}, timeout, interval).Should(Succeed())
	h.autoscale(g, ns, rc, 3)
	h.update(g, ns, "svc", func(rs *rayv1.RayService) {
		rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4)
	})
	g.Consistently(func(g Gomega) {
		g.Expect(h.firstGroup(g, ns, rc).Replicas).To(HaveValue(BeEquivalentTo(3)))
		g.Expect(h.clusters(g, ns)).To(HaveLen(1))
	}, settle, interval).Should(Succeed())
}
