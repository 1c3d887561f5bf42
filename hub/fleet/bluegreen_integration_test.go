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
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// bgIntervalSeconds and bgRetireSeconds are the blue/green tests' interval and hold.
const bgIntervalSeconds, bgRetireSeconds = 10, 30

// bgTest is a fleet harness with what the blue/green tests play: the spokes' serve addresses
// and the gateway's acceptance of the route on the hub.
type bgTest struct {
	*fleetHarness
	clk *clocktesting.FakeClock
	key traffic.RouteKey
}

// startBlueGreen starts a fleet of members with a Gateway namespace "gw" on the hub.
func startBlueGreen(t *testing.T, members ...string) *bgTest {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	h := &bgTest{fleetHarness: startFleetOf(t, clk, members...), clk: clk}
	if err := h.hub.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gw"}}); err != nil {
		t.Fatal(err)
	}
	h.key = traffic.Key(types.NamespacedName{Namespace: ns, Name: "svc"})
	return h
}

func trafficOnHub() *fleetv1alpha1.TrafficSpec {
	return &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"}, PathPrefix: "/"}
}

// blueGreenPolicy is a BlueGreen policy: one cluster, steps of 50%, with traffic when asked.
func blueGreenPolicy(withTraffic bool, names ...string) fleetv1alpha1.PlacementPolicySpec {
	spec := fleetv1alpha1.PlacementPolicySpec{
		Clusters:     ptr.To[int32](1),
		ClusterNames: names,
		Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen, BlueGreen: &fleetv1alpha1.BlueGreenStrategy{
			StepPercent: ptr.To[int32](50), IntervalSeconds: ptr.To[int32](bgIntervalSeconds), RetireAfterSeconds: ptr.To[int32](bgRetireSeconds),
		}},
	}
	if withTraffic {
		spec.Traffic = trafficOnHub()
	}
	return spec
}

// serveAt plays a member's spoke: the copy runs what it carries and serves at 10.0.0.<n>.
func (h *bgTest) serveAt(g Gomega, cluster, name string) {
	h.serve(g, cluster, name)
	g.Eventually(func(g Gomega) {
		rs := h.memberCopy(g, cluster, name)
		g.Expect(rs).NotTo(BeNil())
		if rs.Annotations[labels.ServeAddress] == "" {
			rs.Annotations[labels.ServeAddress] = "10.0.0." + map[string]string{"a": "1", "b": "2", "c": "3"}[cluster] + ":8000"
			g.Expect(h.members[cluster].Update(context.Background(), rs)).To(Succeed())
		}
	}, timeout, interval).Should(Succeed())
}

func (h *bgTest) route(g Gomega) *gwv1.HTTPRoute {
	var r gwv1.HTTPRoute
	g.Expect(h.hub.Get(context.Background(), h.key.Route, &r)).To(Succeed())
	return &r
}

// weights are the route's backends' weights by the member their Service stands for.
func (h *bgTest) weights(g Gomega) map[string]int32 {
	out := map[string]int32{}
	for _, ref := range h.route(g).Spec.Rules[0].BackendRefs {
		var svc corev1.Service
		g.Expect(h.hub.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: string(ref.Name)}, &svc)).To(Succeed())
		out[svc.Labels[labels.TrafficCluster]] = *ref.Weight
	}
	return out
}

// accept plays the gateway: the route's current generation is accepted.
func (h *bgTest) accept(g Gomega) {
	r := h.route(g)
	r.Status.Parents = []gwv1.RouteParentStatus{{
		ParentRef:      gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "gw"},
		ControllerName: "example.com/gateway",
		Conditions: []metav1.Condition{{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionTrue,
			Reason: "Accepted", ObservedGeneration: r.Generation, LastTransitionTime: metav1.Now()}},
	}}
	g.Expect(h.hub.Status().Update(context.Background(), r)).To(Succeed())
}

