//go:build e2e

package fleet

import (
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// tolerationSeconds is far longer than the test: a member that goes away must not lose its
// RayServices to another member while it is tolerated.
const tolerationSeconds = 3600

// The ap member's API server is stopped (until the end of the test; the other tests that stop
// it wait, and no other test places on it). Its MemberCluster turns Reachable=False, and
// nothing is deleted: the hub RayService placed on ap stays bound to ap without being
// re-placed on us, which its policy also selects, and a RayService on us keeps its copy (the
// same object).
func TestUnreachableMemberNothingDeleted(t *testing.T) {
	t.Parallel()
	const ns, onAP, onUS = "unreachable", "on-ap", "on-us"
	// Placement must see ap Ready: run alone, this test may start before the hub does.
	o := holdMember(t, memberAP)
	createNamespace(t, ns)
	// The policy selects ap alone until ap holds the RayService, then us too: a member that
	// holds a RayService keeps it.
	createPolicy(t, ns, "ap-or-us", fleetv1alpha1.PlacementPolicySpec{
		ClusterSelector: regionIn(memberAP),
		Failover: &fleetv1alpha1.FailoverPolicy{
			TolerationSeconds: ptr.To[int64](tolerationSeconds),
			// ap may be back from another test's outage: no wait before it takes work.
			ReadmitSeconds: ptr.To[int64](0),
		},
	})
	createPolicy(t, ns, "us-only", fleetv1alpha1.PlacementPolicySpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{regionKey: memberUS}},
	})
	createHubRayService(t, ns, onAP, "ap-or-us")
	createHubRayService(t, ns, onUS, "us-only")

	var usCopyUID string
	eventually(t, func(g gomega.Gomega) {
		g.Expect(binding(g, ns, onAP).Spec.Clusters).To(gomega.Equal([]string{memberAP}))
		m := memberRayService(g, memberAP, ns, onAP)
		g.Expect(m).NotTo(gomega.BeNil(), "copy on %s", memberAP)
		g.Expect(hubReady(m)).To(gomega.BeTrue(), "copy on %s Ready", memberAP)
		us := memberRayService(g, memberUS, ns, onUS)
		g.Expect(us).NotTo(gomega.BeNil(), "copy of %s on %s", onUS, memberUS)
		usCopyUID = string(us.UID)
	})
	setPolicySelector(t, ns, "ap-or-us", regionIn(memberAP, memberUS))

	o.stop()
	eventually(t, func(g gomega.Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(fleet.Hub.Client.Get(t.Context(), client.ObjectKey{Name: memberAP}, &mc)).To(gomega.Succeed())
		c := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionReachable)
		g.Expect(c).NotTo(gomega.BeNil(), "Reachable condition")
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionFalse), "Reachable: %s: %s", c.Reason, c.Message)
		g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.BeFalse(), "Ready")
	})

	// The hub has seen ap not Ready; give it time to act (wrongly) on it, then check that
	// nothing moved or went away.
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		for _, name := range []string{onAP, onUS} {
			hub := hubRayService(g, ns, name)
			g.Expect(hub.DeletionTimestamp).To(gomega.BeNil(), "hub RayService %s being deleted", name)
		}
		g.Expect(binding(g, ns, onAP).Spec.Clusters).To(gomega.Equal([]string{memberAP}), "%s re-placed", onAP)
		g.Expect(memberRayService(g, memberUS, ns, onAP)).To(gomega.BeNil(), "%s re-placed on %s", onAP, memberUS)
		us := memberRayService(g, memberUS, ns, onUS)
		g.Expect(us).NotTo(gomega.BeNil(), "copy of %s on %s", onUS, memberUS)
		g.Expect(string(us.UID)).To(gomega.Equal(usCopyUID), "copy of %s on %s replaced", onUS, memberUS)
		g.Expect(us.DeletionTimestamp).To(gomega.BeNil(), "copy of %s on %s being deleted", onUS, memberUS)
	}).WithTimeout(5 * settle).WithPolling(poll).Should(gomega.Succeed())
}
