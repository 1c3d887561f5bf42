//go:build e2e

package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/loadbalancer"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// routedNS holds the RayService svc the hub routes through the fleet's Gateway at /.
const routedNS = "routed"

// serveConfig is one Serve application at /, what the route's pathPrefix routes.
const serveConfig = `applications:
  - name: berry
    import_path: berry.deployment_graph
    route_prefix: /
    deployments:
      - name: BerryStand
        num_replicas: 1
`

// placeRouted creates namespace routedNS on the hub with a policy placing on both members and
// routing through the fleet's Gateway at /, and the RayService svc with a LoadBalancer serve
// Service, which each member's load balancer stand-in gives the member's serve IP.
func placeRouted(t *testing.T, f *localfleet.Fleet) {
	t.Helper()
	rs := raybuilder.MakeRayService("svc", routedNS).Annotation(labels.PlacementPolicy, "routed").Obj()
	rs.UID, rs.Generation = "", 0
	rs.Spec.ServeConfigV2 = serveConfig
	rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: routedNS}},
		&fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: routedNS, Name: "routed"},
			Spec: fleetv1alpha1.PlacementPolicySpec{
				Clusters: ptr.To[int32](2),
				Traffic: &fleetv1alpha1.TrafficSpec{
					ParentRef:  fleetv1alpha1.TrafficParentRef{Namespace: localfleet.GatewayNamespace, Name: localfleet.GatewayName},
					PathPrefix: "/",
				},
			}},
		rs,
	}
	for _, obj := range objs {
		if err := f.Hub.Client.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// routes are the hub's HTTPRoutes of routedNS/svc on the traffic cluster (the hub), by
// namespace: the Gateway's (where the previous release wrote it) and routedNS.
func routes(g gomega.Gomega, f *localfleet.Fleet) map[string]*gwv1.HTTPRoute {
	var list gwv1.HTTPRouteList
	g.Expect(f.Hub.Client.List(context.Background(), &list, client.MatchingLabels{
		labels.OriginNamespace: routedNS, labels.OriginName: "svc"})).To(gomega.Succeed())
	out := map[string]*gwv1.HTTPRoute{}
	for i := range list.Items {
		out[list.Items[i].Namespace] = &list.Items[i]
	}
	return out
}

// accepted reports whether the fleet's Gateway accepted route.
func accepted(route *gwv1.HTTPRoute) bool {
	if route == nil {
		return false
	}
	for _, p := range route.Status.Parents {
		if string(p.ParentRef.Name) == localfleet.GatewayName && meta.IsStatusConditionTrue(p.Conditions, string(gwv1.RouteConditionAccepted)) {
			return true
		}
	}
	return false
}

// routeEvent is one change of a route of routedNS/svc as a watch on the hub saw it.
type routeEvent struct {
	at        time.Time
	kind      watch.EventType
	namespace string
	accepted  bool
}

func (e routeEvent) String() string {
	return fmt.Sprintf("%s %s route in %s (accepted %v)", e.at.Format("15:04:05.000"), e.kind, e.namespace, e.accepted)
}

// routeWatch records every change of routedNS/svc's routes in every namespace, in the order
// the API server made them (one watch: events in resourceVersion order), so that the order of
// the new route's acceptance and the old route's deletion is seen as it happened.
type routeWatch struct {
	mu     sync.Mutex
	events []routeEvent
	err    error
	stop   context.CancelFunc
	done   chan struct{}
}

// watchRoutes starts the watch; it runs until the test ends.
func watchRoutes(t *testing.T, f *localfleet.Fleet) *routeWatch {
	t.Helper()
	c, err := client.NewWithWatch(f.Hub.Config, client.Options{Scheme: f.Hub.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &routeWatch{stop: cancel, done: make(chan struct{})}
	go w.run(ctx, c)
	t.Cleanup(func() { w.stop(); <-w.done })
	return w
}

// run watches from the current state on, starting again from the last resourceVersion seen
// when the API server ends a watch.
func (w *routeWatch) run(ctx context.Context, c client.WithWatch) {
	defer close(w.done)
	selector := client.MatchingLabels{labels.OriginNamespace: routedNS, labels.OriginName: "svc"}
	rv := ""
	for ctx.Err() == nil {
		opts := []client.ListOption{selector}
		if rv != "" {
			opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		}
		wi, err := c.Watch(ctx, &gwv1.HTTPRouteList{}, opts...)
		if err != nil {
			w.fail(err)
			return
		}
		for ev := range wi.ResultChan() {
			route, ok := ev.Object.(*gwv1.HTTPRoute)
			if !ok {
				if ctx.Err() == nil {
					w.fail(fmt.Errorf("watching routes: %s %v", ev.Type, ev.Object))
				}
				wi.Stop()
				return
			}
			rv = route.ResourceVersion
			w.mu.Lock()
			w.events = append(w.events, routeEvent{at: time.Now(), kind: ev.Type, namespace: route.Namespace, accepted: accepted(route)})
			w.mu.Unlock()
		}
	}
}

func (w *routeWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// madeBeforeBroken checks the watch's record: the route in the Gateway's namespace was deleted,
// and only after the route in routedNS was seen accepted. It returns the time between the two.
func (w *routeWatch) madeBeforeBroken(t *testing.T) time.Duration {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("the watch on routes failed: %v", w.err)
	}
	var acceptedAt time.Time
	for _, e := range w.events {
		switch {
		case e.namespace == routedNS && e.accepted && acceptedAt.IsZero():
			acceptedAt = e.at
		case e.namespace == localfleet.GatewayNamespace && e.kind == watch.Deleted:
			if acceptedAt.IsZero() {
				t.Fatalf("the route in namespace %s was deleted before the one in %s was accepted:\n%s", e.namespace, routedNS, w.text())
			}
			t.Logf("route changes:\n%s", w.text())
			return e.at.Sub(acceptedAt)
		}
	}
	t.Fatalf("the route in namespace %s was not deleted:\n%s", localfleet.GatewayNamespace, w.text())
	return 0
}

func (w *routeWatch) text() string {
	lines := make([]string, len(w.events))
	for i, e := range w.events {
		lines[i] = "  " + e.String()
	}
	return strings.Join(lines, "\n")
}

// requestEvery paces the requests through the Gateway; requestTimeout gives each up (a
// stand-in answers at once).
const (
	requestEvery   = 20 * time.Millisecond
	requestTimeout = 2 * time.Second
)

// requests sends GET requests through the Gateway one after the other until stopped, counting
// them, the failures (a transport error or a status other than 200, the first few kept) and
// the members that answered.
type requests struct {
	mu        sync.Mutex
	sent      int
	failures  []string
	failed    int
	byCluster map[string]int
	stop      context.CancelFunc
	done      chan struct{}
}

// startRequests sends requests to url until the test ends (or stop).
func startRequests(t *testing.T, url string) *requests {
	ctx, cancel := context.WithCancel(context.Background())
	r := &requests{byCluster: map[string]int{}, stop: cancel, done: make(chan struct{})}
	httpClient := &http.Client{Timeout: requestTimeout}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(requestEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			from, err := get(ctx, httpClient, url)
			if ctx.Err() != nil {
				return // cut short by stop, not the gateway's doing
			}
			r.mu.Lock()
			r.sent++
			if err != nil {
				r.failed++
				if len(r.failures) < 10 {
					r.failures = append(r.failures, time.Now().Format("15:04:05.000")+": "+err.Error())
				}
			} else {
				r.byCluster[from]++
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(r.close)
	return r
}

func (r *requests) close() {
	r.stop()
	<-r.done
}

// String is the count in one line.
func (r *requests) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	parts := []string{}
	for _, c := range slices.Sorted(maps.Keys(r.byCluster)) {
		parts = append(parts, fmt.Sprintf("%s %d", c, r.byCluster[c]))
	}
	s := fmt.Sprintf("%d requests, %d failed; answered by %s", r.sent, r.failed, strings.Join(parts, ", "))
	if len(r.failures) > 0 {
		s += "; failures: " + strings.Join(r.failures, "; ")
	}
	return s
}

// counts are the requests sent and failed so far.
func (r *requests) counts() (sent, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent, r.failed
}

// get sends one request and returns the member that answered it.
func get(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return "", fmt.Errorf("reading the body of a %d: %w", resp.StatusCode, err)
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var from loadbalancer.Response
	if err := json.Unmarshal(body, &from); err != nil {
		return "", fmt.Errorf("a 200 whose body is not a stand-in's answer (%q): %w", body, err)
	}
	return from.Cluster, nil
}

// routeBeforeUpgrade waits until the previous release routes routedNS/svc: Ready, its route in
// the Gateway's namespace accepted, and both members answering through Traefik. It then starts
// the requests and the watch on routes that run to the end of the test, and returns them with
// the copies and Pods of routedNS/svc.
func routeBeforeUpgrade(t *testing.T, f *localfleet.Fleet) (snapshot, *requests, *routeWatch) {
	t.Helper()
	start := time.Now()
	var before snapshot
	eventually(t, func(g gomega.Gomega) {
		g.Expect(ready(hubRayService(g, f, routedNS))).To(gomega.BeTrue(), "%s Ready on the previous release", routedNS)
		r := routes(g, f)
		g.Expect(r).To(gomega.HaveKey(localfleet.GatewayNamespace), "the previous release's route in the Gateway's namespace")
		g.Expect(r).NotTo(gomega.HaveKey(routedNS), "a route in the RayService's namespace on the previous release")
		g.Expect(accepted(r[localfleet.GatewayNamespace])).To(gomega.BeTrue(), "the previous release's route accepted")
		before = snap(g, f, routedNS)
	})
	// Traefik reports a route accepted before it routes by it (it applies what it read up to
	// two seconds later): the requests that count start once a run of them succeeds.
	warm := &http.Client{Timeout: requestTimeout}
	eventually(t, func(g gomega.Gomega) {
		from := map[string]int{}
		for range 25 {
			c, err := get(t.Context(), warm, f.GatewayURL+"/")
			g.Expect(err).NotTo(gomega.HaveOccurred(), "a request through the Gateway on the previous release")
			from[c]++
		}
		g.Expect(from).To(gomega.And(gomega.HaveKey(memberUS), gomega.HaveKey(memberEU)), "members answering through the Gateway")
	})
	w := watchRoutes(t, f)
	reqs := startRequests(t, f.GatewayURL+"/")
	eventually(t, func(g gomega.Gomega) {
		reqs.mu.Lock()
		defer reqs.mu.Unlock()
		g.Expect(reqs.failed).To(gomega.BeZero(), "requests through the Gateway on the previous release: %v", reqs.failures)
		g.Expect(reqs.byCluster).To(gomega.And(gomega.HaveKey(memberUS), gomega.HaveKey(memberEU)), "members answering through the Gateway")
	})
	t.Logf("the previous release routes %s/svc through the Gateway (%v waiting): %s", routedNS, time.Since(start).Round(time.Millisecond), reqs)
	return before, reqs, w
}

// routeWithoutGrant checks the upgraded hub without a NamespaceGrant: routedNS/svc keeps its
// traffic with a KeptWithoutGrant warning (the previous release's route counts as routed before
// grants), a route of it stays accepted (the previous release's, or the one it may already be
// moving to), and no request has failed.
func routeWithoutGrant(t *testing.T, f *localfleet.Fleet, reqs *requests) {
	t.Helper()
	start := time.Now()
	var grant, shifting *metav1.Condition
	eventually(t, func(g gomega.Gomega) {
		conds := hubRayService(g, f, routedNS).Status.Conditions
		grant = meta.FindStatusCondition(conds, fleetv1alpha1.ConditionGrantMissing)
		g.Expect(grant).NotTo(gomega.BeNil(), "GrantMissing on %s/svc", routedNS)
		g.Expect(grant.Status).To(gomega.Equal(metav1.ConditionTrue))
		g.Expect(grant.Reason).To(gomega.Equal(fleetv1alpha1.ReasonKeptWithoutGrant), "GrantMissing on %s/svc: %s", routedNS, grant.Message)
		g.Expect(grant.Message).To(gomega.ContainSubstring("namespace "+routedNS+" has no NamespaceGrant for the hub's cluster as traffic cluster"),
			"GrantMissing on %s/svc", routedNS)
		shifting = meta.FindStatusCondition(conds, fleetv1alpha1.ConditionTrafficShifting)
		r := routes(g, f)
		g.Expect(accepted(r[localfleet.GatewayNamespace]) || accepted(r[routedNS])).To(gomega.BeTrue(),
			"a route of %s/svc accepted without a grant: %v", routedNS, r)
	})
	t.Logf("without a grant: GrantMissing %s: %s", grant.Reason, grant.Message)
	if shifting != nil {
		t.Logf("without a grant: TrafficShifting %s %s: %s", shifting.Status, shifting.Reason, shifting.Message)
	}
	if _, failed := reqs.counts(); failed > 0 {
		t.Fatalf("requests through the Gateway failed across the upgrade: %s", reqs)
	}
	t.Logf("across the upgrade (%v waiting for the warning): %s", time.Since(start).Round(time.Millisecond), reqs)
}

// routeMoves checks that, once granted, the upgraded hub moves routedNS/svc's route into
// routedNS make-before-break (the old one deleted only after the new one was accepted), that
// requests kept succeeding throughout and after, and that the warning went.
func routeMoves(t *testing.T, f *localfleet.Fleet, reqs *requests, w *routeWatch, grantedAt time.Time) {
	t.Helper()
	eventually(t, func(g gomega.Gomega) {
		r := routes(g, f)
		g.Expect(r).To(gomega.HaveKey(routedNS), "the route in the RayService's namespace")
		g.Expect(accepted(r[routedNS])).To(gomega.BeTrue(), "the route in the RayService's namespace accepted")
		g.Expect(r).NotTo(gomega.HaveKey(localfleet.GatewayNamespace), "the route in the Gateway's namespace")
		g.Expect(meta.FindStatusCondition(hubRayService(g, f, routedNS).Status.Conditions, fleetv1alpha1.ConditionGrantMissing)).
			To(gomega.BeNil(), "GrantMissing on %s/svc once granted", routedNS)
	})
	moved := time.Now()
	gap := w.madeBeforeBroken(t)
	t.Logf("the route moved within %v of the grant; the old route went %v after the new one was accepted",
		moved.Sub(grantedAt).Round(time.Millisecond), gap.Round(time.Millisecond))
	movedAt, _ := reqs.counts()
	eventually(t, func(g gomega.Gomega) {
		sent, _ := reqs.counts()
		g.Expect(sent).To(gomega.BeNumerically(">=", movedAt+100), "requests after the move")
	})
	reqs.close()
	t.Logf("through the upgrade and the move: %s", reqs)
	if _, failed := reqs.counts(); failed > 0 {
		t.Fatalf("requests through the Gateway failed: %s", reqs)
	}
}