func (h *bgTest) blueGreen(g Gomega, name string) *fleetv1alpha1.BlueGreenStatus {
	r := h.binding(g, name).Status.Rollout
	g.Expect(r).NotTo(BeNil())
	return r.BlueGreen
}

// setImage changes the hub RayService's image, a new revision.
func (h *bgTest) setImage(g Gomega, name, image string) {
	g.Eventually(func(g Gomega) {
		rs := h.hubRayService(g, name)
		raybuilder.SetImage(&rs.Spec.RayClusterSpec, image)
		g.Expect(h.hub.Update(context.Background(), rs)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

// firstRevision waits for name's first revision on one member, served and complete, and
// returns the member.
func (h *bgTest) firstRevision(g Gomega, name string, withTraffic bool) string {
	var blue string
	g.Eventually(func(g Gomega) {
		placed := h.binding(g, name).Spec.Clusters
		g.Expect(placed).To(HaveLen(1))
		blue = placed[0]
	}, timeout, interval).Should(Succeed())
	h.serveAt(g, blue, name)
	g.Eventually(func(g Gomega) {
		// The first revision goes everywhere at once and soaks, as under any rollout type.
		h.clk.Step(time.Duration(fleetv1alpha1.DefaultSoakSeconds+1) * time.Second)
		if withTraffic {
			g.Expect(h.weights(g)).To(Equal(map[string]int32{blue: 10000}))
			h.accept(g)
		}
		g.Expect(h.binding(g, name).Status.Rollout.Phase).To(Equal(fleetv1alpha1.RolloutComplete))
	}, timeout, interval).Should(Succeed())
	return blue
}

// green waits for a BlueGreen rollout of name to place green and returns its one member.
func (h *bgTest) green(g Gomega, name, blue string) string {
	var green string
	g.Eventually(func(g Gomega) {
		bg := h.blueGreen(g, name)
		g.Expect(bg).NotTo(BeNil())
		g.Expect(bg.Blue).To(Equal([]string{blue}))
		g.Expect(bg.Green).To(HaveLen(1))
		green = bg.Green[0]
	}, timeout, interval).Should(Succeed())
	g.Expect(green).NotTo(Equal(blue))
	return green
}

// A BlueGreen rollout with traffic on the hub, on real API servers: the test plays the spokes
// (copies run what they carry and report a serve address) and the gateway (it accepts each
// generation of the route), and moves the reconciler's clock past intervals, the hold and the
// drain delay.
func TestFleetBlueGreen(t *testing.T) {
	h := startBlueGreen(t, "a", "b", "c")
	g := NewWithT(t)
	ctx := context.Background()
	h.createPolicy(g, "bg", blueGreenPolicy(true))
	h.createRayService(g, "svc", "bg")

	t.Log("the first revision goes to one member, which gets all of the traffic")
	blue := h.firstRevision(g, "svc", true)
	g.Eventually(func(g Gomega) {
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonTrafficSteady))
	}, timeout, interval).Should(Succeed())
	var ep discoveryv1.EndpointSlice
	g.Expect(h.hub.Get(ctx, types.NamespacedName{Namespace: ns, Name: traffic.BackendName(h.key, blue)}, &ep)).To(Succeed())
	g.Expect(ep.Endpoints[0].Addresses).To(HaveLen(1))

	t.Log("a new spec goes green on another member while blue keeps all of the traffic")
	h.setImage(g, "svc", "rayproject/ray:2.99.0")
	green := h.green(g, "svc", blue)
	g.Expect(h.blueGreen(g, "svc").Step).To(Equal(fleetv1alpha1.BlueGreenDeploying))
	g.Expect(h.weights(g)).To(Equal(map[string]int32{blue: 10000}))

	t.Log("green done: half of the traffic, then, an interval after the gateway accepted it, all of it")
	h.serveAt(g, green, "svc")
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{blue: 5000, green: 5000}))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		h.accept(g)
		g.Expect(h.blueGreen(g, "svc").Accepted).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	h.clk.Step(bgIntervalSeconds * time.Second)
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{green: 10000}))
		h.accept(g)
		bg := h.blueGreen(g, "svc")
		g.Expect(bg.Step).To(Equal(fleetv1alpha1.BlueGreenHolding))
		g.Expect(bg.Accepted).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(h.memberCopy(g, blue, "svc")).NotTo(BeNil(), "blue stays through the hold")

	t.Log("after the hold blue leaves, and its copy goes a drain delay after the gateway dropped it")
	h.clk.Step(bgRetireSeconds * time.Second)
	g.Eventually(func(g Gomega) {
		b := h.binding(g, "svc")
		g.Expect(b.Spec.Clusters).To(Equal([]string{green}))
		g.Expect(b.Status.Rollout.BlueGreen).To(BeNil())
		g.Expect(b.Status.Rollout.Phase).To(Equal(fleetv1alpha1.RolloutComplete))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		h.accept(g)
		h.clk.Step(drainDelay)
		g.Expect(h.memberCopy(g, blue, "svc")).To(BeNil())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var svc corev1.Service
		err := h.hub.Get(ctx, types.NamespacedName{Namespace: ns, Name: traffic.BackendName(h.key, blue)}, &svc)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "blue's backend Service is pruned: %v", err)
	}, timeout, interval).Should(Succeed())
}

