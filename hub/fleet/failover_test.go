package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/rayfleet/rayfleet/hub/placement"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestTolerationOf(t *testing.T) {
	tests := []struct {
		name string
		pp   *fleetv1alpha1.PlacementPolicy
		want time.Duration
	}{
		{name: "built-in policy", want: 300 * time.Second},
		{name: "no failover", pp: &fleetv1alpha1.PlacementPolicy{}, want: 300 * time.Second},
		{name: "failover without seconds", pp: &fleetv1alpha1.PlacementPolicy{Spec: fleetv1alpha1.PlacementPolicySpec{
			Failover: &fleetv1alpha1.FailoverPolicy{GracefulPurge: true},
		}}, want: 300 * time.Second},
		{name: "explicit seconds", pp: &fleetv1alpha1.PlacementPolicy{Spec: fleetv1alpha1.PlacementPolicySpec{
			Failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](30)},
		}}, want: 30 * time.Second},
		{name: "zero fails over at once", pp: &fleetv1alpha1.PlacementPolicy{Spec: fleetv1alpha1.PlacementPolicySpec{
			Failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](0)},
		}}, want: 0},
		{name: "negative (schema bypassed) is zero", pp: &fleetv1alpha1.PlacementPolicy{Spec: fleetv1alpha1.PlacementPolicySpec{
			Failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](-5)},
		}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tolerationOf(tt.pp); got != tt.want {
				t.Errorf("tolerationOf() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTolerateNotReady(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	mc := func(name string, status metav1.ConditionStatus, since time.Duration) *fleetv1alpha1.MemberCluster {
		m := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}}
		if status != "" {
			m.Status.Conditions = []metav1.Condition{{
				Type: fleetv1alpha1.ConditionReady, Status: status, Reason: fleetv1alpha1.ReasonMemberNotReady,
				Message: "AgentReady is False", LastTransitionTime: metav1.NewTime(t0.Add(since)),
			}}
		}
		return m
	}
	deleting := mc("gone", metav1.ConditionTrue, 0)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	mcs := map[string]*fleetv1alpha1.MemberCluster{
		"blip":    mc("blip", metav1.ConditionFalse, -time.Minute),
		"unknown": mc("unknown", metav1.ConditionUnknown, -2*time.Minute),
		"long":    mc("long", metav1.ConditionFalse, -10*time.Minute),
		"edge":    mc("edge", metav1.ConditionFalse, -5*time.Minute),
		"nocond":  mc("nocond", "", 0),
		"ok":      mc("ok", metav1.ConditionTrue, -time.Hour),
		"gone":    deleting,
	}
	tests := []struct {
		name        string
		holders     []string
		toleration  time.Duration
		wantReady   []string
		wantNotes   []string
		wantWakeSet time.Duration
	}{{
		name:    "a holder not ready for a minute is tolerated until the end of its window",
		holders: []string{"blip"}, toleration: 5 * time.Minute,
		wantReady:   []string{"blip", "ok"},
		wantNotes:   []string{"blip: not ready: AgentReady is False since 2026-01-01T11:59:00Z, tolerated until 2026-01-01T12:04:00Z"},
		wantWakeSet: 4 * time.Minute,
	}, {
		name:    "Unknown counts as not ready; the earliest end is the wake-up",
		holders: []string{"blip", "unknown"}, toleration: 5 * time.Minute,
		wantReady: []string{"blip", "ok", "unknown"},
		wantNotes: []string{
			"blip: not ready: AgentReady is False since 2026-01-01T11:59:00Z, tolerated until 2026-01-01T12:04:00Z",
			"unknown: not ready: AgentReady is False since 2026-01-01T11:58:00Z, tolerated until 2026-01-01T12:03:00Z",
		},
		wantWakeSet: 3 * time.Minute,
	}, {
		name:    "a member not holding the RayService is not tolerated",
		holders: nil, toleration: 5 * time.Minute,
		wantReady: []string{"ok"},
	}, {
		name:    "past the window the member fails over",
		holders: []string{"long"}, toleration: 5 * time.Minute,
		wantReady: []string{"ok"},
	}, {
		name:    "the window's end is exclusive",
		holders: []string{"edge"}, toleration: 5 * time.Minute,
		wantReady: []string{"ok"},
	}, {
		name:    "zero toleration fails over at once",
		holders: []string{"blip"}, toleration: 0,
		wantReady: []string{"ok"},
	}, {
		name:    "without a Ready condition the wait starts at creation",
		holders: []string{"nocond"}, toleration: 2 * time.Hour,
		wantReady:   []string{"nocond", "ok"},
		wantNotes:   []string{"nocond: no Ready condition yet since 2026-01-01T11:00:00Z, tolerated until 2026-01-01T13:00:00Z"},
		wantWakeSet: time.Hour,
	}, {
		name:    "a member being removed is never tolerated",
		holders: []string{"gone"}, toleration: time.Hour,
		wantReady: []string{"ok"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members := membersOf(mcs)
			got := tolerateNotReady(members, mcs, tt.holders, tt.toleration, t0)
			var ready []string
			for _, m := range members {
				if m.Ready {
					ready = append(ready, m.Name)
					if m.NotReadyReason != "" {
						t.Errorf("%s is ready with NotReadyReason %q", m.Name, m.NotReadyReason)
					}
				}
			}
			if diff := cmp.Diff(tt.wantReady, ready); diff != "" {
				t.Errorf("ready members mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantNotes, got.notes); diff != "" {
				t.Errorf("notes mismatch (-want +got):\n%s", diff)
			}
			var wantWake time.Time
			if tt.wantWakeSet != 0 {
				wantWake = t0.Add(tt.wantWakeSet)
			}
			if !got.wake.Equal(wantWake) {
				t.Errorf("wake = %v, want %v", got.wake, wantWake)
			}
		})
	}
}

// TestToleratedMemberKeepsPlacement runs the planner on the tolerated members: the copy stays
// on the blipping member instead of moving to the other.
func TestToleratedMemberKeepsPlacement(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	notReady := func(since time.Duration) *fleetv1alpha1.MemberCluster {
		return &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "eu"},
			Status: fleetv1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{
				Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonMemberNotReady,
				LastTransitionTime: metav1.NewTime(t0.Add(-since)),
			}}},
		}
	}
	ready := &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "us"},
		Status:     fleetv1alpha1.MemberClusterStatus{Conditions: readyCond(metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReady, "")},
	}
	tests := []struct {
		name  string
		since time.Duration
		want  []string
	}{
		{name: "within the window", since: 10 * time.Second, want: []string{"eu"}},
		{name: "after the window", since: 301 * time.Second, want: []string{"us"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mcs := map[string]*fleetv1alpha1.MemberCluster{"eu": notReady(tt.since), "us": ready}
			members := membersOf(mcs)
			tolerateNotReady(members, mcs, []string{"eu"}, tolerationOf(nil), t0)
			d := placement.Plan(placement.Input{Policy: placement.BuiltInPolicy(), Members: members, Current: []string{"eu"}})
			if diff := cmp.Diff(tt.want, d.Clusters); diff != "" {
				t.Errorf("Plan() clusters mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

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

func TestReconcileDropsMemberClusterRequests(t *testing.T) {
	// No client: a request naming a member cluster must end before anything is read.
	r := &Reconciler{}
	req := mcreconcile.Request{ClusterName: "eu"}
	req.Namespace, req.Name = "ns", "svc"
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile(member request) = %v, %v; want nothing done", res, err)
	}
}
