package fleet

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// apiCalls counts the requests sent to an API server, as "VERB path" without the query;
// watches are left out (one per informer, not per reconcile).
type apiCalls struct {
	mu    sync.Mutex
	calls []string
}

func (a *apiCalls) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.URL.Query().Get("watch") != "true" {
			a.mu.Lock()
			a.calls = append(a.calls, req.Method+" "+req.URL.Path)
			a.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// since returns the calls after the first n whose path names one of resources.
func (a *apiCalls) since(n int, resources ...string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(a.calls[n:]), func(c string) bool {
		return !slices.ContainsFunc(resources, func(r string) bool { return strings.Contains(c, "/"+r) })
	})
}

func (a *apiCalls) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.calls)
}

// reconciles is how many reconciles of hub RayServices this process ran so far.
func reconciles(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelOf(m, "controller") == "hub-rayservice" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// trafficResources are the kinds the hub reads and writes in a traffic cluster.
var trafficResources = []string{"httproutes", "services", "endpointslices", "serviceimports"}

// A RayService with traffic on the hub, served and its route accepted, costs no API call in
// the traffic cluster at a resync: the route and its backends are read from the hub's
// informers with the group, and nothing is written while they are as decided.
func TestFleetTrafficSettledMakesNoCalls(t *testing.T) {
	calls := &apiCalls{}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	h := &bgTest{fleetHarness: startFleetWith(t, fleetOptions{clock: clk, members: []string{"a", "b"}, hubCalls: calls}), clk: clk}
	ctx := context.Background()
	if err := h.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gw"}}); err != nil {
		t.Fatal(err)
	}
	h.key = traffic.Key(types.NamespacedName{Namespace: ns, Name: "svc"})
	g := NewWithT(t)
	h.createPolicy(g, "two", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), Traffic: trafficOnHub()})
	h.createRayService(g, "svc", "two")
	for _, c := range []string{"a", "b"} {
		h.serveAt(g, c, "svc")
	}
	g.Eventually(func(g Gomega) {
		h.clk.Step(time.Duration(fleetv1alpha1.DefaultSoakSeconds+1) * time.Second)
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"a": 5000, "b": 5000}))
		h.accept(g)
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonTrafficSteady))
	}, timeout, interval).Should(Succeed())

	// Settled: a few resyncs (one a second here) and the calls they made in the traffic cluster.
	start, startReconciles := calls.count(), reconciles(t)
	g.Eventually(func() float64 { return reconciles(t) - startReconciles }, timeout, interval).Should(BeNumerically(">=", 3))
	made, n := calls.since(start, trafficResources...), reconciles(t)-startReconciles
	t.Logf("%d calls in the traffic cluster over %.0f resyncs: %.1f a resync: %v", len(made), n, float64(len(made))/n, made)
	g.Expect(made).To(BeEmpty(), fmt.Sprintf("over %.0f resyncs", n))
}

// importRefs are the route's backends by the ServiceImport each refers to.
func (h *bgTest) importRefs(g Gomega) map[string]int32 {
	out := map[string]int32{}
	for _, ref := range h.route(g).Spec.Rules[0].BackendRefs {
		g.Expect(ref.Kind).To(HaveValue(BeEquivalentTo("ServiceImport")))
		out[string(ref.Name)] = *ref.Weight
	}
	return out
}

// A RayService routed to ServiceImports, settled, costs no API call in the traffic cluster at a
// resync either: the ServiceImports are read from the informers too, and one appearing (a
// member's spoke exporting under the current name) reaches the route without a list.
func TestFleetTrafficImportsSettledMakesNoCalls(t *testing.T) {
	calls := &apiCalls{}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	h := &bgTest{fleetHarness: startFleetWith(t, fleetOptions{clock: clk, members: []string{"a", "b"}, hubCalls: calls, serviceImports: true}), clk: clk}
	ctx := context.Background()
	if err := h.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gw"}}); err != nil {
		t.Fatal(err)
	}
	h.key = traffic.Key(types.NamespacedName{Namespace: ns, Name: "svc"})
	g := NewWithT(t)
	spec := trafficOnHub()
	spec.BackendKind = fleetv1alpha1.BackendServiceImport
	h.createPolicy(g, "two", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), Traffic: spec})
	h.createRayService(g, "svc", "two")
	for _, c := range []string{"a", "b"} {
		h.serve(g, c, "svc")
	}
	legacyA, legacyB := traffic.LegacyImportName(h.key, "a"), traffic.LegacyImportName(h.key, "b")
	g.Eventually(func(g Gomega) {
		h.clk.Step(time.Duration(fleetv1alpha1.DefaultSoakSeconds+1) * time.Second)
		g.Expect(h.importRefs(g)).To(Equal(map[string]int32{legacyA: 5000, legacyB: 5000}))
		h.accept(g)
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonTrafficSteady))
	}, timeout, interval).Should(Succeed())

	start, startReconciles := calls.count(), reconciles(t)
	g.Eventually(func() float64 { return reconciles(t) - startReconciles }, timeout, interval).Should(BeNumerically(">=", 3))
	made, n := calls.since(start, trafficResources...), reconciles(t)-startReconciles
	t.Logf("%d calls in the traffic cluster over %.0f resyncs: %.1f a resync: %v", len(made), n, float64(len(made))/n, made)
	g.Expect(made).To(BeEmpty(), fmt.Sprintf("over %.0f resyncs", n))

	t.Log("a member's current export name imported: the route refers to it, the imports read from the informers")
	start = calls.count()
	current := traffic.ImportName(h.key, "a")
	g.Expect(h.hub.Create(ctx, &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: current},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP,
			Ports: []mcsv1alpha1.ServicePort{{Port: traffic.ServePort, Protocol: corev1.ProtocolTCP}}}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(h.importRefs(g)).To(Equal(map[string]int32{current: 5000, legacyB: 5000}))
	}, timeout, interval).Should(Succeed())
	g.Expect(calls.since(start, "serviceimports")).To(BeEmpty(), "ServiceImports listed uncached")
}

