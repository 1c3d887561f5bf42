//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/names"
)

// bRoute is one state of a RayService's HTTPRoute: its generation and the weight the gateway
// is told to give each member.
type bRoute struct {
	at         time.Time
	generation int64
	weights    map[string]int32
}

// bRouteRecorder reads the hub's HTTPRoute of a RayService every poll and keeps each new
// generation: the traffic split the gateway actually gets, as opposed to the binding's report.
type bRouteRecorder struct {
	mu     sync.Mutex
	states []bRoute
	errs   []string
	cancel context.CancelFunc
	done   chan struct{}
}

// bRecordRoute starts recording the route of ns/name until stop or the end of the test.
func bRecordRoute(t *testing.T, f *localfleet.Fleet, ns, name string) *bRouteRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &bRouteRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(poll)
		defer tick.Stop()
		var last int64 = -1
		for {
			s, err := bReadRoute(ctx, f, ns, name)
			r.mu.Lock()
			switch {
			case err != nil && ctx.Err() == nil:
				r.errs = append(r.errs, err.Error())
			case err == nil && s.generation != last:
				last = s.generation
				r.states = append(r.states, s)
			}
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// stop ends the recording; safe to call more than once.
func (r *bRouteRecorder) stop() {
	r.cancel()
	<-r.done
}

// snapshot is every route state recorded, oldest first, and the read errors.
func (r *bRouteRecorder) snapshot() ([]bRoute, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states), slices.Clone(r.errs)
}

// bReadRoute reads the route of ns/name in the RayService's namespace (found by its origin
// labels); generation 0 and no weights when there is none.
func bReadRoute(ctx context.Context, f *localfleet.Fleet, ns, name string) (bRoute, error) {
	s := bRoute{at: time.Now(), weights: map[string]int32{}}
	var routes gwv1.HTTPRouteList
	if err := f.Hub.Client.List(ctx, &routes, client.InNamespace(ns),
		client.MatchingLabels{labels.OriginNamespace: ns, labels.OriginName: name}); err != nil {
		return s, fmt.Errorf("listing the HTTPRoutes of %s/%s: %w", ns, name, err)
	}
	if len(routes.Items) == 0 {
		return s, nil
	}
	if len(routes.Items) > 1 {
		return s, fmt.Errorf("%d HTTPRoutes of %s/%s", len(routes.Items), ns, name)
	}
	route := &routes.Items[0]
	s.generation = route.Generation
	member := map[string]string{}
	for m := range f.Members {
		member[names.Distinct(route.Name, m)] = m
	}
	for _, rule := range route.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			w := int32(1)
			if ref.Weight != nil {
				w = *ref.Weight
			}
			m, ok := member[string(ref.Name)]
			if !ok {
				m = string(ref.Name)
			}
			s.weights[m] += w
		}
	}
	return s, nil
}

// String says the route state for the test log: "gen 3 eu=5000 ap=5000 @00:30:01".
func (s bRoute) String() string {
	parts := []string{fmt.Sprintf("gen %d", s.generation)}
	for _, m := range slices.Sorted(maps.Keys(s.weights)) {
		parts = append(parts, fmt.Sprintf("%s=%d", m, s.weights[m]))
	}
	return strings.Join(parts, " ") + " @" + s.at.Format("15:04:05.000")
}
