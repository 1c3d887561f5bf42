package rayservice

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/runningreplicas"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// expectReplicas waits until the running-replicas annotation of ns/name parses to want.
func (h *harness) expectReplicas(g Gomega, ns, name string, want runningreplicas.Replicas) {
	g.Eventually(func(g Gomega) {
		value, ok := h.rayService(g, ns, name).Annotations[labels.RunningReplicas]
		g.Expect(ok).To(BeTrue(), "no %s annotation", labels.RunningReplicas)
		got, err := runningreplicas.Parse(value)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want))
	}, timeout, interval).Should(Succeed())
}

// startWorkers creates n running and ready worker Pods of group in cluster, and plays the
// RayCluster reconciler's status update that counts them (which is what reconciles the
// RayService: it does not watch Pods).
func (h *harness) startWorkers(g Gomega, ns, cluster, group string, n int) {
	ctx := context.Background()
	var rc rayv1.RayCluster
	g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rc)).To(Succeed())
	for i := range n {
		h.createPod(g, raybuilder.MakePod(fmt.Sprintf("%s-%s-worker-%d", cluster, group, i), ns).WorkerOf(cluster, group).Owner(&rc).Ready().Obj())
	}
	g.Eventually(func() error {
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rc); err != nil {
			return err
		}
		rc.Status.ReadyWorkerReplicas += int32(n)
		return h.c.Status().Update(ctx, &rc)
	}, timeout, interval).Should(Succeed())
}

func TestRunningReplicasAnnotation(t *testing.T) {
	h := startHarness(t)

	t.Run("a hub copy gets the counts of its active cluster, written once per change", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "running-replicas")
		rs := hubMade(raybuilder.MakeRayService("svc", ns).Obj())
		rc := h.deploy(g, ns, rs)
		h.expectReplicas(g, ns, "svc", runningreplicas.Replicas{Serve: map[string]int32{"fruit/MangoStand": 1}})

		h.startWorkers(g, ns, rc, raybuilder.RayServiceWorkerGroup, 2)
		h.expectReplicas(g, ns, "svc", runningreplicas.Replicas{
			Workers: map[string]int32{raybuilder.RayServiceWorkerGroup: 2},
			Serve:   map[string]int32{"fruit/MangoStand": 1},
			Held:    map[string]int32{raybuilder.RayServiceWorkerGroup: 2},
		})

		// Settled: the Serve reads go on, the counts do not move, nothing is written.
		writes := h.writes.Load()
		g.Consistently(func(g Gomega) {
			h.syncEndpoints(g, ns, "svc-serve-svc")
			g.Expect(h.writes.Load()).To(Equal(writes))
		}, settle, interval).Should(Succeed())
	})

	t.Run("a RayService without the origin labels gets none", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "running-replicas-not-hub")
		h.deploy(g, ns, raybuilder.MakeRayService("svc", ns).Obj())
		g.Consistently(func(g Gomega) {
			g.Expect(h.rayService(g, ns, "svc").Annotations).NotTo(HaveKey(labels.RunningReplicas))
		}, settle, interval).Should(Succeed())
	})
}
