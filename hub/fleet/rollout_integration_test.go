package fleet

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// A rolling upgrade across three members, one at a time with a soak, then a revision that
// stalls on its first member and is rolled back, on real API servers. The test plays the
// spokes (it marks a member's copy as running what it was given) and moves the reconciler's
// clock past soaks and deadlines.
func TestFleetRollingUpgrade(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	members := []string{"a", "b", "c"}
	h := startFleetOf(t, clk, members...)
	g := NewWithT(t)
	ctx := context.Background()
	const soak, deadline = 30 * time.Second, 300 * time.Second
	h.createPolicy(g, "rolling", fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](3),
		Rollout: &fleetv1alpha1.RolloutStrategy{
			MaxUnavailableClusters: ptr.To(intstr.FromInt32(1)),
			SoakSeconds:            ptr.To(int32(soak / time.Second)), ProgressDeadlineSeconds: ptr.To(int32(deadline / time.Second)),
			AutoRollback: true,
		},
	})
	h.createRayService(g, "svc", "rolling")

	revisions := func(g Gomega) map[string]string {
		out := map[string]string{}
		for _, m := range members {
			c := h.memberCopy(g, m, "svc")
			if c != nil {
				out[m] = c.Annotations[labels.Revision]
			}
		}
		return out
	}
	rolloutOf := func(g Gomega) *fleetv1alpha1.RolloutStatus {
		r := h.binding(g, "svc").Status.Rollout
		g.Expect(r).NotTo(BeNil())
		return r
	}
	// serveAll plays every spoke: each copy runs what it carries.
	serveAll := func() {
		for _, m := range members {
			h.serve(g, m, "svc")
		}
	}
	// complete waits until the rollout completes on target, stepping the clock past soaks.
	complete := func(target string) {
		g.Eventually(func(g Gomega) {
			serveAll()
			clk.Step(soak + time.Second)
			r := rolloutOf(g)
			g.Expect(r.Phase).To(Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", r.Message)
			g.Expect(r.GoodRevision).To(Equal(target))
		}, timeout, interval).Should(Succeed())
	}

	t.Log("the first revision goes everywhere and becomes good")
	{
		var first string
		g.Eventually(func(g Gomega) {
			first = rolloutOf(g).TargetRevision
			g.Expect(first).NotTo(BeEmpty())
			g.Expect(revisions(g)).To(Equal(map[string]string{"a": first, "b": first, "c": first}))
		}, timeout, interval).Should(Succeed())
		complete(first)
		// Done together, each cluster says so in an event of its own: the events API would fold
		// them into one series, keeping the first message, were the member not the related object.
		g.Eventually(func(g Gomega) {
			var evs eventsv1.EventList
			g.Expect(h.hub.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
			for _, m := range members {
				g.Expect(evs.Items).To(ContainElement(And(
					HaveField("Reason", rollout.EventClusterDone),
					HaveField("Note", ContainSubstring("cluster "+m+" is done on revision "+first)),
					HaveField("Related.Name", m))), "the ClusterDone event of %s", m)
			}
		}, timeout, interval).Should(Succeed())
	}

	setImage := func(image string) string {
		before := rolloutOf(g).TargetRevision
		g.Eventually(func(g Gomega) {
			rs := h.hubRayService(g, "svc")
			raybuilder.SetImage(&rs.Spec.RayClusterSpec, image)
			g.Expect(h.hub.Update(ctx, rs)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		var target string
		g.Eventually(func(g Gomega) {
			target = rolloutOf(g).TargetRevision
			g.Expect(target).NotTo(Equal(before))
		}, timeout, interval).Should(Succeed())
		return target
	}

	t.Log("a new revision goes one member at a time, each after the one before it soaked")
	{
		good := rolloutOf(g).GoodRevision
		target := setImage("rayproject/ray:2.99.0")
		for i, m := range members {
			// Exactly the members before m and m itself carry the target.
			g.Eventually(func(g Gomega) {
				got := revisions(g)
				for j, other := range members {
					want := good
					if j <= i {
						want = target
					}
					g.Expect(got[other]).To(Equal(want), "member %s while %s updates", other, m)
				}
			}, timeout, interval).Should(Succeed())
			h.serve(g, m, "svc")
			// Done but not soaked: nothing else starts.
			g.Consistently(func(g Gomega) {
				if i+1 < len(members) {
					g.Expect(revisions(g)[members[i+1]]).To(Equal(good))
				}
			}, settle, interval).Should(Succeed())
			clk.Step(soak + time.Second)
		}
		complete(target)
		// The hub RayService's status is written after the binding's, in the same reconcile.
		g.Eventually(func(g Gomega) {
			progressing := meta.FindStatusCondition(h.hubRayService(g, "svc").Status.Conditions, rollout.ConditionProgressing)
			g.Expect(progressing).NotTo(BeNil())
			g.Expect(progressing.Reason).To(Equal(rollout.ReasonRolloutComplete))
		}, timeout, interval).Should(Succeed())
	}

	t.Log("a revision that stalls is rolled back and not tried again")
	{
		good := rolloutOf(g).GoodRevision
		bad := setImage("rayproject/ray:broken")
		g.Eventually(func(g Gomega) {
			g.Expect(revisions(g)).To(Equal(map[string]string{"a": bad, "b": good, "c": good}))
		}, timeout, interval).Should(Succeed())
		// Member a never runs it; past the deadline the rollout stalls and rolls back.
		clk.Step(deadline + time.Second)
		g.Eventually(func(g Gomega) {
			hub := h.hubRayService(g, "svc")
			progressing := meta.FindStatusCondition(hub.Status.Conditions, rollout.ConditionProgressing)
			g.Expect(progressing).NotTo(BeNil())
			g.Expect(progressing.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(revisions(g)["a"]).To(Equal(good), "member a back on the good revision")
		}, timeout, interval).Should(Succeed())
		complete(good)
		r := rolloutOf(g)
		g.Expect(r.FailedRevision).To(Equal(bad))
		g.Consistently(func(g Gomega) {
			g.Expect(revisions(g)).To(Equal(map[string]string{"a": good, "b": good, "c": good}))
		}, settle, interval).Should(Succeed())
	}

	t.Log("a stage with approval waits for it, and the approval is used up once the stage started")
	{
		g.Eventually(func(g Gomega) {
			var pp fleetv1alpha1.PlacementPolicy
			g.Expect(h.hub.Get(ctx, types.NamespacedName{Namespace: ns, Name: "rolling"}, &pp)).To(Succeed())
			pp.Spec.Rollout.Stages = []fleetv1alpha1.RolloutStage{{Name: "canary", Approval: true,
				ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "a"}}}}
			g.Expect(h.hub.Update(ctx, &pp)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		good := rolloutOf(g).GoodRevision
		target := setImage("rayproject/ray:2.99.1")
		g.Eventually(func(g Gomega) {
			g.Expect(rolloutOf(g).Phase).To(Equal(fleetv1alpha1.RolloutAwaitingApproval))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(revisions(g)).To(Equal(map[string]string{"a": good, "b": good, "c": good}))
		}, settle, interval).Should(Succeed())
		g.Eventually(func(g Gomega) {
			b := h.binding(g, "svc")
			if b.Annotations == nil {
				b.Annotations = map[string]string{}
			}
			b.Annotations[labels.ApprovedStage] = target + "/canary"
			g.Expect(h.hub.Update(ctx, b)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(revisions(g)["a"]).To(Equal(target))
			g.Expect(h.binding(g, "svc").Annotations).NotTo(HaveKey(labels.ApprovedStage), "the approval is used up")
		}, timeout, interval).Should(Succeed())
		complete(target)
	}
}

// serve plays the member's spoke: the copy runs the spec it carries (the running-hash
// annotations the spoke keeps), has observed its generation and is Ready.
func (h *fleetHarness) serve(g Gomega, cluster, name string) {
	g.Eventually(func(g Gomega) {
		rs := h.memberCopy(g, cluster, name)
		g.Expect(rs).NotTo(BeNil())
		clusterHash, err := rayspec.ClusterSpecHash(&rs.Spec.RayClusterSpec)
		g.Expect(err).NotTo(HaveOccurred())
		if rs.Annotations[labels.RunningClusterHash] != clusterHash ||
			rs.Annotations[labels.RunningServeConfigHash] != rayspec.ServeConfigHash(rs.Spec.ServeConfigV2) {
			rs.Annotations[labels.RunningClusterHash] = clusterHash
			rs.Annotations[labels.RunningServeConfigHash] = rayspec.ServeConfigHash(rs.Spec.ServeConfigV2)
			g.Expect(h.members[cluster].Update(context.Background(), rs)).To(Succeed())
		}
		h.writeMemberReady(g, cluster, name)
	}, timeout, interval).Should(Succeed())
}
