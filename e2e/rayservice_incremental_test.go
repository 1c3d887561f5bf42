//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Incremental upgrade options of the test: two steps of 50 %, one second apart.
const (
	incrementalStep     = 50
	incrementalSurge    = 50
	incrementalInterval = 1
	testGatewayClass    = "test"
	// gatewayControllerName is the controller the test plays for the "test" GatewayClass.
	gatewayControllerName = "e2e.rayfleet.io/gateway-controller"
	// gatewayPoll is how often the test's Gateway controller looks at the Gateway and the
	// route, well below the one-second interval so that no weight step goes unseen.
	gatewayPoll = 100 * time.Millisecond
)

func TestRayServiceIncrementalUpgrade(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	gw := types.NamespacedName{Namespace: ns, Name: "inc-gateway"}
	route := types.NamespacedName{Namespace: ns, Name: "inc-httproute"}
	weights := playGatewayController(t, gw, route)
	key := createRayService(t, makeRayService("inc", ns).
		Incremental(incrementalSurge, incrementalStep, incrementalInterval).GatewayClass(testGatewayClass).Obj())
	old := expectRayServiceReady(t, key).Status.ActiveServiceStatus.RayClusterName

	t.Run("gateway and route", func(t *testing.T) {
		eventually(t, func(g gomega.Gomega) {
			gateway := &gwv1.Gateway{}
			g.Expect(env.k8s.Get(context.Background(), gw, gateway)).To(gomega.Succeed())
			g.Expect(gateway.Spec.GatewayClassName).To(gomega.Equal(gwv1.ObjectName(testGatewayClass)))
			g.Expect(gateway.Spec.Listeners).To(gomega.ConsistOf(gomega.And(
				gomega.HaveField("Protocol", gwv1.HTTPProtocolType), gomega.HaveField("Port", gwv1.PortNumber(80)))))
			g.Expect(routeWeights(g, route)).To(gomega.Equal(map[string]int32{old + "-serve-svc": 100}))
		})
	})

	updateRayService(t, key, bumpHeadEnv("2"))
	pending := pendingClusterName(t, key, old)
	var rs *rayv1.RayService
	eventually(t, func(g gomega.Gomega) {
		rs = getRayService(g, key)
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(gomega.Equal(pending), "promoted")
		g.Expect(rs.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty())
		g.Expect(routeWeights(g, route)).To(gomega.Equal(map[string]int32{pending + "-serve-svc": 100}))
	})
	expectRayServiceReady(t, key)

	g := gomega.NewWithT(t)
	// The route went 100/0 → 50/50 → 0/100, one step per interval, never backwards.
	steps := weights.pairs(old+"-serve-svc", pending+"-serve-svc")
	g.Expect(steps).To(gomega.ContainElements([2]int32{50, 50}, [2]int32{0, 100}), "weights seen: %v", steps)
	for i := 1; i < len(steps); i++ {
		g.Expect(steps[i][1]).To(gomega.BeNumerically(">=", steps[i-1][1]), "pending weight went down: %v", steps)
	}
	for _, s := range steps {
		g.Expect(s[0]+s[1]).To(gomega.Equal(int32(100)), "weights must add up to 100: %v", steps)
	}
	// Serve's target_capacity moved with them: the old cluster drained to 0, the new one at 100.
	g.Expect(standIn(ns, old).TargetCapacity()).To(gomega.HaveValue(gomega.Equal(int32(0))))
	g.Expect(standIn(ns, pending).TargetCapacity()).To(gomega.HaveValue(gomega.Equal(int32(100))))
	g.Expect(rs.Status.ActiveServiceStatus.TargetCapacity).To(gomega.HaveValue(gomega.Equal(int32(100))))
	g.Expect(rs.Status.ActiveServiceStatus.TrafficRoutedPercent).To(gomega.HaveValue(gomega.Equal(int32(100))))
	g.Expect(eventReasons(g, ns, "inc")).To(gomega.ContainElements("CreatedGateway", "CreatedHTTPRoute",
		"UpdatedHTTPRoute", "UpdatedServeTargetCapacity"))
}

// routeWeights returns the backend weights of the route's one rule, by Service name.
func routeWeights(g gomega.Gomega, key types.NamespacedName) map[string]int32 {
	route := &gwv1.HTTPRoute{}
	g.Expect(env.k8s.Get(context.Background(), key, route)).To(gomega.Succeed())
	g.Expect(route.Spec.Rules).To(gomega.HaveLen(1))
	out := map[string]int32{}
	for _, b := range route.Spec.Rules[0].BackendRefs {
		out[string(b.Name)] = ptr.Deref(b.Weight, 1)
	}
	return out
}