// A RayService whose route the gateway refuses in its namespace keeps the route an earlier
// hub wrote in the Gateway's namespace; settled so, it costs no API call in the traffic cluster
// at a resync: that route is read from the informers of the Gateway's namespace, whose
// change (deleted by hand) reaches the RayService's status.
func TestFleetTrafficLegacySettledMakesNoCalls(t *testing.T) {
	calls := &apiCalls{}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	h := &bgTest{fleetHarness: startFleetWith(t, fleetOptions{clock: clk, members: []string{"a"}, hubCalls: calls}), clk: clk}
	ctx := context.Background()
	if err := h.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gw"}}); err != nil {
		t.Fatal(err)
	}
	h.key = traffic.Key(types.NamespacedName{Namespace: ns, Name: "svc"})
	g := NewWithT(t)
	legacy, _ := traffic.LegacyKey(h.key.RayService, trafficOnHub())
	g.Expect(h.hub.Create(ctx, &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: legacy.Route.Namespace, Name: legacy.Route.Name,
			Labels: map[string]string{labels.OriginNamespace: ns, labels.OriginName: "svc", labels.OriginHub: labels.DefaultHubName}},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}}},
	})).To(Succeed())
	h.createPolicy(g, "routed", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](1), Traffic: trafficOnHub()})
	h.createRayService(g, "svc", "routed")
	h.serveAt(g, "a", "svc")
	stays := "the earlier route " + legacy.Route.String() + " stays"
	g.Eventually(func(g Gomega) {
		h.clk.Step(time.Duration(fleetv1alpha1.DefaultSoakSeconds+1) * time.Second)
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"a": 10000}))
		h.refuse(g)
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("NotAllowedByListeners"))
		g.Expect(c.Message).To(ContainSubstring(stays))
	}, timeout, interval).Should(Succeed())

	start, startReconciles := calls.count(), reconciles(t)
	g.Eventually(func() float64 { return reconciles(t) - startReconciles }, timeout, interval).Should(BeNumerically(">=", 3))
	made, n := calls.since(start, trafficResources...), reconciles(t)-startReconciles
	t.Logf("%d calls in the traffic cluster over %.0f resyncs: %.1f a resync: %v", len(made), n, float64(len(made))/n, made)
	g.Expect(made).To(BeEmpty(), fmt.Sprintf("over %.0f resyncs", n))

	t.Log("the earlier route deleted by hand: the RayService no longer says it stays, having read nothing uncached")
	start = calls.count()
	g.Expect(h.hub.Delete(ctx, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: legacy.Route.Namespace, Name: legacy.Route.Name}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).NotTo(ContainSubstring("earlier route"))
	}, timeout, interval).Should(Succeed())
	g.Expect(calls.since(start, trafficResources...)).To(BeEmpty(), "calls in the traffic cluster")
}

// refuse plays the gateway refusing the route's current generation: its listeners do not
// allow routes from the RayService's namespace.
func (h *bgTest) refuse(g Gomega) {
	r := h.route(g)
	r.Status.Parents = []gwv1.RouteParentStatus{{
		ParentRef:      gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "gw"},
		ControllerName: "example.com/gateway",
		Conditions: []metav1.Condition{{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionFalse,
			Reason: "NotAllowedByListeners", Message: "no listener allows the namespace", ObservedGeneration: r.Generation,
			LastTransitionTime: metav1.Now()}},
	}}
	g.Expect(h.hub.Status().Update(context.Background(), r)).To(Succeed())
}
