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

	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
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