// An undo mid-shift sends all of the traffic back to blue at once and green leaves; a policy
// without traffic brings green up and retires blue after the hold; with no member left to be
// green the rollout waits and says why.
func TestFleetBlueGreenUndoNoTrafficNoGreen(t *testing.T) {
	h := startBlueGreen(t, "a", "b")
	g := NewWithT(t)
	h.createPolicy(g, "bg", blueGreenPolicy(true))
	h.createRayService(g, "svc", "bg")
	blue := h.firstRevision(g, "svc", true)
	image := h.hubRayService(g, "svc").Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image

	t.Log("undo at 50%: all of the traffic back on blue at once, green leaves once drained")
	h.setImage(g, "svc", "rayproject/ray:2.99.0")
	green := h.green(g, "svc", blue)
	h.serveAt(g, green, "svc")
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{blue: 5000, green: 5000}))
	}, timeout, interval).Should(Succeed())
	h.setImage(g, "svc", image)
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{blue: 10000}))
		b := h.binding(g, "svc")
		g.Expect(b.Status.Rollout.BlueGreen).To(BeNil())
		g.Expect(b.Spec.Clusters).To(Equal([]string{blue}))
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	g.Expect(h.memberCopy(g, green, "svc")).NotTo(BeNil(), "green stays until the gateway has dropped it for a drain delay")
	g.Eventually(func(g Gomega) {
		h.accept(g)
		h.clk.Step(drainDelay)
		g.Expect(h.memberCopy(g, green, "svc")).To(BeNil())
	}, timeout, interval).Should(Succeed())

	t.Log("without traffic: green up, hold, blue down")
	h.createPolicy(g, "plain", blueGreenPolicy(false))
	h.createRayService(g, "plain", "plain")
	plainBlue := h.firstRevision(g, "plain", false)
	h.setImage(g, "plain", "rayproject/ray:2.99.0")
	plainGreen := h.green(g, "plain", plainBlue)
	h.serveAt(g, plainGreen, "plain")
	g.Eventually(func(g Gomega) {
		g.Expect(h.blueGreen(g, "plain").Step).To(Equal(fleetv1alpha1.BlueGreenHolding))
		c := trafficShiftingOf(h.hubRayService(g, "plain").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonNoTrafficManaged))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		h.clk.Step(bgRetireSeconds * time.Second)
		g.Expect(h.memberCopy(g, plainBlue, "plain")).To(BeNil())
		g.Expect(h.binding(g, "plain").Spec.Clusters).To(Equal([]string{plainGreen}))
	}, timeout, interval).Should(Succeed())

	t.Log("with approval, green waits for the promote approval, which is consumed once used")
	approved := blueGreenPolicy(false)
	approved.Rollout.BlueGreen.Approval = true
	h.createPolicy(g, "approved", approved)
	h.createRayService(g, "appr", "approved")
	apprBlue := h.firstRevision(g, "appr", false)
	h.setImage(g, "appr", "rayproject/ray:2.99.0")
	apprGreen := h.green(g, "appr", apprBlue)
	h.serveAt(g, apprGreen, "appr")
	var target string
	g.Eventually(func(g Gomega) {
		r := h.binding(g, "appr").Status.Rollout
		g.Expect(r.Phase).To(Equal(fleetv1alpha1.RolloutAwaitingApproval))
		g.Expect(r.Stage).To(Equal(fleetv1alpha1.BlueGreenPromoteStage))
		target = r.TargetRevision
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		b := h.binding(g, "appr")
		b.Annotations = map[string]string{labels.ApprovedStage: target + "/" + fleetv1alpha1.BlueGreenPromoteStage}
		g.Expect(h.hub.Update(context.Background(), b)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		b := h.binding(g, "appr")
		g.Expect(b.Status.Rollout.BlueGreen).NotTo(BeNil())
		g.Expect(b.Status.Rollout.BlueGreen.Step).To(Equal(fleetv1alpha1.BlueGreenHolding))
		g.Expect(b.Annotations).NotTo(HaveKey(labels.ApprovedStage))
	}, timeout, interval).Should(Succeed())

	t.Log("no member left for green: the rollout waits and says why")
	h.createPolicy(g, "pinned", blueGreenPolicy(false, "a"))
	h.createRayService(g, "pinned", "pinned")
	pinned := h.firstRevision(g, "pinned", false)
	h.setImage(g, "pinned", "rayproject/ray:2.99.0")
	g.Eventually(func(g Gomega) {
		c := trafficShiftingOf(h.hubRayService(g, "pinned").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonNoGreenClusters))
		g.Expect(c.Message).To(ContainSubstring("blue: runs the revision green replaces"))
		g.Expect(h.binding(g, "pinned").Spec.Clusters).To(Equal([]string{pinned}))
	}, timeout, interval).Should(Succeed())
}

