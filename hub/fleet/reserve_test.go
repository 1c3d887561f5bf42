package fleet

import (
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rayfleet/rayfleet/hub/placement"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// TestExecuteHoldsAPlacementOntoAMemberFilledMeanwhile plans two RayServices on the same
// stale reservations, where members a and b each have room for one copy: both choose a. Their
// executors run concurrently; one records its reservation and applies on a, the other finds a
// full, records nothing, writes nothing, says nothing and is tried again at once. Planned again
// from a fresh read, it goes to b.
func TestExecuteHoldsAPlacementOntoAMemberFilledMeanwhile(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	one := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "two"},
		Spec:       fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](1), Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutNone}},
	}
	var hubs []*rayv1.RayService
	for _, name := range []string{"x", "y"} {
		hub := raybuilder.MakeRayService(name, "team").Annotation(labels.PlacementPolicy, "two").Obj()
		hub.UID = types.UID("uid-" + name)
		hubs = append(hubs, hub)
	}
	hubClient := fake.NewClientBuilder().WithScheme(sch).WithObjects(hubs[0], hubs[1]).
		WithStatusSubresource(&rayv1.RayService{}, &fleetv1alpha1.RayServiceBinding{}).Build()
	r := executor(hubClient, now)
	if r.metrics, err = newMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	// Room for exactly one copy of either RayService on each member.
	demand := placement.DemandOf(hubs[0])
	memberClients := map[string]client.Client{}
	read := func(hub *rayv1.RayService) *group {
		g := newGroup(hub, one, nil)
		g.now = now
		for _, name := range []string{"a", "b"} {
			m := ready(name, nil)
			m.mc.Status.Capacity.Free, m.mc.Status.Capacity.Allocatable = demand, demand
			if memberClients[name] == nil {
				memberClients[name] = fake.NewClientBuilder().WithScheme(sch).Build()
			}
			m.client = memberClients[name]
			g.members[name], g.memberClusters[name] = m, m.mc
		}
		r.readReserved(g)
		return g
	}
	groups := []*group{read(hubs[0]), read(hubs[1])}
	decisions := make([]*decision, len(groups))
	for i, g := range groups {
		if decisions[i] = decideTwice(t, r, g); !slices.Equal(decisions[i].placed, []string{"a"}) {
			t.Fatalf("%s placed on %v (%s), want a: the reservations read are stale", g.key, decisions[i].placed, decisions[i].placedCond.Message)
		}
	}
	outcomes := make([]*outcome, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() {
			o := &outcome{g: g, d: decisions[i]}
			var err error
			if o.res, err = r.act(t.Context(), g, decisions[i]); err != nil {
				t.Error(err)
			}
			outcomes[i] = o
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	placed, heldBack := outcomes[0], outcomes[1]
	if len(placed.res.misfit) > 0 {
		placed, heldBack = heldBack, placed
	}
	if len(placed.res.misfit) > 0 || !slices.Equal(heldBack.res.misfit, []string{"a"}) {
		t.Fatalf("misfits = %v and %v, want one decision held on a", placed.res.misfit, heldBack.res.misfit)
	}
	if !held(heldBack.res, nil) || r.requeueAfter(heldBack.g, heldBack) != misfitRetry {
		t.Errorf("held = %v, requeueAfter = %v: want held and tried again after %v",
			held(heldBack.res, nil), r.requeueAfter(heldBack.g, heldBack), misfitRetry)
	}
	var binding fleetv1alpha1.RayServiceBinding
	if err := hubClient.Get(t.Context(), heldBack.g.key, &binding); !apierrors.IsNotFound(err) {
		t.Errorf("the held RayService's binding: %v, want none written", err)
	}
	if got := copiesOf(t, memberClients["a"]); !slices.Equal(got, []string{placed.g.key.Name}) {
		t.Errorf("copies on a = %v, want only %s's", got, placed.g.key.Name)
	}
	if got := testutil.ToFloat64(r.metrics.decisions.WithLabelValues(placement.ResultReservationMisfit)); got != 1 {
		t.Errorf("decisions held on a misfit counted = %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.metrics.decisions.WithLabelValues(placement.ResultPlaced)); got != 1 {
		t.Errorf("placed decisions counted = %v, want 1 (the held one is not announced)", got)
	}

	again := read(heldBack.g.hub)
	d := decideTwice(t, r, again)
	if !slices.Equal(d.placed, []string{"b"}) {
		t.Fatalf("planned again, %s placed on %v (%s), want b", again.key, d.placed, d.placedCond.Message)
	}
	res, err := r.act(t.Context(), again, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.misfit) > 0 {
		t.Errorf("planned again, misfit = %v", res.misfit)
	}
	if got := copiesOf(t, memberClients["b"]); !slices.Equal(got, []string{again.key.Name}) {
		t.Errorf("copies on b = %v, want %s's", got, again.key.Name)
	}
}

// copiesOf names the RayServices on a member, sorted.
func copiesOf(t *testing.T, member client.Client) []string {
	t.Helper()
	var list rayv1.RayServiceList
	if err := member.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	slices.Sort(names)
	return names
}

// TestDecideBlueGreenReservesBlueThenGreen decides a blue/green rollout in flight whose green
// member left the fleet: green is placed again, on the reservations as blue's plan leaves
// them, and the decision names blue's intent, then green's under its own key. Deciding records
// neither (decideTwice).
func TestDecideBlueGreenReservesBlueThenGreen(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	r := executor(fake.NewClientBuilder().WithScheme(sch).Build(), now)
	hub := raybuilder.MakeRayService("svc", "team").Annotation(labels.PlacementPolicy, "two").Obj()
	bg := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "two"},
		Spec:       fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](1), Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen}},
	}
	binding := placedOn("a", "gone")
	binding.Status.Rollout = &fleetv1alpha1.RolloutStatus{BlueGreen: &fleetv1alpha1.BlueGreenStatus{
		Step: fleetv1alpha1.BlueGreenDeploying, Blue: []string{"a"}, Green: []string{"gone"}}}
	g := newGroup(hub, bg, binding)
	g.now = now
	for _, name := range []string{"a", "b", "c"} {
		m := ready(name, nil)
		g.members[name], g.memberClusters[name] = m, m.mc
	}
	// Another RayService holds b: green must go to c.
	other := types.NamespacedName{Namespace: "team", Name: "other"}
	demand := placement.DemandOf(hub)
	g.memberClusters["b"].Status.Capacity.Free = demand
	if misfit := r.reserved.Record(placement.Intent{Key: other, Demand: demand, At: now, Chosen: []string{"b"},
		Reserve: map[string]corev1.ResourceList{"b": demand}}); misfit != nil {
		t.Fatalf("setting up: %v full", misfit)
	}
	r.readReserved(g)
	d := decideTwice(t, r, g)
	if d.colors == nil || !slices.Equal(d.colors.Green, []string{"c"}) {
		t.Fatalf("colors = %+v, want green c (%s)", d.colors, d.placedCond.Message)
	}
	var keys []types.NamespacedName
	var reserved [][]string
	for _, intent := range d.reserve {
		keys = append(keys, intent.Key)
		reserved = append(reserved, slices.Sorted(maps.Keys(intent.Reserve)))
	}
	if want := []types.NamespacedName{g.key, placement.GreenKey(g.key)}; !slices.Equal(keys, want) {
		t.Errorf("intents for %v, want %v", keys, want)
	}
	if want := [][]string{nil, {"c"}}; !reflect.DeepEqual(reserved, want) {
		t.Errorf("intents reserve on %v, want %v (blue runs on a already)", reserved, want)
	}
}