// weightLog records every distinct set of route weights the test's Gateway controller saw.
type weightLog struct {
	mu   sync.Mutex
	seen []map[string]int32
}

func (l *weightLog) observe(w map[string]int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.seen); n > 0 && fmt.Sprint(l.seen[n-1]) == fmt.Sprint(w) {
		return
	}
	l.seen = append(l.seen, w)
}

// pairs returns the (old, new) weights of the observations that route to both Services.
func (l *weightLog) pairs(oldSvc, newSvc string) [][2]int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][2]int32
	for _, w := range l.seen {
		o, okOld := w[oldSvc]
		n, okNew := w[newSvc]
		if okOld && okNew && !slices.Contains(out, [2]int32{o, n}) {
			out = append(out, [2]int32{o, n})
		}
	}
	return out
}

// playGatewayController stands in for a Gateway implementation of the "test" class until the
// test ends: it marks the Gateway Accepted and Programmed and the route Accepted with its
// references resolved (for their current generations), which is what the spoke waits for
// before it moves capacity, and records the route's weights as they change.
func playGatewayController(t *testing.T, gw, route types.NamespacedName) *weightLog {
	t.Helper()
	log := &weightLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		ticker := time.NewTicker(gatewayPoll)
		defer ticker.Stop()
		for {
			if err := markGateway(ctx, gw); err != nil && ctx.Err() == nil {
				t.Logf("test Gateway controller: %v", err)
			}
			if err := markRoute(ctx, gw, route, log); err != nil && ctx.Err() == nil {
				t.Logf("test Gateway controller: %v", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return log
}

// markGateway sets the Gateway's Accepted and Programmed conditions when they are not True
// for its generation.
func markGateway(ctx context.Context, key types.NamespacedName) error {
	gw := &gwv1.Gateway{}
	if err := env.k8s.Get(ctx, key, gw); err != nil {
		return ignoreNotFound(err)
	}
	changed := setTrue(&gw.Status.Conditions, gw.Generation, string(gwv1.GatewayConditionAccepted), string(gwv1.GatewayReasonAccepted))
	changed = setTrue(&gw.Status.Conditions, gw.Generation, string(gwv1.GatewayConditionProgrammed), string(gwv1.GatewayReasonProgrammed)) || changed
	if !changed {
		return nil
	}
	return ignoreConflict(env.k8s.Status().Update(ctx, gw))
}

// markRoute records the route's weights and sets its parent status for the Gateway.
func markRoute(ctx context.Context, gw, key types.NamespacedName, log *weightLog) error {
	route := &gwv1.HTTPRoute{}
	if err := env.k8s.Get(ctx, key, route); err != nil {
		return ignoreNotFound(err)
	}
	if len(route.Spec.Rules) == 1 {
		w := map[string]int32{}
		for _, b := range route.Spec.Rules[0].BackendRefs {
			w[string(b.Name)] = ptr.Deref(b.Weight, 1)
		}
		log.observe(w)
	}
	var parent *gwv1.RouteParentStatus
	for i := range route.Status.Parents {
		if string(route.Status.Parents[i].ParentRef.Name) == gw.Name {
			parent = &route.Status.Parents[i]
		}
	}
	if parent == nil {
		route.Status.Parents = append(route.Status.Parents, gwv1.RouteParentStatus{
			ParentRef:      gwv1.ParentReference{Name: gwv1.ObjectName(gw.Name), Namespace: ptr.To(gwv1.Namespace(gw.Namespace))},
			ControllerName: gatewayControllerName,
		})
		parent = &route.Status.Parents[len(route.Status.Parents)-1]
	}
	changed := setTrue(&parent.Conditions, route.Generation, string(gwv1.RouteConditionAccepted), string(gwv1.RouteReasonAccepted))
	changed = setTrue(&parent.Conditions, route.Generation, string(gwv1.RouteConditionResolvedRefs), string(gwv1.RouteReasonResolvedRefs)) || changed
	if !changed {
		return nil
	}
	return ignoreConflict(env.k8s.Status().Update(ctx, route))
}

// setTrue sets condition ct True for generation, reporting whether anything changed.
func setTrue(conds *[]metav1.Condition, generation int64, ct, reason string) bool {
	if c := meta.FindStatusCondition(*conds, ct); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation {
		return false
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: ct, Status: metav1.ConditionTrue, Reason: reason, ObservedGeneration: generation,
		Message: "set by the e2e test's Gateway controller",
	})
	return true
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ignoreConflict drops a conflict with the spoke's own write: the next poll tries again.
func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}
