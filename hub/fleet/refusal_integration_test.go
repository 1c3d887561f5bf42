package fleet

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// A member whose namespace is being deleted refuses the copy: the hub records the refusal
// (binding status, the hub RayService's MemberRefused condition, an event naming the member
// and the rule), re-plans without that member, creates nothing there and keeps serving the
// RayService from the other member.
func TestFleetMemberRefusal(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	ctx := context.Background()
	const doomed = "doomed"
	g.Expect(h.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}})).To(Succeed())
	// No namespace controller runs on these API servers: a deleted namespace stays Terminating.
	euNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}}
	g.Expect(h.members["eu"].Create(ctx, euNS)).To(Succeed())
	g.Expect(h.members["eu"].Delete(ctx, euNS)).To(Succeed())

	pp := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: doomed, Name: "both"},
		Spec:       fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2)},
	}
	g.Expect(h.hub.Create(ctx, pp)).To(Succeed())
	rs := raybuilder.MakeRayService("svc", doomed).Annotation(labels.PlacementPolicy, "both").Obj()
	rs.UID, rs.Generation = "", 0
	g.Expect(h.hub.Create(ctx, rs)).To(Succeed())
	key := types.NamespacedName{Namespace: doomed, Name: "svc"}

	g.Eventually(func(g Gomega) {
		var b fleetv1alpha1.RayServiceBinding
		g.Expect(h.hub.Get(ctx, key, &b)).To(Succeed())
		g.Expect(b.Status.Refusals).To(HaveLen(1))
		g.Expect(b.Status.Refusals[0].Cluster).To(Equal("eu"))
		g.Expect(b.Status.Refusals[0].Rule).To(Equal(propagation.RuleNamespaceTerminating))
		g.Expect(b.Spec.Clusters).To(Equal([]string{"us"}), "re-planned without the refusing member")
		placed := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)
		g.Expect(placed).NotTo(BeNil())
		g.Expect(placed.Reason).To(Equal(fleetv1alpha1.ReasonInsufficientClusters))
		g.Expect(placed.Message).To(ContainSubstring("eu: refused this RayService: NamespaceTerminating"))

		var hub rayv1.RayService
		g.Expect(h.hub.Get(ctx, key, &hub)).To(Succeed())
		refused := meta.FindStatusCondition(hub.Status.Conditions, fleetv1alpha1.ConditionMemberRefused)
		g.Expect(refused).NotTo(BeNil())
		g.Expect(refused.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(refused.Reason).To(Equal(fleetv1alpha1.ReasonRefusedByMember))
		g.Expect(refused.Message).To(ContainSubstring("eu: NamespaceTerminating"))

		var us rayv1.RayService
		g.Expect(h.members["us"].Get(ctx, key, &us)).To(Succeed(), "the other member still gets its copy")
	}, timeout, interval).Should(Succeed())

	g.Eventually(func(g Gomega) {
		var evs eventsv1.EventList
		g.Expect(h.hub.List(ctx, &evs, client.InNamespace(doomed))).To(Succeed())
		found := false
		for _, ev := range evs.Items {
			if ev.Reason == fleetv1alpha1.ReasonRefusedByMember && ev.Type == corev1.EventTypeWarning &&
				strings.Contains(ev.Note, "cluster eu refused") && strings.Contains(ev.Note, "NamespaceTerminating") {
				found = true
			}
		}
		g.Expect(found).To(BeTrue(), "a Warning RefusedByMember event naming eu and the rule")
	}, timeout, interval).Should(Succeed())

	// Nothing lands in the terminating namespace, and nothing is retried there every resync.
	g.Consistently(func(g Gomega) {
		var list rayv1.RayServiceList
		g.Expect(h.members["eu"].List(ctx, &list, client.InNamespace(doomed))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
		var b fleetv1alpha1.RayServiceBinding
		g.Expect(h.hub.Get(ctx, key, &b)).To(Succeed())
		g.Expect(b.Spec.Clusters).To(Equal([]string{"us"}))
	}, settle, interval).Should(Succeed())

	// A new spec is tried again at once; the namespace still refuses it, with the new hash.
	var before fleetv1alpha1.RayServiceBinding
	g.Expect(h.hub.Get(ctx, key, &before)).To(Succeed())
	g.Eventually(func(g Gomega) {
		var hub rayv1.RayService
		g.Expect(h.hub.Get(ctx, key, &hub)).To(Succeed())
		raybuilder.SetImage(&hub.Spec.RayClusterSpec, "rayproject/ray:2.99.0")
		g.Expect(h.hub.Update(ctx, &hub)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var b fleetv1alpha1.RayServiceBinding
		g.Expect(h.hub.Get(ctx, key, &b)).To(Succeed())
		g.Expect(b.Status.Refusals).To(HaveLen(1))
		g.Expect(b.Status.Refusals[0].SpecHash).NotTo(Equal(before.Status.Refusals[0].SpecHash))
		var us rayv1.RayService
		g.Expect(h.members["us"].Get(ctx, key, &us)).To(Succeed())
		g.Expect(us.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image).To(Equal("rayproject/ray:2.99.0"))
	}, timeout, interval).Should(Succeed())
}
