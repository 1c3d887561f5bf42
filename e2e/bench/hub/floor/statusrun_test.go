package floor

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/scheme"
)

// TestStatusWriter feeds the status writer a copy turning Ready, as the copies' watch would,
// and checks what reaches the hub: both statuses patched, the endpoint counted, the rollout's
// events created, and a copy seen again unchanged writing nothing more.
func TestStatusWriter(t *testing.T) {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(10 * time.Second)
	g.SetDefaultEventuallyPollingInterval(10 * time.Millisecond)
	sch, err := scheme.New()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	placed := placedOn("sim-000", "sim-001")
	hub := fake.NewClientBuilder().WithScheme(sch).WithObjects(placed.rs.DeepCopy(), placed.binding.DeepCopy()).
		WithStatusSubresource(&rayv1.RayService{}, &fleetv1alpha1.RayServiceBinding{}).Build()
	w := New(hub, []Member{{Name: "sim-000"}, {Name: "sim-001"}})
	w.status.remember(placed)
	ctx, cancel := context.WithCancel(t.Context())
	stopped, err := w.StartStatus(ctx, &fleetv1alpha1.RolloutStrategy{SoakSeconds: new(int32)}, DefaultWorkers)
	g.Expect(err).NotTo(gomega.HaveOccurred())

	// The list a watch starts with: the copies as applied, no change.
	for _, m := range []string{"sim-000", "sim-001"} {
		w.ObserveCopy(placed.copies[m].DeepCopy())
	}
	g.Consistently(w.Calls, 200*time.Millisecond).Should(gomega.BeZero())

	ready := placedOn("sim-000", "sim-001")
	turnReady(ready, "sim-001")
	w.ObserveCopy(ready.copies["sim-001"])
	key := client.ObjectKey{Namespace: "bench", Name: "rs"}
	endpoints := func() int32 {
		var rs rayv1.RayService
		g.Expect(hub.Get(ctx, key, &rs)).To(gomega.Succeed())
		return rs.Status.NumServeEndpoints
	}
	g.Eventually(endpoints).Should(gomega.Equal(int32(1)))
	g.Eventually(func() fleetv1alpha1.ClusterRolloutPhase {
		var b fleetv1alpha1.RayServiceBinding
		g.Expect(hub.Get(ctx, key, &b)).To(gomega.Succeed())
		for _, c := range b.Status.Clusters {
			if c.Name == "sim-001" {
				return c.RolloutPhase
			}
		}
		return ""
	}).Should(gomega.Equal(fleetv1alpha1.ClusterDone))
	g.Eventually(func() []string {
		var evs eventsv1.EventList
		g.Expect(hub.List(ctx, &evs)).To(gomega.Succeed())
		var reasons []string
		for _, ev := range evs.Items {
			reasons = append(reasons, ev.Reason)
		}
		return reasons
	}).Should(gomega.ConsistOf("ClusterDone"))
	g.Eventually(w.StatusIdle).Should(gomega.BeTrue())
	// Two status patches and one event.
	g.Expect(w.Calls()).To(gomega.Equal(int64(3)))

	w.ObserveCopy(ready.copies["sim-001"].DeepCopy())
	g.Consistently(w.Calls, 200*time.Millisecond).Should(gomega.Equal(int64(3)))
	cancel()
	stopped()
	g.Expect(w.StatusFailures()).To(gomega.BeZero())
}
