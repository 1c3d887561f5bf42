package traffic

import (
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/names"
)

// legacyObjects are in's route and backends where hubs before the move wrote them: in the
// Gateway's namespace, under the RayService's name prefixed with its namespace, the backends
// named by joining the route's and the member's names.
func legacyObjects(t *testing.T, in Input) *Objects {
	t.Helper()
	objs, err := Desired(in)
	if err != nil {
		t.Fatal(err)
	}
	legacy, _ := LegacyKey(in.RayService, &in.Spec)
	objs.Route.Namespace, objs.Route.Name = legacy.Route.Namespace, legacy.Route.Name
	renamed := map[string]string{}
	for _, s := range objs.Services {
		old := names.Bounded(legacy.Route.Name, s.Labels[labels.TrafficCluster])
		renamed[s.Name] = old
		s.Namespace, s.Name = legacy.Route.Namespace, old
	}
	for _, e := range objs.EndpointSlices {
		e.Namespace, e.Name = legacy.Route.Namespace, renamed[e.Name]
		e.Labels[discoveryv1.LabelServiceName] = e.Name
	}
	for i := range objs.Route.Spec.Rules[0].BackendRefs {
		ref := &objs.Route.Spec.Rules[0].BackendRefs[i]
		ref.Name = gwv1.ObjectName(renamed[string(ref.Name)])
	}
	return objs
}

// TestMoveFromGatewayNamespace moves demo's route from the Gateway's namespace to demo's: the
// earlier route and its backends stay while the gateway has not accepted the new route, or
// refused it, and go once it accepted it.
func TestMoveFromGatewayNamespace(t *testing.T) {
	e := startTrafficEnv(t)
	ctx := t.Context()
	legacy, _ := LegacyKey(demo.RayService, &demo.Spec)
	old := legacyObjects(t, demo)
	if err := Apply(ctx, e.c, e.c, old); err != nil {
		t.Fatalf("writing the earlier route: %v", err)
	}
	oldBackends := e.backendsIn("gw", demo)
	if len(oldBackends) != 5 {
		t.Fatalf("earlier backends = %v, want 5", oldBackends)
	}
	members := []string{"us", "eu", "ap"}
	if st, err := ObserveLegacy(ctx, e.c, legacy, "rayfleet", members); err != nil || !st.Exists || st.Matches.Gateway == "" {
		t.Fatalf("ObserveLegacy of this hub's earlier route = %+v, %v; want it read", st, err)
	}
	if st, err := ObserveLegacy(ctx, e.c, legacy, "another-hub", members); err != nil || st.Exists {
		t.Fatalf("ObserveLegacy as another hub = %+v, %v; want no route of its own", st, err)
	}
	e.apply(demo)

	retire := func(step string, wantRemains bool) {
		t.Helper()
		remains, err := RetireLegacy(ctx, e.c, e.c, e.c, legacy, "rayfleet", e.observe(demo))
		if err != nil || remains != wantRemains {
			t.Fatalf("%s: RetireLegacy = %v, %v; want %v", step, remains, err, wantRemains)
		}
		var route gwv1.HTTPRoute
		err = e.c.Get(ctx, legacy.Route, &route)
		switch {
		case wantRemains && (err != nil || !slices.Equal(e.backendsIn("gw", demo), oldBackends)):
			t.Fatalf("%s: the earlier route (%v) or its backends (%v) are gone", step, err, e.backendsIn("gw", demo))
		case !wantRemains && (!apierrors.IsNotFound(err) || len(e.backendsIn("gw", demo)) != 0):
			t.Fatalf("%s: the earlier route (%v) or its backends (%v) are still there", step, err, e.backendsIn("gw", demo))
		}
	}
	retire("the gateway has not reported", true)

	st := e.observe(demo)
	e.setStatus(demoKey, st.Generation, cond("Accepted", metav1.ConditionFalse, "NotAllowedByListeners", "listener http allows routes of namespace gw only"))
	if st = e.observe(demo); !st.Refused || st.Reason != "NotAllowedByListeners" {
		t.Fatalf("Observe of a route the listeners refuse = %+v, want refused NotAllowedByListeners", st)
	}
	retire("the gateway refused the new route", true)

	e.acceptCurrent(demo)
	retire("the gateway accepted the new route", false)
	retire("again", false)
	if got := e.backends(demo); !slices.Equal(got, allDemo) {
		t.Errorf("the new route's backends after the move = %v, want %v", got, allDemo)
	}
	if st := e.observe(demo); !st.Accepted {
		t.Errorf("the new route after the move: %+v", st)
	}
}
