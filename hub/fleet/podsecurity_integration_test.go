package fleet

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
)

// TestFleetPodSecurity places a RayService whose Pods pass baseline but not restricted (the
// test builder's templates set no securityContext) on a fleet of a restricted member (eu) and
// a baseline one (us): it lands on us only, in a namespace the hub creates labelled with us's
// level, and the binding says why not eu. A namespace us reports it cannot label shows on the
// hub RayService.
func TestFleetPodSecurity(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	ctx := context.Background()
	setMember := func(g Gomega, name string, edit func(*fleetv1alpha1.MemberClusterStatus)) {
		g.Eventually(func(g Gomega) {
			var mc fleetv1alpha1.MemberCluster
			g.Expect(h.hub.Get(ctx, client.ObjectKey{Name: name}, &mc)).To(Succeed())
			edit(&mc.Status)
			g.Expect(h.hub.Status().Update(ctx, &mc)).To(Succeed())
		}, timeout, interval).Should(Succeed())
	}
	setMember(g, "eu", func(st *fleetv1alpha1.MemberClusterStatus) { st.PodSecurityLevel = podsecurity.Restricted })
	setMember(g, "us", func(st *fleetv1alpha1.MemberClusterStatus) { st.PodSecurityLevel = podsecurity.Baseline })
	h.createPolicy(g, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2)})
	h.createRayService(g, "psa", "both")

	t.Run("a stricter member is skipped, with the level and checks said", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			g.Expect(h.memberCopy(g, "us", "psa")).NotTo(BeNil())
			placed := meta.FindStatusCondition(h.binding(g, "psa").Status.Conditions, fleetv1alpha1.ConditionPlaced)
			g.Expect(placed).NotTo(BeNil())
			g.Expect(placed.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(placed.Reason).To(Equal(fleetv1alpha1.ReasonInsufficientClusters))
			g.Expect(placed.Message).To(ContainSubstring("eu: Pod Security level restricted enforced, the Pods need baseline: " +
				"headGroupSpec: allowPrivilegeEscalation != false"))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) { g.Expect(h.memberCopy(g, "eu", "psa")).To(BeNil()) }, settle, interval).Should(Succeed())
	})

	t.Run("the namespace the hub creates enforces the member's level", func(t *testing.T) {
		g := NewWithT(t)
		var got corev1.Namespace
		g.Expect(h.members["us"].Get(ctx, client.ObjectKey{Name: ns}, &got)).To(Succeed())
		g.Expect(got.Labels).To(And(HaveKeyWithValue(podsecurity.EnforceLabel, podsecurity.Baseline),
			HaveKeyWithValue(podsecurity.EnforceVersionLabel, podsecurity.VersionLatest),
			HaveKeyWithValue(labels.HubNamespace, labels.HubNamespaceCreated)))
	})

	t.Run("a namespace the member cannot label shows on the hub RayService", func(t *testing.T) {
		g := NewWithT(t)
		setMember(g, "us", func(st *fleetv1alpha1.MemberClusterStatus) {
			st.UnenforcedNamespaces = []fleetv1alpha1.UnenforcedNamespace{{Name: ns, Violations: []string{"psa-head-x: privileged"}}}
		})
		g.Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(h.hubRayService(g, "psa").Status.Conditions, fleetv1alpha1.ConditionPodSecurityEnforced)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("cluster us (level baseline): psa-head-x: privileged"))
		}, timeout, interval).Should(Succeed())
		setMember(g, "us", func(st *fleetv1alpha1.MemberClusterStatus) { st.UnenforcedNamespaces = nil })
		g.Eventually(func(g Gomega) {
			g.Expect(meta.FindStatusCondition(h.hubRayService(g, "psa").Status.Conditions,
				fleetv1alpha1.ConditionPodSecurityEnforced)).To(BeNil())
		}, timeout, interval).Should(Succeed())
		// Nothing moved.
		g.Expect(h.memberCopy(g, "us", "psa")).NotTo(BeNil())
	})
}