func trafficShiftingOf(conds []metav1.Condition) *metav1.Condition {
	return meta.FindStatusCondition(conds, fleetv1alpha1.ConditionTrafficShifting)
}

// A policy whose traffic cluster is a member routes there, through the member's clients; with
// ServiceImport backends the copies ask their spokes to export the serve Service and the route
// references the imports.
func TestFleetTrafficOnMemberWithServiceImports(t *testing.T) {
	h := startBlueGreen(t, "a", "b", "c")
	g := NewWithT(t)
	ctx := context.Background()
	spec := fleetv1alpha1.PlacementPolicySpec{
		ClusterNames: []string{"a", "b"}, Clusters: ptr.To[int32](2),
		Traffic: &fleetv1alpha1.TrafficSpec{Cluster: "c", BackendKind: fleetv1alpha1.BackendServiceImport,
			ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw", SectionName: "http"},
			Hostnames: []string{"svc.example.com"}, PathPrefix: "/svc"},
	}
	h.createPolicy(g, "imports", spec)
	h.createRayService(g, "svc", "imports")
	for _, m := range []string{"a", "b"} {
		g.Eventually(func(g Gomega) {
			rs := h.memberCopy(g, m, "svc")
			g.Expect(rs).NotTo(BeNil())
			g.Expect(rs.Annotations).To(HaveKeyWithValue(labels.ServeExport, m))
		}, timeout, interval).Should(Succeed())
		h.serve(g, m, "svc")
	}
	key := traffic.Key(types.NamespacedName{Namespace: ns, Name: "svc"})
	g.Eventually(func(g Gomega) {
		var r gwv1.HTTPRoute
		g.Expect(h.members["c"].Get(ctx, key.Route, &r)).To(Succeed())
		g.Expect(string(*r.Spec.ParentRefs[0].SectionName)).To(Equal("http"))
		g.Expect(r.Spec.Hostnames).To(ConsistOf(gwv1.Hostname("svc.example.com")))
		g.Expect(*r.Spec.Rules[0].Matches[0].Path.Value).To(Equal("/svc"))
		refs := map[string]int32{}
		for _, ref := range r.Spec.Rules[0].BackendRefs {
			g.Expect(string(*ref.Kind)).To(Equal("ServiceImport"))
			refs[string(ref.Name)] = *ref.Weight
		}
		g.Expect(refs).To(Equal(map[string]int32{"svc-serve-a": 5000, "svc-serve-b": 5000}))
	}, timeout, interval).Should(Succeed())
	var hubRoute gwv1.HTTPRoute
	err := h.hub.Get(ctx, key.Route, &hubRoute)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no route on the hub: %v", err)
	// The route's namespace, the RayService's, was created on the traffic member as a copy's is.
	var routeNS corev1.Namespace
	g.Expect(h.members["c"].Get(ctx, types.NamespacedName{Name: ns}, &routeNS)).To(Succeed())
	g.Expect(routeNS.Labels).To(And(HaveKey(podsecurity.EnforceLabel), HaveKeyWithValue(labels.HubNamespace, labels.HubNamespaceCreated)))
}

