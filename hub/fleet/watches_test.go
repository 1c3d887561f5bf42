package fleet

import (
	"context"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/scheme"
)

func TestNotCreated(t *testing.T) {
	b := &fleetv1alpha1.RayServiceBinding{}
	p := notCreated()
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{name: "create", got: p.Create(event.CreateEvent{Object: b}), want: false},
		{name: "update", got: p.Update(event.UpdateEvent{ObjectOld: b, ObjectNew: b}), want: true},
		{name: "delete", got: p.Delete(event.DeleteEvent{Object: b}), want: true},
		{name: "generic", got: p.Generic(event.GenericEvent{Object: b}), want: true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s passes = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestCapacityChangeRequeuesBindingsWaitingForRoom tables which RayServices a member's free
// capacity growing queues: those placed on fewer clusters than asked, not those being placed
// right now (no Placed condition yet), placed, or refused for something room cannot change.
func TestCapacityChangeRequeuesBindingsWaitingForRoom(t *testing.T) {
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	placed := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: fleetv1alpha1.ConditionPlaced, Status: status, Reason: reason}
	}
	bindings := []struct {
		name   string
		placed *metav1.Condition
		want   bool
	}{
		{name: "being-placed", placed: nil, want: false},
		{name: "placed", placed: placed(metav1.ConditionTrue, fleetv1alpha1.ReasonClustersChosen), want: false},
		{name: "too-few-fit", placed: placed(metav1.ConditionFalse, fleetv1alpha1.ReasonInsufficientClusters), want: true},
		{name: "none-fits", placed: placed(metav1.ConditionFalse, fleetv1alpha1.ReasonNoClusterFits), want: true},
		{name: "no-policy", placed: placed(metav1.ConditionFalse, fleetv1alpha1.ReasonPolicyNotFound), want: false},
		{name: "invalid", placed: placed(metav1.ConditionFalse, fleetv1alpha1.ReasonValidationFailed), want: false},
		{name: "not-granted", placed: placed(metav1.ConditionFalse, fleetv1alpha1.ReasonNotGranted), want: false},
		{name: "undecided", placed: placed(metav1.ConditionUnknown, fleetv1alpha1.ReasonApplyPending), want: false},
	}
	var objs []client.Object
	want := map[string]bool{}
	for _, b := range bindings {
		obj := &fleetv1alpha1.RayServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: b.name}}
		if b.placed != nil {
			meta.SetStatusCondition(&obj.Status.Conditions, *b.placed)
		}
		if got := waitsForRoom(obj); got != b.want {
			t.Errorf("waitsForRoom(%s) = %v, want %v", b.name, got, b.want)
		}
		if b.want {
			want[b.name] = true
		}
		objs = append(objs, obj)
	}
	r := &Reconciler{client: fake.NewClientBuilder().WithScheme(sch).WithObjects(objs...).
		WithIndex(&fleetv1alpha1.RayServiceBinding{}, roomIndex, roomIndexValue).Build()}

	member := func(cpu string) *fleetv1alpha1.MemberCluster {
		free := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
		mc.Status.Capacity = &fleetv1alpha1.ClusterCapacity{Allocatable: free, Free: free}
		return mc
	}
	tests := []struct {
		name     string
		old, new *fleetv1alpha1.MemberCluster
		want     map[string]bool
	}{
		{name: "more free capacity", old: member("10"), new: member("12"), want: want},
		{name: "less free capacity", old: member("10"), new: member("8"), want: map[string]bool{}},
		{name: "a heartbeat alone", old: member("10"), new: member("10"), want: map[string]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			r.memberClusterHandler().Update(context.Background(), event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}, q)
			got := map[string]bool{}
			for q.Len() > 0 {
				req, _ := q.Get()
				got[req.Name] = true
				q.Done(req)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("queued %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tt.want)))
			}
		})
	}
}
