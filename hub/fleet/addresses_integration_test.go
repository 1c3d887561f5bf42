package fleet

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// A member is trusted with no more serve addresses than its MemberCluster grants: one naming
// the traffic cluster's API server gets no backend, granted or not, and one outside its
// MemberCluster's CIDRs gets none until they include it; the others keep the traffic.
func TestFleetServeAddressesBounded(t *testing.T) {
	h := startBlueGreen(t, "a", "b")
	g := NewWithT(t)
	ctx := context.Background()
	h.createPolicy(g, "routed", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), Traffic: trafficOnHub()})
	h.createRayService(g, "svc", "routed")
	reports := map[string]string{"a": "kubernetes.default.svc.cluster.local:443", "b": "10.0.0.2:8000"}
	for _, m := range []string{"a", "b"} {
		h.serve(g, m, "svc")
		g.Eventually(func(g Gomega) {
			rs := h.memberCopy(g, m, "svc")
			g.Expect(rs).NotTo(BeNil())
			if rs.Annotations[labels.ServeAddress] != reports[m] {
				rs.Annotations[labels.ServeAddress] = reports[m]
				g.Expect(h.members[m].Update(ctx, rs)).To(Succeed())
			}
		}, timeout, interval).Should(Succeed())
	}
	shifting := func(g Gomega) string {
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		return c.Message
	}

	t.Log("the API server's name gets no backend; b, ungranted, keeps all of the traffic")
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"b": 10000}))
		g.Expect(shifting(g)).To(ContainSubstring("serve address refused: kubernetes.default.svc.cluster.local is under .cluster.local"))
	}, timeout, interval).Should(Succeed())

	t.Log("b's MemberCluster grants another range: b's address gets no backend either")
	grant := func(cidrs ...string) {
		g.Eventually(func(g Gomega) {
			var mc fleetv1alpha1.MemberCluster
			g.Expect(h.hub.Get(ctx, client.ObjectKey{Name: "b"}, &mc)).To(Succeed())
			mc.Spec.ServeAddresses = &fleetv1alpha1.ServeAddressRanges{CIDRs: cidrs}
			g.Expect(h.hub.Update(ctx, &mc)).To(Succeed())
		}, timeout, interval).Should(Succeed())
	}
	grant("203.0.113.0/24")
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(BeEmpty())
		g.Expect(shifting(g)).To(ContainSubstring("10.0.0.2 is in none of the CIDRs its MemberCluster grants (203.0.113.0/24)"))
	}, timeout, interval).Should(Succeed())

	t.Log("a grant including it routes to b again")
	grant("10.0.0.0/24")
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"b": 10000}))
	}, timeout, interval).Should(Succeed())

	t.Log("a, at a routable address, claims a million serve endpoints: it is held to what the spec can have")
	bound := validation.MaxServeEndpoints(&h.hubRayService(g, "svc").Spec.RayClusterSpec)
	g.Eventually(func(g Gomega) {
		rs := h.memberCopy(g, "a", "svc")
		rs.Annotations[labels.ServeAddress] = "10.0.0.1:8000"
		g.Expect(h.members["a"].Update(ctx, rs)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		rs := h.memberCopy(g, "a", "svc")
		rs.Status.NumServeEndpoints = 1_000_000
		g.Expect(h.members["a"].Status().Update(ctx, rs)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	share := rollout.TotalWeight * bound / (bound + 1)
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"a": share, "b": rollout.TotalWeight - share}))
	}, timeout, interval).Should(Succeed())
}
