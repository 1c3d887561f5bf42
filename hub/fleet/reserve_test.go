package fleet

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
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
	if got := testutil.ToFloat64(r.metrics.decisions.WithLabelValues(resultReservationMisfit)); got != 1 {
		t.Errorf("decisions held on a misfit counted = %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.metrics.decisions.WithLabelValues(resultPlaced)); got != 1 {
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
