package rayservice

import (
	"context"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rayfleet/rayfleet/shared/cachememo"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func withDeleteAfter(rc *rayv1.RayCluster, v string) *rayv1.RayCluster {
	rc = rc.DeepCopy()
	rc.Annotations[labels.DeleteAfter] = v
	return rc
}

func TestDecideDeletion(t *testing.T) {
	rs := raybuilder.MakeRayService("svc", "ns").Active("svc-a").Pending("svc-p").Obj()
	deleting := rs.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	shortDelay := raybuilder.MakeRayService("svc", "ns").Active("svc-a").DeletionDelay(0).Obj()
	old := fixture.Cluster(rs, "svc-old")
	gone := old.DeepCopy()
	gone.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	later := t0.Add(30 * time.Second).Format(time.RFC3339)
	earlier := t0.Add(-time.Second).Format(time.RFC3339)
	tests := []struct {
		name   string
		rs     *rayv1.RayService
		rc     *rayv1.RayCluster
		want   deletionDecision
		wantAt time.Time
	}{
		{"active kept", rs, fixture.Cluster(rs, "svc-a"), keepCluster, time.Time{}},
		{"pending kept", rs, fixture.Cluster(rs, "svc-p"), keepCluster, time.Time{}},
		{"active again keeps, schedule or not", rs, withDeleteAfter(fixture.Cluster(rs, "svc-a"), earlier), keepCluster, time.Time{}},
		{"dangling: scheduled after the default 60 s", rs, old, scheduleDeletion, t0.Add(time.Minute)},
		{"dangling with delay 0: deleted at once", shortDelay, old, deleteCluster, t0},
		{"scheduled, not yet due (a restarted spoke too)", rs, withDeleteAfter(old, later), waitForDeletion, t0.Add(30 * time.Second)},
		{"scheduled and due", rs, withDeleteAfter(old, earlier), deleteCluster, t0.Add(-time.Second)},
		{"malformed schedule replaced", rs, withDeleteAfter(old, "tomorrow"), scheduleDeletion, t0.Add(time.Minute)},
		{"RayService deleted: everything goes now", deleting, fixture.Cluster(rs, "svc-a"), deleteCluster, t0},
		{"already being deleted", rs, gone, alreadyDeleting, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, at := decideDeletion(tt.rs, tt.rc, t0)
			if got != tt.want || !at.Equal(tt.wantAt) {
				t.Fatalf("decideDeletion = %v at %v, want %v at %v", got, at, tt.want, tt.wantAt)
			}
		})
	}
	t.Run("a schedule made mid-second is rounded up, never early", func(t *testing.T) {
		now := t0.Add(300 * time.Millisecond)
		got, at := decideDeletion(rs, old, now)
		if want := t0.Add(61 * time.Second); got != scheduleDeletion || !at.Equal(want) {
			t.Fatalf("decideDeletion = %v at %v, want %v at %v", got, at, scheduleDeletion, want)
		}
	})
}

// testReconciler is a Reconciler on a fake client, for the phases that only talk to the API.
func testReconciler(t *testing.T, c client.Client, clk *clocktesting.FakeClock) *Reconciler {
	t.Helper()
	opts := OptionsFromEnv(func(string) string { return "" })
	opts.Clock = clk
	return &Reconciler{client: c, apiReader: c, recorder: events.NewFakeRecorder(100), clock: clk, rand: cryptoRandString,
		statuses: cachememo.NewStatuses(clk, (*rayv1.RayServiceStatuses).DeepCopy), tokens: newTokenCache(c, clk), validSpecs: validation.NewSpecMemo(), writes: cachememo.NewWrites(clk), build: opts.Build, opts: opts}
}

// TestDanglingClusterSurvivesRestart schedules the deletion of a dangling cluster with one
// reconciler and lets a second one (a restarted spoke, with an empty memory) carry it out, on
// time and not before.
func TestDanglingClusterSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	rs := raybuilder.MakeRayService("svc", "ns").Active("svc-a").DeletionDelay(60).Obj()
	active, old := fixture.Cluster(rs, "svc-a"), fixture.Cluster(rs, "svc-old")
	c := fake.NewClientBuilder().WithScheme(sch).WithObjects(rs, active, old).Build()
	clk := clocktesting.NewFakeClock(t0)

	steps := []struct {
		advance       time.Duration
		restart       bool
		wantOldExists bool
		wantRemaining bool
	}{
		{0, false, true, true},               // scheduled
		{59 * time.Second, true, true, true}, // a new instance: not yet
		{time.Second, false, false, true},    // due: deleted
		{time.Second, true, false, false},    // nothing left
	}
	r := testReconciler(t, c, clk)
	for i, st := range steps {
		clk.Step(st.advance)
		if st.restart {
			r = testReconciler(t, c, clk)
		}
		remaining, err := r.cleanUpClusters(ctx, newScope(rs.DeepCopy()))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var got rayv1.RayCluster
		err = c.Get(ctx, client.ObjectKeyFromObject(old), &got)
		if exists := err == nil; exists != st.wantOldExists || remaining != st.wantRemaining {
			t.Fatalf("step %d: old cluster exists=%v (%v), remaining=%v", i, exists, err, remaining)
		}
		if i == 0 && got.Annotations[labels.DeleteAfter] != t0.Add(time.Minute).Format(time.RFC3339) {
			t.Fatalf("step 0: %s = %q", labels.DeleteAfter, got.Annotations[labels.DeleteAfter])
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(active), &rayv1.RayCluster{}); err != nil {
		t.Fatalf("active cluster: %v", err)
	}
}

// TestReactivatedClusterLosesItsSchedule: a cluster scheduled for deletion that becomes active
// again (a rollback) keeps living.
func TestReactivatedClusterLosesItsSchedule(t *testing.T) {
	ctx := context.Background()
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	rs := raybuilder.MakeRayService("svc", "ns").Active("svc-a").Obj()
	rc := withDeleteAfter(fixture.Cluster(rs, "svc-a"), t0.Format(time.RFC3339))
	foreign := fixture.Cluster(rs, "svc-foreign")
	foreign.OwnerReferences = nil // carries the labels, but is not ours
	c := fake.NewClientBuilder().WithScheme(sch).WithObjects(rs, rc, foreign).Build()
	r := testReconciler(t, c, clocktesting.NewFakeClock(t0.Add(time.Hour)))
	if _, err := r.cleanUpClusters(ctx, newScope(rs)); err != nil {
		t.Fatal(err)
	}
	var got rayv1.RayCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(rc), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[labels.DeleteAfter]; ok {
		t.Fatalf("schedule kept: %v", got.Annotations)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), &got); err != nil {
		t.Fatalf("a cluster the RayService does not control was touched: %v", err)
	}
	if _, ok := got.Annotations[labels.DeleteAfter]; ok {
		t.Fatalf("a cluster the RayService does not control was scheduled")
	}
}
