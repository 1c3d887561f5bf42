//go:build e2e

package bluegreen

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/e2e/internal/traefik"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/names"
)

// routePoll is how often the route recorder reads the route: often enough that a step's window
// (at least an interval, 5 s or more) is known to a small fraction of it.
const routePoll = 100 * time.Millisecond

// appliedMargin is how long after the recorder first read a configuration in Traefik's API a
// request may still have been routed by the one before: a read interval, and a request sent
// just before the switch.
const appliedMargin = routePoll + 200*time.Millisecond

// routeState is the hub's HTTPRoute for a RayService as the recorder read it.
type routeState struct {
	// at is when it was first read so.
	at time.Time
	// exists is whether the route existed.
	exists     bool
	generation int64
	// weights are the route's weights by member; a member without a backendRef is absent.
	weights map[string]int32
	// accepted is whether the gateway accepted this generation: Accepted True at it for the
	// Gateway, and no ResolvedRefs False at it.
	accepted bool
	// applied are the weights Traefik routes by, per member, read from its API; nil when it
	// has no configuration for the route.
	applied map[string]int32
}

// same reports whether two reads show the same route.
func (s routeState) same(o routeState) bool {
	return s.exists == o.exists && s.generation == o.generation && s.accepted == o.accepted &&
		maps.Equal(s.weights, o.weights) && maps.Equal(s.applied, o.applied) && (s.applied == nil) == (o.applied == nil)
}

// String is the state in one line, for logs and failure messages.
func (s routeState) String() string {
	if !s.exists {
		return s.at.Format("15:04:05.000") + " no route"
	}
	applied := "none"
	if s.applied != nil {
		applied = weightsText(s.applied)
	}
	return fmt.Sprintf("%s gen %d %s accepted=%v applied=%s", s.at.Format("15:04:05.000"), s.generation, weightsText(s.weights), s.accepted, applied)
}

// weightsText is weights in a stable order: "eu=2500,us=7500".
func weightsText(w map[string]int32) string {
	parts := make([]string, 0, len(w))
	for _, m := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, fmt.Sprintf("%s=%d", m, w[m]))
	}
	return strings.Join(parts, ",")
}

// routeRecorder keeps every distinct state of a RayService's route, read every routePoll.
type routeRecorder struct {
	ns, name string
	mu       sync.Mutex
	states   []routeState
	errs     int
	lastErr  error
	stop     context.CancelFunc
	done     chan struct{}
}

// recordRoute starts recording the route of the hub RayService ns/name until the test ends.
func recordRoute(t *testing.T, ns, name string) *routeRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &routeRecorder{ns: ns, name: name, stop: cancel, done: make(chan struct{})}
	go r.run(ctx)
	t.Cleanup(r.close)
	return r
}

// close stops the recorder.
func (r *routeRecorder) close() {
	r.stop()
	<-r.done
}