// A route an earlier hub wrote in the Gateway's namespace keeps serving, and the RayService
// says so, until the gateway accepted its replacement in the RayService's namespace; then it
// goes with its backends (make-before-break).
func TestFleetTrafficMovesFromGatewayNamespace(t *testing.T) {
	h := startBlueGreen(t, "a")
	g := NewWithT(t)
	ctx := context.Background()
	legacy, _ := traffic.LegacyKey(types.NamespacedName{Namespace: ns, Name: "svc"}, trafficOnHub())
	origin := func(member string) map[string]string {
		l := map[string]string{labels.OriginNamespace: ns, labels.OriginName: "svc", labels.OriginHub: labels.DefaultHubName}
		if member != "" {
			l[labels.TrafficCluster] = member
		}
		return l
	}
	oldRoute := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: legacy.Route.Namespace, Name: legacy.Route.Name, Labels: origin("")},
		Spec:       gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}}},
	}
	oldBackend := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: legacy.Route.Namespace, Name: legacy.Route.Name + "-a", Labels: origin("a")},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "lb.a.example.com."},
	}
	g.Expect(h.hub.Create(ctx, oldRoute)).To(Succeed())
	g.Expect(h.hub.Create(ctx, oldBackend)).To(Succeed())
	h.createPolicy(g, "routed", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](1), Traffic: trafficOnHub()})
	h.createRayService(g, "svc", "routed")

	t.Log("the new route is written in the RayService's namespace; the earlier one stays while the gateway has not accepted it")
	g.Eventually(func(g Gomega) {
		g.Expect(h.route(g).Namespace).To(Equal(ns))
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("the earlier route " + legacy.Route.String() + " stays"))
	}, timeout, interval).Should(Succeed())
	g.Expect(h.hub.Get(ctx, legacy.Route, &gwv1.HTTPRoute{})).To(Succeed())
	g.Expect(h.hub.Get(ctx, client.ObjectKeyFromObject(oldBackend), &corev1.Service{})).To(Succeed())

	t.Log("once the gateway accepted the new route, the earlier route and its backends go")
	g.Eventually(func(g Gomega) {
		h.accept(g)
		err := h.hub.Get(ctx, legacy.Route, &gwv1.HTTPRoute{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the earlier route: %v", err)
		err = h.hub.Get(ctx, client.ObjectKeyFromObject(oldBackend), &corev1.Service{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the earlier backend: %v", err)
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).NotTo(ContainSubstring("earlier route"))
	}, timeout, interval).Should(Succeed())
}
