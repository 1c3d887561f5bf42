package fleet

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/cachememo"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// TestExecuteChangesNeitherPlanNorGroup carries out decisions on fake clusters and checks that
// the executor and the status writer leave the decision and the group as they were: what they
// wrote is in the results.
func TestExecuteChangesNeitherPlanNorGroup(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	two := twoClusters()
	tests := []struct {
		name    string
		binding *fleetv1alpha1.RayServiceBinding
	}{
		{name: "a new RayService: the binding is created"},
		{name: "a RayService placed on one cluster: the binding is patched", binding: placedOn("a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := raybuilder.MakeRayService("svc", "team").Annotation(labels.PlacementPolicy, "two").Obj()
			hub.UID = "hub-uid"
			objs := []client.Object{hub}
			if tt.binding != nil {
				b := tt.binding.DeepCopy()
				b.Namespace, b.Name = hub.Namespace, hub.Name
				objs = append(objs, b)
			}
			hubClient := fake.NewClientBuilder().WithScheme(sch).WithObjects(objs...).
				WithStatusSubresource(&rayv1.RayService{}, &fleetv1alpha1.RayServiceBinding{}).Build()
			r := executor(hubClient, now)
			var binding *fleetv1alpha1.RayServiceBinding
			if tt.binding != nil {
				binding = &fleetv1alpha1.RayServiceBinding{}
				if err := hubClient.Get(t.Context(), client.ObjectKeyFromObject(hub), binding); err != nil {
					t.Fatal(err)
				}
			}
			g := newGroup(hub, two, binding)
			g.now = now
			for _, name := range []string{"a", "b"} {
				m := ready(name, nil)
				m.client = fake.NewClientBuilder().WithScheme(sch).Build()
				g.members[name], g.memberClusters[name] = m, m.mc
			}
			d := decideTwice(t, r, g)
			if len(d.placed) != 2 {
				t.Fatalf("placed = %v, want two clusters", d.placed)
			}
			// plan is d decided apart, sharing nothing with it but the group.
			before, plan := snapshot(g), r.decide(g)
			o := &outcome{g: g, d: d}
			o.res, err = r.execute(t.Context(), g, d)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.res.applyErrs) > 0 {
				t.Errorf("apply errors: %v", o.res.applyErrs)
			}
			if o.res.binding == nil {
				t.Error("the executor wrote no binding")
			}
			if err := r.writeStatus(t.Context(), o); err != nil {
				t.Fatal(err)
			}
			checkUnchanged(t, before, g, "executing and writing the status")
			if !reflect.DeepEqual(d, plan) {
				t.Errorf("executing and writing the status changed the decision:\nbefore %+v\nafter  %+v", plan, d)
			}
		})
	}
}