func (r *routeRecorder) run(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(routePoll)
	defer tick.Stop()
	for {
		s, err := readRoute(ctx, r.ns, r.name)
		r.mu.Lock()
		switch {
		case err != nil:
			r.errs++
			r.lastErr = err
		case len(r.states) == 0 || !r.states[len(r.states)-1].same(s):
			r.states = append(r.states, s)
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// snapshot is every state recorded so far, oldest first.
func (r *routeRecorder) snapshot() []routeState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states)
}

// acceptedAt is when the recorder first saw the gateway accept the route with exactly weights
// want, at or after since; ok is false when it has not (yet).
func (r *routeRecorder) acceptedAt(want map[string]int32, since time.Time) (at time.Time, ok bool) {
	for _, s := range r.snapshot() {
		if !s.at.Before(since) && s.exists && s.accepted && maps.Equal(s.weights, want) {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// appliedAt is when the recorder first saw Traefik route by exactly weights want, at or after
// since; ok is false when it has not (yet).
func (r *routeRecorder) appliedAt(want map[string]int32, since time.Time) (at time.Time, ok bool) {
	for _, s := range r.snapshot() {
		if !s.at.Before(since) && s.applied != nil && maps.Equal(s.applied, want) {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// changedAt is when the recorder first saw the route's spec give weights other than prior,
// at or after since; ok is false when it has not (yet).
func (r *routeRecorder) changedAt(prior map[string]int32, since time.Time) (at time.Time, ok bool) {
	for _, s := range r.snapshot() {
		if !s.at.Before(since) && s.exists && !maps.Equal(s.weights, prior) {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// changedTo is when the recorder first saw the route's spec give exactly weights want, at or
// after since, accepted or not; ok is false when it has not (yet).
func (r *routeRecorder) changedTo(want map[string]int32, since time.Time) (at time.Time, ok bool) {
	for _, s := range r.snapshot() {
		if !s.at.Before(since) && s.exists && maps.Equal(s.weights, want) {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// history is the states recorded, one per line, for failure messages.
func (r *routeRecorder) history() string {
	var b strings.Builder
	for _, s := range r.snapshot() {
		b.WriteString("\n  " + s.String())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errs > 0 {
		fmt.Fprintf(&b, "\n  (%d reads failed, the last: %v)", r.errs, r.lastErr)
	}
	return b.String()
}

// period is one stretch of time during which the gateway had accepted the route with the same
// weights: from the acceptance the recorder saw until the route's spec next changed.
type period struct {
	from, to time.Time
	weights  map[string]int32
}

// acceptedPeriods are the stretches between since and until during which an accepted route
// held the same weights, in order.
func (r *routeRecorder) acceptedPeriods(since, until time.Time) []period {
	states := r.snapshot()
	var out []period
	for i, s := range states {
		if !s.exists || !s.accepted || s.at.Before(since) || !s.at.Before(until) {
			continue
		}
		end := until
		for _, next := range states[i+1:] {
			if !next.exists || next.generation != s.generation || !maps.Equal(next.weights, s.weights) {
				end = next.at
				break
			}
		}
		if n := len(out); n > 0 && maps.Equal(out[n-1].weights, s.weights) && !out[n-1].to.Before(s.at) {
			out[n-1].to = end // a re-acceptance of the same weights
			continue
		}
		if end.After(until) {
			end = until
		}
		out = append(out, period{from: s.at, to: end, weights: s.weights})
	}
	return out
}

// readRoute reads the hub's route for ns/name in the RayService's namespace, found by its
// origin labels, and maps its backends to members by the names the hub gives them
// (names.Distinct of the route's name and the member's).
func readRoute(ctx context.Context, ns, name string) (routeState, error) {
	s := routeState{at: time.Now()}
	var routes gwv1.HTTPRouteList
	err := fleet.Hub.Client.List(ctx, &routes, client.InNamespace(ns),
		client.MatchingLabels{labels.OriginNamespace: ns, labels.OriginName: name})
	if err != nil {
		return s, fmt.Errorf("listing HTTPRoutes of %s/%s: %w", ns, name, err)
	}
	switch len(routes.Items) {
	case 0:
		return s, nil
	case 1:
	default:
		return s, fmt.Errorf("%d HTTPRoutes of %s/%s", len(routes.Items), ns, name)
	}
	route := &routes.Items[0]
	s.exists, s.generation, s.weights = true, route.Generation, map[string]int32{}
	byBackend := map[string]string{}
	for _, m := range members {
		byBackend[names.Distinct(route.Name, m)] = m
	}
	for _, rule := range route.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			m, ok := byBackend[string(ref.Name)]
			if !ok {
				return s, fmt.Errorf("HTTPRoute %s/%s: backend %s stands for no member", route.Namespace, route.Name, ref.Name)
			}
			w := int32(1)
			if ref.Weight != nil {
				w = *ref.Weight
			}
			s.weights[m] += w
		}
	}
	s.accepted = routeAccepted(route)
	if s.applied, err = traefik.Applied(ctx, fleet.GatewayAdminURL, route.Namespace, route.Name, byBackend); err != nil {
		return s, err
	}
	return s, nil
}

// routeAccepted reports whether the gateway accepted the route's current generation for the
// fleet's Gateway and resolved its backends.
func routeAccepted(route *gwv1.HTTPRoute) bool {
	for _, p := range route.Status.Parents {
		if p.ParentRef.Name != localfleet.GatewayName ||
			(p.ParentRef.Namespace != nil && string(*p.ParentRef.Namespace) != localfleet.GatewayNamespace) {
			continue
		}
		acc := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionAccepted))
		res := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionResolvedRefs))
		if acc == nil || acc.ObservedGeneration != route.Generation || acc.Status != metav1.ConditionTrue {
			continue
		}
		if res != nil && res.ObservedGeneration == route.Generation && res.Status == metav1.ConditionFalse {
			continue
		}
		return true
	}
	return false
}
