package fleet

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	. "github.com/onsi/gomega"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// TestFleetGrants: a RayService placed while its namespace was granted stays where it is when
// the grant no longer selects the namespace (as one placed before grants existed does), with a
// KeptWithoutGrant warning; a RayService created after that is placed nowhere and says why.
func TestFleetGrants(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	ctx := context.Background()

	h.createRayService(g, "kept", "")
	var placedOn []string
	g.Eventually(func(g Gomega) {
		b := h.binding(g, "kept")
		g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)).To(BeTrue())
		placedOn = b.Spec.Clusters
		g.Expect(h.memberCopy(g, placedOn[0], "kept")).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())

	var namespace corev1.Namespace
	g.Expect(h.hub.Get(ctx, types.NamespacedName{Name: ns}, &namespace)).To(Succeed())
	namespace.Labels = map[string]string{ungrantedLabel: "true"}
	g.Expect(h.hub.Update(ctx, &namespace)).To(Succeed())

	g.Eventually(func(g Gomega) {
		b := h.binding(g, "kept")
		c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionGrantMissing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonKeptWithoutGrant))
		g.Expect(c.Message).To(ContainSubstring("namespace team has no NamespaceGrant for member " + placedOn[0]))
		g.Expect(b.Spec.Clusters).To(Equal(placedOn))
		g.Expect(meta.FindStatusCondition(h.hubRayService(g, "kept").Status.Conditions, fleetv1alpha1.ConditionGrantMissing)).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	g.Expect(h.memberCopy(g, placedOn[0], "kept")).NotTo(BeNil())

	h.createRayService(g, "fresh", "")
	g.Eventually(func(g Gomega) {
		b := h.binding(g, "fresh")
		placed := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)
		g.Expect(placed).NotTo(BeNil())
		g.Expect(placed.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(placed.Reason).To(Equal(fleetv1alpha1.ReasonNotGranted))
		g.Expect(placed.Message).To(ContainSubstring("namespace team has no NamespaceGrant"))
		c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionGrantMissing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonNotGranted))
		g.Expect(b.Spec.Clusters).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
	for _, member := range []string{"eu", "us"} {
		g.Expect(h.memberCopy(g, member, "fresh")).To(BeNil())
	}
}
