package fleet

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// A BlueGreen rollout with traffic on the hub, on real API servers: the test plays the spokes
// (copies run what they carry and report a serve address) and the gateway (it accepts each
// generation of the route), and moves the reconciler's clock past intervals, the hold and the
// drain delay.
func TestFleetBlueGreen(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	members := []string{"a", "b", "c"}
	h := startFleetOf(t, clk, members...)
	g := NewWithT(t)
	ctx := context.Background()
	const interval, retire = 10 * time.Second, 30 * time.Second
	g.Expect(h.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gw"}})).To(Succeed())
	h.createPolicy(g, "bg", fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](1),
		Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen, BlueGreen: &fleetv1alpha1.BlueGreenStrategy{
			StepPercent: ptr.To[int32](50), IntervalSeconds: ptr.To(int32(interval / time.Second)),
			RetireAfterSeconds: ptr.To(int32(retire / time.Second)),
		}},
		Traffic: &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"}, PathPrefix: "/"},
	})
	h.createRayService(g, "svc", "bg")

	// serveAt plays a member's spoke: the copy runs what it carries and serves at 10.0.0.<n>.
	serveAt := func(cluster string) {
		h.serve(g, cluster, "svc")
		g.Eventually(func(g Gomega) {
			rs := h.memberCopy(g, cluster, "svc")
			g.Expect(rs).NotTo(BeNil())
			if rs.Annotations[labels.ServeAddress] == "" {
				rs.Annotations[labels.ServeAddress] = "10.0.0." + map[string]string{"a": "1", "b": "2", "c": "3"}[cluster] + ":8000"
				g.Expect(h.members[cluster].Update(ctx, rs)).To(Succeed())
			}
		}, timeout, interval).Should(Succeed())
	}
	key := traffic.Key(types.NamespacedName{Namespace: ns, Name: "svc"}, &fleetv1alpha1.TrafficSpec{
		ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"}})
	route := func(g Gomega) *gwv1.HTTPRoute {
		var r gwv1.HTTPRoute
		g.Expect(h.hub.Get(ctx, key.Route, &r)).To(Succeed())
		return &r
	}
	// weights are the route's backends' weights by the member their Service stands for.
	weights := func(g Gomega) map[string]int32 {
		out := map[string]int32{}
		for _, ref := range route(g).Spec.Rules[0].BackendRefs {
			var svc corev1.Service
			g.Expect(h.hub.Get(ctx, types.NamespacedName{Namespace: "gw", Name: string(ref.Name)}, &svc)).To(Succeed())
			out[svc.Labels[labels.TrafficCluster]] = *ref.Weight
		}
		return out
	}
	// accept plays the gateway: the route's current generation is accepted.
	accept := func(g Gomega) {
		r := route(g)
		r.Status.Parents = []gwv1.RouteParentStatus{{
			ParentRef:      gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "gw"},
			ControllerName: "example.com/gateway",
			Conditions: []metav1.Condition{{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionTrue,
				Reason: "Accepted", ObservedGeneration: r.Generation, LastTransitionTime: metav1.Now()}},
		}}
		g.Expect(h.hub.Status().Update(ctx, r)).To(Succeed())
	}
	bgStatus := func(g Gomega) *fleetv1alpha1.BlueGreenStatus {
		r := h.binding(g, "svc").Status.Rollout
		g.Expect(r).NotTo(BeNil())
		return r.BlueGreen
	}

	t.Log("the first revision goes to one member, which gets all of the traffic")
	var blue string
	g.Eventually(func(g Gomega) {
		placed := h.binding(g, "svc").Spec.Clusters
		g.Expect(placed).To(HaveLen(1))
		blue = placed[0]
	}, timeout, interval).Should(Succeed())
	serveAt(blue)
	g.Eventually(func(g Gomega) {
		// The first revision goes everywhere at once and soaks, as under any rollout type.
		clk.Step(time.Duration(fleetv1alpha1.DefaultSoakSeconds+1) * time.Second)
		g.Expect(weights(g)).To(Equal(map[string]int32{blue: 10000}))
		accept(g)
		rs := h.hubRayService(g, "svc")
		c := meta.FindStatusCondition(rs.Status.Conditions, fleetv1alpha1.ConditionTrafficShifting)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonTrafficSteady))
		g.Expect(h.binding(g, "svc").Status.Rollout.Phase).To(Equal(fleetv1alpha1.RolloutComplete))
	}, timeout, interval).Should(Succeed())
	var ep discoveryv1.EndpointSlice
	g.Expect(h.hub.Get(ctx, types.NamespacedName{Namespace: "gw", Name: traffic.BackendName(key, blue)}, &ep)).To(Succeed())
	g.Expect(ep.Endpoints[0].Addresses).To(HaveLen(1))

	t.Log("a new spec goes green on another member while blue keeps all of the traffic")
	g.Eventually(func(g Gomega) {
		rs := h.hubRayService(g, "svc")
		raybuilder.SetImage(&rs.Spec.RayClusterSpec, "rayproject/ray:2.99.0")
		g.Expect(h.hub.Update(ctx, rs)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	var green string
	g.Eventually(func(g Gomega) {
		bg := bgStatus(g)
		g.Expect(bg).NotTo(BeNil())
		g.Expect(bg.Step).To(Equal(fleetv1alpha1.BlueGreenDeploying))
		g.Expect(bg.Blue).To(Equal([]string{blue}))
		g.Expect(bg.Green).To(HaveLen(1))
		green = bg.Green[0]
	}, timeout, interval).Should(Succeed())
	g.Expect(green).NotTo(Equal(blue))
	g.Expect(weights(g)).To(Equal(map[string]int32{blue: 10000}))

	t.Log("green done: half of the traffic, then, an interval after the gateway accepted it, all of it")
	serveAt(green)
	g.Eventually(func(g Gomega) {
		g.Expect(weights(g)).To(Equal(map[string]int32{blue: 5000, green: 5000}))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		accept(g)
		g.Expect(bgStatus(g).Accepted).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	clk.Step(interval)
	g.Eventually(func(g Gomega) {
		g.Expect(weights(g)).To(Equal(map[string]int32{green: 10000}))
		accept(g)
		bg := bgStatus(g)
		g.Expect(bg.Step).To(Equal(fleetv1alpha1.BlueGreenHolding))
		g.Expect(bg.Accepted).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(h.memberCopy(g, blue, "svc")).NotTo(BeNil(), "blue stays through the hold")

	t.Log("after the hold blue leaves, and its copy goes a drain delay after the gateway dropped it")
	clk.Step(retire)
	g.Eventually(func(g Gomega) {
		b := h.binding(g, "svc")
		g.Expect(b.Spec.Clusters).To(Equal([]string{green}))
		g.Expect(b.Status.Rollout.BlueGreen).To(BeNil())
		g.Expect(b.Status.Rollout.Phase).To(Equal(fleetv1alpha1.RolloutComplete))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		accept(g)
		clk.Step(drainDelay)
		g.Expect(h.memberCopy(g, blue, "svc")).To(BeNil())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var svc corev1.Service
		err := h.hub.Get(ctx, types.NamespacedName{Namespace: "gw", Name: traffic.BackendName(key, blue)}, &svc)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "blue's backend Service is pruned: %v", err)
	}, timeout, interval).Should(Succeed())
}