// TestExecuteHoldsADecisionFromAStaleBinding carries out a decision made from a cached binding
// that names clusters a, b while the API server's, written since, names a, c (the cache lags
// after the hub's API server came back): nothing is written to members and the RayService is
// tried again soon, whether the decision changes the binding's spec (the locked patch fails)
// or not (the binding is read from the API server), and the decision is not announced (no
// placement decision counted). With the cache current, the same decision is carried out and
// counted.
func TestExecuteHoldsADecisionFromAStaleBinding(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	two := twoClusters()
	for _, tt := range []struct {
		name      string
		stale     bool
		writeSpec bool
		wantStale bool
	}{
		{name: "the cached binding is older than the API server's", stale: true, wantStale: true},
		{name: "the cached binding is older, and the decision patches its spec", stale: true, writeSpec: true, wantStale: true},
		{name: "the cached binding is the API server's", stale: false, wantStale: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hub := raybuilder.MakeRayService("svc", "team").Annotation(labels.PlacementPolicy, "two").Obj()
			hub.UID = "hub-uid"
			live := placedOn("a", "b")
			if tt.stale {
				live = placedOn("a", "c")
			}
			live.Namespace, live.Name = hub.Namespace, hub.Name
			if !tt.writeSpec {
				live.Spec.PolicyName = "two"
			}
			hubClient := fake.NewClientBuilder().WithScheme(sch).WithObjects(hub, live).
				WithStatusSubresource(&rayv1.RayService{}, &fleetv1alpha1.RayServiceBinding{}).Build()
			cached := &fleetv1alpha1.RayServiceBinding{}
			if err := hubClient.Get(t.Context(), client.ObjectKeyFromObject(hub), cached); err != nil {
				t.Fatal(err)
			}
			if tt.stale {
				cached.Spec.Clusters = []string{"a", "b"}
				cached.ResourceVersion = "1"
			}
			r := executor(hubClient, now)
			if r.metrics, err = newMetrics(prometheus.NewRegistry()); err != nil {
				t.Fatal(err)
			}
			g := newGroup(hub, two, cached)
			g.now = now
			for _, name := range []string{"a", "b", "c"} {
				m := ready(name, nil)
				m.client = fake.NewClientBuilder().WithScheme(sch).Build()
				g.members[name], g.memberClusters[name] = m, m.mc
			}
			d := decideTwice(t, r, g)
			if !slices.Equal(d.placed, []string{"a", "b"}) || d.actions["b"].Kind != propagation.Apply {
				t.Fatalf("placed = %v, action on b = %v: want a, b with b applied", d.placed, d.actions["b"])
			}
			o := &outcome{g: g, d: d}
			o.res, err = r.act(t.Context(), g, d)
			switch {
			case tt.writeSpec && !apierrors.IsConflict(err):
				t.Fatalf("execute: %v, want a conflict", err)
			case !tt.writeSpec && err != nil:
				t.Fatal(err)
			}
			if o.res.staleBinding != (tt.wantStale && !tt.writeSpec) {
				t.Errorf("staleBinding = %v, want %v", o.res.staleBinding, tt.wantStale)
			}
			var copies rayv1.RayServiceList
			if err := g.members["b"].client.List(t.Context(), &copies); err != nil {
				t.Fatal(err)
			}
			if wantCopies := map[bool]int{true: 0, false: 1}[tt.wantStale]; len(copies.Items) != wantCopies {
				t.Errorf("copies on b = %d, want %d", len(copies.Items), wantCopies)
			}
			if got, want := testutil.CollectAndCount(r.metrics.decisions), map[bool]int{true: 0, false: 1}[tt.wantStale]; got != want {
				t.Errorf("placement decisions counted = %d, want %d", got, want)
			}
			if got := r.requeueAfter(g, o); o.res.staleBinding && got != staleRetry {
				t.Errorf("requeueAfter = %v, want %v", got, staleRetry)
			}
		})
	}
}

// twoClusters is the policy the executor tests place by: two clusters, no rollout.
func twoClusters() *fleetv1alpha1.PlacementPolicy {
	return &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "two"},
		Spec:       fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutNone}},
	}
}

// executor is a reconciler on hubClient (cache and API server alike) at the time now, with
// the memories the executor and the status writer use.
func executor(hubClient client.Client, now time.Time) *Reconciler {
	clk := clocktesting.NewFakeClock(now)
	return &Reconciler{
		client: hubClient, apiReader: hubClient, recorder: events.NewFakeRecorder(100), clock: clk,
		memory: memory{
			reserved: placement.NewReservations(), validSpecs: validation.NewSpecMemo(), covered: propagation.NewCovered(),
			memberViews: &memberViews{}, ownWrites: newOwnWrites(),
			bindingStatuses: cachememo.NewStatuses(clk, (*fleetv1alpha1.RayServiceBindingStatus).DeepCopy),
		},
		opts: Options{HubName: labels.DefaultHubName, Resync: time.Minute},
	}
}

func TestAsStoredKeepsTimesToTheSecond(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 29, 18, 0, 0, 123456789, time.UTC))
	st := &fleetv1alpha1.RayServiceBindingStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{
		{Type: "Placed", Status: metav1.ConditionTrue, Reason: "Placed", LastTransitionTime: at},
	}}
	got := asStored(st)
	if got.ObservedGeneration != 3 || len(got.Conditions) != 1 ||
		!got.Conditions[0].LastTransitionTime.Equal(&metav1.Time{Time: at.Truncate(time.Second)}) {
		t.Errorf("asStored = %+v, want the status with its time to the second", got)
	}
	if st.Conditions[0].LastTransitionTime.Nanosecond() == 0 {
		t.Error("asStored changed its argument")
	}
}
