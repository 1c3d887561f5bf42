package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/rayfleet/rayfleet/hub/leaving"
	"github.com/rayfleet/rayfleet/hub/membership"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/cachememo"
	"github.com/rayfleet/rayfleet/shared/scheme"
)

func TestRequeueAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{clock: clocktesting.NewFakeClock(t0), opts: Options{Resync: 10 * time.Second}}
	tests := []struct {
		name string
		wake time.Time
		want time.Duration
	}{
		{name: "nothing tolerated", want: 10 * time.Second},
		{name: "a toleration ending before the resync", wake: t0.Add(3 * time.Second), want: 3 * time.Second},
		{name: "a toleration ending after the resync", wake: t0.Add(time.Minute), want: 10 * time.Second},
		{name: "a toleration just ended", wake: t0.Add(-time.Second), want: time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.requeueAfter(&group{now: t0}, &outcome{d: &decision{wake: tt.wake}}); got != tt.want {
				t.Errorf("requeueAfter() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequeueAfterSettled(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{clock: clocktesting.NewFakeClock(t0), opts: Options{Resync: 10 * time.Second, SettledResync: 5 * time.Minute}}
	settledDecision := func() *decision {
		return &decision{
			placedCond: metav1.Condition{Status: metav1.ConditionTrue},
			rollout:    &rolloutDecision{plan: &rollout.Decision{Status: fleetv1alpha1.RolloutStatus{Phase: fleetv1alpha1.RolloutComplete}}},
		}
	}
	okRes := func() *results { return &results{applyErrs: map[string]error{}} }
	tests := []struct {
		name   string
		mutate func(g *group, o *outcome)
		// settled: the settled resync; wantExact: a timer's time; neither: at most Resync.
		settled   bool
		wantExact time.Duration
	}{
		{name: "placed, rollout complete, members read", settled: true},
		{name: "not executed (an error before)", mutate: func(_ *group, o *outcome) { o.res = nil }},
		{name: "invalid", mutate: func(_ *group, o *outcome) { o.d.invalid = errors.New("bad") }},
		{name: "fewer clusters than asked", mutate: func(_ *group, o *outcome) { o.d.placedCond.Status = metav1.ConditionFalse }},
		{name: "a toleration running", wantExact: 3 * time.Minute, mutate: func(_ *group, o *outcome) { o.d.wake = t0.Add(3 * time.Minute) }},
		{name: "a cluster leaving", mutate: func(_ *group, o *outcome) { o.d.leaving = map[string]leaving.Entry{"eu": {}} }},
		{name: "a foreign RayService in a copy's place", mutate: func(_ *group, o *outcome) { o.d.foreign = []string{"eu"} }},
		{name: "a copy kept", mutate: func(_ *group, o *outcome) { o.res.kept = []string{"eu"} }},
		{name: "a write failed", mutate: func(_ *group, o *outcome) { o.res.applyErrs["eu"] = errors.New("boom") }},
		{name: "traffic read without the traffic informers", mutate: func(_ *group, o *outcome) { o.d.traffic = &trafficDecision{} }},
		{name: "traffic read through the traffic informers (their changes queue it)", settled: true, mutate: func(g *group, o *outcome) {
			o.d.traffic, g.route.watched = &trafficDecision{}, true
		}},
		{name: "a decision held on a stale binding", wantExact: staleRetry, mutate: func(_ *group, o *outcome) { o.res.staleBinding = true }},
		{name: "blue/green in flight", mutate: func(_ *group, o *outcome) { o.d.colors = &placement.Colors{} }},
		{name: "rollout progressing, waiting on members", settled: true, mutate: func(_ *group, o *outcome) {
			o.d.rollout.plan.Status.Phase = fleetv1alpha1.RolloutProgressing
		}},
		{name: "rollout awaiting an approval (the binding's annotations are watched)", settled: true, mutate: func(_ *group, o *outcome) {
			o.d.rollout.plan.Status.Phase = fleetv1alpha1.RolloutAwaitingApproval
		}},
		{name: "rollout paused (the RayService's annotations are watched)", settled: true, mutate: func(_ *group, o *outcome) {
			o.d.rollout.plan.Status.Phase = fleetv1alpha1.RolloutPaused
		}},
		{name: "rollout stalled, waiting on a copy or a new spec", settled: true, mutate: func(_ *group, o *outcome) {
			o.d.rollout.plan.Status.Phase = fleetv1alpha1.RolloutStalled
		}},
		{name: "rollout rolling back, waiting on the copies", settled: true, mutate: func(_ *group, o *outcome) {
			o.d.rollout.plan.Status.Phase = fleetv1alpha1.RolloutRollingBack
		}},
		{name: "a stalled rollout's deadline timer", wantExact: 4 * time.Second, mutate: func(_ *group, o *outcome) {
			o.d.rollout.plan.Status.Phase = fleetv1alpha1.RolloutStalled
			o.d.rollout.plan.RequeueAfter = 4 * time.Second
		}},
		{name: "no rollout planned", mutate: func(_ *group, o *outcome) { o.d.rollout = nil }},
		{name: "a soak timer", wantExact: time.Second, mutate: func(_ *group, o *outcome) {
			o.d.rollout.plan.RequeueAfter = time.Second
		}},
		{name: "a member unread", mutate: func(g *group, _ *outcome) {
			g.members = map[string]*memberRecord{"eu": {readErr: errors.New("unreachable")}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &group{now: t0, members: map[string]*memberRecord{"eu": {}}}
			o := &outcome{g: g, d: settledDecision(), res: okRes()}
			if tt.mutate != nil {
				tt.mutate(g, o)
			}
			got := r.requeueAfter(g, o)
			if tt.wantExact > 0 {
				if got != tt.wantExact {
					t.Errorf("requeueAfter() = %v, want the timer's %v", got, tt.wantExact)
				}
				return
			}
			if tt.settled {
				if got < 5*time.Minute || got > 5*time.Minute+30*time.Second {
					t.Errorf("requeueAfter() = %v, want the settled resync (5m, spread by up to a tenth)", got)
				}
				return
			}
			if got > 10*time.Second {
				t.Errorf("requeueAfter() = %v, want at most the resync of a RayService in motion (10s)", got)
			}
		})
	}
}

func TestReconcileDropsMemberClusterRequests(t *testing.T) {
	// No client: a request naming a member cluster must end before anything is read.
	r := &Reconciler{}
	req := mcreconcile.Request{ClusterName: "eu"}
	req.Namespace, req.Name = "ns", "svc"
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile(member request) = %v, %v; want nothing done", res, err)
	}
}

func TestEngaging(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	r := &Reconciler{clock: clk, started: membership.StartedAt(t0)}
	notEngaged := fmt.Errorf("cluster us: %w", fmt.Errorf("member us: %w", multicluster.ErrClusterNotFound))
	g := &group{
		binding: &fleetv1alpha1.RayServiceBinding{Spec: fleetv1alpha1.RayServiceBindingSpec{Clusters: []string{"eu", "us"}}},
		members: map[string]*memberRecord{
			"eu": {name: "eu", mc: readyMember("eu")},
			"us": {name: "us", mc: readyMember("us"), readErr: notEngaged},
			"ap": {name: "ap", mc: readyMember("ap"), readErr: notEngaged},
		},
	}
	if got := r.engaging(g); !slices.Equal(got, []string{"us"}) {
		t.Errorf("just started: engaging = %v, want [us] (ap holds no copy)", got)
	}
	g.members["us"].readErr = errors.New("connection refused")
	if got := r.engaging(g); got != nil {
		t.Errorf("an unreachable member: engaging = %v, want none (it is down, not being engaged)", got)
	}
	g.members["us"].readErr = notEngaged
	clk.Step(engageGrace)
	if got := r.engaging(g); got != nil {
		t.Errorf("past the grace: engaging = %v, want none", got)
	}
}

// A reconcile that reads the binding from a cache not yet showing the hub's last status write
// decides from that write, not from the older status: the rollout's state lives there.
func TestBindingReadStale(t *testing.T) {
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	stepAt := func(sec int) fleetv1alpha1.RayServiceBindingStatus {
		return fleetv1alpha1.RayServiceBindingStatus{Rollout: &fleetv1alpha1.RolloutStatus{
			TargetRevision: "svc-2", BlueGreen: &fleetv1alpha1.BlueGreenStatus{
				Step: fleetv1alpha1.BlueGreenDeploying, StepTime: &metav1.Time{Time: time.Date(2026, 1, 1, 12, 0, sec, 0, time.UTC)}}}}
	}
	old := &fleetv1alpha1.RayServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "b1"}}
	cached := old.DeepCopy() // what a lagging cache still returns
	stale := true
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(sch).WithObjects(old).
		WithStatusSubresource(&fleetv1alpha1.RayServiceBinding{}).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if b, ok := obj.(*fleetv1alpha1.RayServiceBinding); ok && stale {
				cached.DeepCopyInto(b)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	r := &Reconciler{client: c, memory: memory{bindingStatuses: cachememo.NewStatuses(clocktesting.NewFakePassiveClock(time.Now()), (*fleetv1alpha1.RayServiceBindingStatus).DeepCopy)}}
	key := client.ObjectKeyFromObject(old)
	ctx := context.Background()

	g := &group{key: key, binding: old.DeepCopy()}
	written := stepAt(41)
	if err = r.patchBindingStatus(ctx, g.key, g.binding, &written); err != nil {
		t.Fatal(err)
	}
	b, err := r.readBinding(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(b.Status, written) {
		t.Errorf("read from a lagging cache: status %+v, want the one just written %+v", b.Status, written)
	}

	// Once the cache shows the write, the memory is dropped and the cache is read as it is.
	stale = false
	if b, err = r.readBinding(ctx, key); err != nil || !equality.Semantic.DeepEqual(b.Status, written) {
		t.Fatalf("cache caught up: status %+v, %v; want %+v", b.Status, err, written)
	}
	stale = true
	if b, err = r.readBinding(ctx, key); err != nil || b.Status.Rollout != nil {
		t.Errorf("after the cache caught up once, a cache read is taken as it is: status %+v, %v", b.Status, err)
	}

	// A binding recreated under the same name is another object: nothing remembered applies.
	r.bindingStatuses.Remember(g.binding, &written)
	cached.UID = "b2"
	if b, err = r.readBinding(ctx, key); err != nil || b.Status.Rollout != nil {
		t.Errorf("recreated binding: status %+v, %v; want its own (empty)", b.Status, err)
	}
}
