package fleet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// A member whose serve endpoint stops answering the hub's probe loses its weight while its API
// server answers and its copy reports it serving, and gets it back when the endpoint answers;
// one the control plane sees NotReady keeps its weight while its endpoint answers.
func TestFleetServeProbeMovesTraffic(t *testing.T) {
	h, healthy := startProbedFleet(t, "a", "b")
	g := NewWithT(t)
	g.Expect(h.hub.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gw"}})).To(Succeed())
	h.createPolicy(g, "routed", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), Traffic: trafficOnHub()})
	h.createRayService(g, "svc", "routed")
	h.serveAt(g, "a", "svc")
	h.serveAt(g, "b", "svc")
	shifting := func(g Gomega) string {
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		return c.Message
	}
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"a": 5000, "b": 5000}))
	}, timeout, interval).Should(Succeed())

	t.Log("b's serve endpoint fails: b's weight goes to a, its member and copy unchanged")
	failed := time.Now()
	healthy["b"].Store(false)
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"a": 10000}))
		g.Expect(shifting(g)).To(ContainSubstring("b takes no traffic: serve endpoint failing: GET /-/healthz: 503"))
	}, timeout, interval).Should(Succeed())
	t.Logf("traffic off b %s after its endpoint failed", time.Since(failed).Round(10*time.Millisecond))

	t.Log("b answers again: it gets its share back")
	healthy["b"].Store(true)
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"a": 5000, "b": 5000}))
	}, timeout, interval).Should(Succeed())

	t.Log("b's MemberCluster turns NotReady while b answers: b keeps its share, and the condition says why")
	setReady := func(status metav1.ConditionStatus, reason string) {
		g.Eventually(func(g Gomega) {
			var mc fleetv1alpha1.MemberCluster
			g.Expect(h.hub.Get(context.Background(), types.NamespacedName{Name: "b"}, &mc)).To(Succeed())
			meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionReady, Status: status, Reason: reason})
			g.Expect(h.hub.Status().Update(context.Background(), &mc)).To(Succeed())
		}, timeout, interval).Should(Succeed())
	}
	setReady(metav1.ConditionFalse, fleetv1alpha1.ReasonMemberNotReady)
	g.Eventually(func(g Gomega) {
		g.Expect(shifting(g)).To(ContainSubstring("b keeps its traffic: not Ready to the hub, its serve endpoint answers"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"a": 5000, "b": 5000}))
	}, 2*time.Second, interval).Should(Succeed())

	t.Log("and fails too: now b is off")
	healthy["b"].Store(false)
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{"a": 10000}))
		g.Expect(shifting(g)).To(ContainSubstring("b takes no traffic: not Ready"))
	}, timeout, interval).Should(Succeed())
	healthy["b"].Store(true)
	setReady(metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReady)
}

// startProbedFleet starts a fleet of members (of a, b, c) whose serve addresses (10.0.0.<n>:8000,
// as serveAt reports them) reach stand-ins of a Ray Serve proxy through the prober's dialer;
// healthy says whether each answers.
func startProbedFleet(t *testing.T, members ...string) (*bgTest, map[string]*atomic.Bool) {
	healthy := map[string]*atomic.Bool{}
	dial := map[string]string{}
	for _, name := range members {
		n := map[string]string{"a": "1", "b": "2", "c": "3"}[name]
		healthy[name] = &atomic.Bool{}
		healthy[name].Store(true)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != dataplane.HealthPath || !healthy[name].Load() {
				http.Error(w, "unhealthy", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("success"))
		}))
		t.Cleanup(srv.Close)
		dial["10.0.0."+n+":8000"] = strings.TrimPrefix(srv.URL, "http://")
	}
	transport := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, dial[addr])
	}}
	probes, err := dataplane.New(dataplane.Config{Interval: 200 * time.Millisecond, Client: &http.Client{Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	h := &bgTest{fleetHarness: startFleetWith(t, fleetOptions{members: members, probes: probes})}
	h.key = traffic.Key(types.NamespacedName{Namespace: ns, Name: "svc"})
	return h, healthy
}

// A member the hub sees NotReady past its failover toleration keeps the RayService while its
// serve endpoint answers the hub's probe (a partition: the hub lost sight of it, its users did
// not), and fails over once the endpoint fails too.
func TestFleetServingMemberIsNotFailedOver(t *testing.T) {
	h, healthy := startProbedFleet(t, "a", "b", "c")
	g := NewWithT(t)
	g.Expect(h.hub.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gw"}})).To(Succeed())
	h.createPolicy(g, "routed", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), Traffic: trafficOnHub(),
		Failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](1)}})
	h.createRayService(g, "svc", "routed")
	var placed []string
	g.Eventually(func(g Gomega) {
		placed = h.binding(g, "svc").Spec.Clusters
		g.Expect(placed).To(HaveLen(2))
	}, timeout, interval).Should(Succeed())
	for _, name := range placed {
		h.serveAt(g, name, "svc")
	}
	lost := placed[1]
	g.Eventually(func(g Gomega) {
		g.Expect(h.weights(g)).To(Equal(map[string]int32{placed[0]: 5000, lost: 5000}))
	}, timeout, interval).Should(Succeed())

	t.Logf("%s turns NotReady to the hub while its endpoint answers: past the 1s toleration it keeps the RayService", lost)
	g.Eventually(func(g Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(h.hub.Get(context.Background(), types.NamespacedName{Name: lost}, &mc)).To(Succeed())
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionReady,
			Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonMemberNotReady})
		g.Expect(h.hub.Status().Update(context.Background(), &mc)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(h.binding(g, "svc").Status.Conditions, fleetv1alpha1.ConditionPlaced)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring(lost + ": not ready"))
		g.Expect(c.Message).To(ContainSubstring("past its toleration, kept: its serve endpoint answers the hub's probe"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(h.binding(g, "svc").Spec.Clusters).To(ConsistOf(placed))
		g.Expect(h.weights(g)).To(Equal(map[string]int32{placed[0]: 5000, lost: 5000}))
	}, 3*time.Second, interval).Should(Succeed())

	t.Logf("%s's endpoint fails too: it fails over", lost)
	healthy[lost].Store(false)
	g.Eventually(func(g Gomega) {
		got := h.binding(g, "svc").Spec.Clusters
		g.Expect(got).To(ContainElement(placed[0]))
		g.Expect(got).NotTo(ContainElement(lost))
		g.Expect(slices.ContainsFunc(got, func(c string) bool { return !slices.Contains(placed, c) })).To(BeTrue(), "a replacement in %v", got)
	}, timeout, interval).Should(Succeed())
}
