package fleet

import (
	"context"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// createDeletable creates a hub RayService under policy, with on-delete: orphan when orphan,
// and waits until its copies are on clusters and it has a revision.
func (h *fleetHarness) createDeletable(g Gomega, name, policy string, orphan bool, clusters ...string) {
	w := raybuilder.MakeRayService(name, ns).Annotation(labels.PlacementPolicy, policy)
	if orphan {
		w = w.Annotation(labels.OnDelete, labels.OnDeleteOrphan)
	}
	rs := w.Obj()
	rs.UID, rs.Generation = "", 0
	g.Expect(h.hub.Create(context.Background(), rs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, c := range clusters {
			g.Expect(h.memberCopy(g, c, name)).NotTo(BeNil(), "copy on %s", c)
		}
		g.Expect(h.revisions(g, name)).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
}

// deleteHub deletes the hub RayService name.
func (h *fleetHarness) deleteHub(g Gomega, name string) {
	g.Expect(h.hub.Delete(context.Background(), h.hubRayService(g, name))).To(Succeed())
}

// expectDeleted waits until the hub RayService name, its binding and its revisions are gone.
func (h *fleetHarness) expectDeleted(g Gomega, name string) {
	g.Eventually(func(g Gomega) {
		key := types.NamespacedName{Namespace: ns, Name: name}
		err := h.hub.Get(context.Background(), key, &rayv1.RayService{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "hub RayService gone: %v", err)
		err = h.hub.Get(context.Background(), key, &fleetv1alpha1.RayServiceBinding{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "binding gone: %v", err)
		g.Expect(h.revisions(g, name)).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
}

// revisions are the names of the ControllerRevisions labelled with the RayService name.
func (h *fleetHarness) revisions(g Gomega, name string) []string {
	var list appsv1.ControllerRevisionList
	g.Expect(h.hub.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{labels.OriginName: name})).To(Succeed())
	var out []string
	for i := range list.Items {
		out = append(out, list.Items[i].Name)
	}
	return out
}

// hubEvent reports whether an event about the hub RayService name has reason and a note
// containing note.
func (h *fleetHarness) hubEvent(g Gomega, name, eventType, reason, note string) bool {
	var evs eventsv1.EventList
	g.Expect(h.hub.List(context.Background(), &evs, client.InNamespace(ns))).To(Succeed())
	return slices.ContainsFunc(evs.Items, func(ev eventsv1.Event) bool {
		return ev.Regarding.Name == name && ev.Type == eventType && ev.Reason == reason && strings.Contains(ev.Note, note)
	})
}

// expectOrphaned checks that cluster's copy of name is there without any origin label or hub
// annotation.
func (h *fleetHarness) expectOrphaned(g Gomega, cluster, name string) *rayv1.RayService {
	c := h.memberCopy(g, cluster, name)
	g.Expect(c).NotTo(BeNil(), "copy on %s kept", cluster)
	for _, k := range []string{labels.OriginNamespace, labels.OriginName, labels.OriginUID, labels.OriginHub} {
		g.Expect(c.Labels).NotTo(HaveKey(k))
	}
	g.Expect(c.Annotations).NotTo(HaveKey(labels.SpecHash))
	g.Expect(c.Annotations).NotTo(HaveKey(labels.Revision))
	return c
}

// TestDelete checks that deleting a hub RayService leaves nothing behind on a hub without a
// garbage collector: no copies, no binding, no revisions.
func TestDelete(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	h.createPolicy(g, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2)})
	h.createDeletable(g, "gone", "both", false, "eu", "us")
	h.deleteHub(g, "gone")
	h.expectDeleted(g, "gone")
	g.Expect(h.memberCopy(g, "eu", "gone")).To(BeNil())
	g.Expect(h.memberCopy(g, "us", "gone")).To(BeNil())
}

// TestDeleteOrphan checks on-delete: orphan, and what adopting an orphaned copy back takes:
// with its origin labels gone a recreated hub RayService finds it foreign; labelled with the
// origin namespace and name again it is taken over; deleted, it is recreated.
func TestDeleteOrphan(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	ctx := context.Background()
	h.createPolicy(g, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2)})
	h.createDeletable(g, "kept", "both", true, "eu", "us")
	before := map[string]*rayv1.RayService{"eu": h.memberCopy(g, "eu", "kept"), "us": h.memberCopy(g, "us", "kept")}
	h.deleteHub(g, "kept")
	h.expectDeleted(g, "kept")
	for c, b := range before {
		got := h.expectOrphaned(g, c, "kept")
		g.Expect(got.UID).To(Equal(b.UID))
		g.Expect(got.Spec).To(Equal(b.Spec))
	}
	g.Eventually(func(g Gomega) {
		g.Expect(h.hubEvent(g, "kept", corev1.EventTypeNormal, reasonOrphaned, "on cluster eu")).To(BeTrue())
		g.Expect(h.hubEvent(g, "kept", corev1.EventTypeNormal, reasonOrphaned, "on cluster us")).To(BeTrue())
	}, timeout, interval).Should(Succeed())

	t.Run("a recreated hub RayService finds the orphaned copies foreign", func(t *testing.T) {
		g := NewWithT(t)
		h.createRayService(g, "kept", "both")
		g.Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(h.binding(g, "kept").Status.Conditions, fleetv1alpha1.ConditionPropagated)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonForeignRayService))
		}, timeout, interval).Should(Succeed())
		h.expectOrphaned(g, "eu", "kept")
		h.expectOrphaned(g, "us", "kept")
	})

	t.Run("labelled with its origin again, the copy is taken over", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			c := h.memberCopy(g, "eu", "kept")
			c.Labels = map[string]string{labels.OriginNamespace: ns, labels.OriginName: "kept"}
			g.Expect(h.members["eu"].Update(ctx, c)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		uid := h.hubRayService(g, "kept").UID
		g.Eventually(func(g Gomega) {
			c := h.memberCopy(g, "eu", "kept")
			g.Expect(c.UID).To(Equal(before["eu"].UID), "the same object, not a new one")
			g.Expect(c.Labels).To(HaveKeyWithValue(labels.OriginUID, string(uid)))
			g.Expect(c.Labels).To(HaveKeyWithValue(labels.OriginHub, labels.DefaultHubName))
			g.Expect(c.Annotations).To(HaveKey(labels.Revision))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("deleted, the copy is recreated", func(t *testing.T) {
		g := NewWithT(t)
		old := h.memberCopy(g, "us", "kept")
		g.Expect(h.members["us"].Delete(ctx, old)).To(Succeed())
		uid := h.hubRayService(g, "kept").UID
		g.Eventually(func(g Gomega) {
			c := h.memberCopy(g, "us", "kept")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.UID).NotTo(Equal(old.UID))
			g.Expect(c.Labels).To(HaveKeyWithValue(labels.OriginUID, string(uid)))
		}, timeout, interval).Should(Succeed())
	})
}

// TestDeleteUnreachableMember checks that a member that cannot be reached does not hold a
// plain deletion (its copy is left to the orphan sweep, with a Warning event) but does hold an
// on-delete: orphan one until it is reachable or gone from the fleet.
func TestDeleteUnreachableMember(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	ctx := context.Background()
	// ap is a Ready MemberCluster whose API server the hub cannot reach.
	h.joinMember(t, "ap", "ap")
	h.createPolicy(g, "eu-ap", fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](2),
		ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu", "ap"}},
		}},
	})
	placedOnAP := func(name string) {
		g.Eventually(func(g Gomega) {
			g.Expect(h.binding(g, name).Spec.Clusters).To(Equal([]string{"ap", "eu"}))
		}, timeout, interval).Should(Succeed())
	}

	t.Run("a plain deletion goes on without it", func(t *testing.T) {
		g := NewWithT(t)
		h.createDeletable(g, "far", "eu-ap", false, "eu")
		placedOnAP("far")
		h.deleteHub(g, "far")
		h.expectDeleted(g, "far")
		g.Expect(h.memberCopy(g, "eu", "far")).To(BeNil())
		g.Eventually(func(g Gomega) {
			g.Expect(h.hubEvent(g, "far", corev1.EventTypeWarning, reasonLeftToSweep, "cluster ap cannot be reached")).To(BeTrue())
		}, timeout, interval).Should(Succeed())
	})

	t.Run("on-delete: orphan waits for it", func(t *testing.T) {
		g := NewWithT(t)
		h.createDeletable(g, "far-kept", "eu-ap", true, "eu")
		placedOnAP("far-kept")
		h.deleteHub(g, "far-kept")
		g.Eventually(func(g Gomega) {
			g.Expect(h.hubEvent(g, "far-kept", corev1.EventTypeWarning, reasonWaitingToOrphan, "cluster ap cannot be reached")).To(BeTrue())
			h.expectOrphaned(g, "eu", "far-kept")
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			rs := h.hubRayService(g, "far-kept")
			g.Expect(rs.DeletionTimestamp.IsZero()).To(BeFalse())
			g.Expect(h.binding(g, "far-kept")).NotTo(BeNil())
		}, settle, interval).Should(Succeed())

		// Once ap has left the fleet, nothing is left to wait for.
		g.Expect(h.hub.Delete(ctx, &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "ap"}})).To(Succeed())
		h.expectDeleted(g, "far-kept")
		h.expectOrphaned(g, "eu", "far-kept")
	})
}
