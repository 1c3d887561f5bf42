package upgrade

import (
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// split is a status with the given capacities and traffic (-1 = unset).
type split struct {
	activeCap, pendingCap, activeTraffic, pendingTraffic int32
	activeMoved, pendingMoved                            time.Duration // since t0; -1 = never
	rollback                                             bool
}

func (sp split) status() *rayv1.RayServiceStatuses {
	st := &rayv1.RayServiceStatuses{
		ActiveServiceStatus:  rayv1.RayServiceStatus{RayClusterName: "a"},
		PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "p"},
	}
	set := func(dst **int32, v int32) {
		if v >= 0 {
			*dst = ptr.To(v)
		}
	}
	set(&st.ActiveServiceStatus.TargetCapacity, sp.activeCap)
	set(&st.PendingServiceStatus.TargetCapacity, sp.pendingCap)
	set(&st.ActiveServiceStatus.TrafficRoutedPercent, sp.activeTraffic)
	set(&st.PendingServiceStatus.TrafficRoutedPercent, sp.pendingTraffic)
	if sp.activeMoved >= 0 {
		st.ActiveServiceStatus.LastTrafficMigratedTime = ptr.To(metav1.NewTime(t0.Add(sp.activeMoved)))
	}
	if sp.pendingMoved >= 0 {
		st.PendingServiceStatus.LastTrafficMigratedTime = ptr.To(metav1.NewTime(t0.Add(sp.pendingMoved)))
	}
	if sp.rollback {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(rayv1.RollbackInProgress), Status: metav1.ConditionTrue,
			Reason: string(rayv1.TargetClusterChanged)})
	}
	return st
}

func options(maxSurge, step, interval int32) *rayv1.ClusterUpgradeOptions {
	return &rayv1.ClusterUpgradeOptions{MaxSurgePercent: ptr.To(maxSurge), StepSizePercent: ptr.To(step),
		IntervalSeconds: ptr.To(interval), GatewayClassName: "gw"}
}

func TestNextTraffic(t *testing.T) {
	opts := options(50, 20, 30)
	tests := []struct {
		name         string
		split        split
		pendingReady bool
		now          time.Duration // since t0
		want         Weights
	}{
		{"nothing recorded yet: all on active", split{-1, -1, -1, -1, -1, -1, false}, true, 0, Weights{100, 0}},
		{"pending at its capacity waits for more capacity", split{100, 40, 60, 40, -1, 0, false}, true, time.Hour, Weights{60, 40}},
		{"steps towards the pending capacity", split{100, 50, 100, 0, -1, -1, false}, true, 0, Weights{80, 20}},
		{"never past the pending capacity", split{100, 50, 60, 40, -1, 0, false}, true, time.Minute, Weights{50, 50}},
		{"waits for the interval", split{100, 50, 80, 20, -1, 0, false}, true, 29 * time.Second, Weights{80, 20}},
		{"steps once the interval passed", split{100, 50, 80, 20, -1, 0, false}, true, 30 * time.Second, Weights{60, 40}},
		{"pending not ready: paused", split{100, 50, 80, 20, -1, 0, false}, false, time.Hour, Weights{80, 20}},
		{"up to 100", split{0, 100, 10, 90, -1, 0, false}, true, time.Minute, Weights{0, 100}},
		{"rollback steps back regardless of readiness", split{100, 50, 40, 60, 0, -1, true}, false, time.Minute, Weights{60, 40}},
		{"rollback never past the active capacity", split{50, 100, 40, 60, 0, -1, true}, false, time.Minute, Weights{50, 50}},
		{"rollback done moving", split{50, 100, 50, 50, 0, -1, true}, false, time.Minute, Weights{50, 50}},
		{"rollback waits for the interval on the active side", split{100, 50, 40, 60, 0, -1, true}, false, 10 * time.Second, Weights{40, 60}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NextTraffic(tt.split.status(), opts, tt.pendingReady, t0.Add(tt.now))
			if got != tt.want {
				t.Fatalf("NextTraffic = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNextCapacity(t *testing.T) {
	tests := []struct {
		name   string
		split  split
		surge  int32
		want   CapacityChange
		wantOK bool
	}{
		{"start: pending grows by maxSurge", split{100, 0, 100, 0, -1, -1, false}, 30, CapacityChange{Pending, 30}, true},
		{"unset values start from 100/0", split{-1, -1, -1, -1, -1, -1, false}, 50, CapacityChange{Pending, 50}, true},
		{"traffic catching up: wait", split{100, 30, 90, 10, -1, -1, false}, 30, CapacityChange{}, false},
		{"sum over 100: active shrinks", split{100, 30, 70, 30, -1, -1, false}, 30, CapacityChange{Active, 70}, true},
		{"sum 100 again: pending grows", split{70, 30, 70, 30, -1, -1, false}, 30, CapacityChange{Pending, 60}, true},
		{"pending capped at 100", split{10, 90, 10, 90, -1, -1, false}, 30, CapacityChange{Pending, 100}, true},
		{"active floored at 0", split{10, 100, 0, 100, -1, -1, false}, 30, CapacityChange{Active, 0}, true},
		{"complete", split{0, 100, 0, 100, -1, -1, false}, 30, CapacityChange{}, false},
		{"maxSurge 100 in one go", split{100, 0, 100, 0, -1, -1, false}, 100, CapacityChange{Pending, 100}, true},
		{"rollback: traffic moving back first", split{50, 100, 30, 70, -1, -1, true}, 50, CapacityChange{}, false},
		{"rollback: pending shrinks while the sum is over 100", split{50, 100, 50, 50, -1, -1, true}, 50, CapacityChange{Pending, 50}, true},
		{"rollback: then active grows", split{50, 50, 50, 50, -1, -1, true}, 50, CapacityChange{Active, 100}, true},
		{"rollback: then pending goes to 0", split{100, 50, 100, 0, -1, -1, true}, 50, CapacityChange{Pending, 0}, true},
		// KubeRay stops here because it thinks the upgrade is complete, and the rollback never ends.
		{"rollback from the completed split", split{0, 100, 0, 100, -1, -1, true}, 50, CapacityChange{Active, 50}, true},
		{"rollback done", split{100, 0, 100, 0, -1, -1, true}, 50, CapacityChange{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NextCapacity(tt.split.status(), options(tt.surge, 10, 30))
			if ok != tt.wantOK || got != tt.want {
				t.Fatalf("NextCapacity = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestIncrementalUpgradeConverges plays the whole state machine: capacity and traffic steps
// alternate until promotion, with every intermediate split valid.
func TestIncrementalUpgradeConverges(t *testing.T) {
	for _, surge := range []int32{10, 25, 30, 50, 100} {
		st := split{100, 0, 100, 0, -1, -1, false}.status()
		opts := options(surge, 15, 10)
		now := t0
		for i := 0; !Complete(st); i++ {
			if i > 200 {
				t.Fatalf("surge %d: no completion after 200 steps: %+v", surge, st)
			}
			if c, ok := NextCapacity(st, opts); ok {
				target := &st.ActiveServiceStatus
				if c.Cluster == Pending {
					target = &st.PendingServiceStatus
				}
				target.TargetCapacity = ptr.To(c.Goal)
			}
			now = now.Add(10 * time.Second)
			w := NextTraffic(st, opts, true, now)
			if w.Active+w.Pending != 100 || w.Pending > *st.PendingServiceStatus.TargetCapacity {
				t.Fatalf("surge %d: bad weights %+v at %+v", surge, w, st)
			}
			if w.Pending != ptr.Deref(st.PendingServiceStatus.TrafficRoutedPercent, 0) {
				st.PendingServiceStatus.LastTrafficMigratedTime = ptr.To(metav1.NewTime(now))
			}
			st.ActiveServiceStatus.TrafficRoutedPercent = ptr.To(w.Active)
			st.PendingServiceStatus.TrafficRoutedPercent = ptr.To(w.Pending)
		}
	}
}

func TestComplete(t *testing.T) {
	tests := []struct {
		name  string
		split split
		want  bool
	}{
		{"all moved", split{0, 100, 0, 100, -1, -1, false}, true},
		{"traffic not all moved", split{0, 100, 10, 90, -1, -1, false}, false},
		{"active still has capacity", split{10, 100, 0, 100, -1, -1, false}, false},
		{"nothing recorded", split{-1, -1, -1, -1, -1, -1, false}, false},
		{"a rollback is never promoted", split{0, 100, 0, 100, -1, -1, true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Complete(tt.split.status()); got != tt.want {
				t.Fatalf("Complete = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRollbackComplete(t *testing.T) {
	tests := []struct {
		name  string
		split split
		want  bool
	}{
		{"back on active", split{100, 0, 100, 0, -1, -1, true}, true},
		{"pending still has traffic", split{100, 0, 90, 10, -1, -1, true}, false},
		{"pending still has capacity", split{100, 10, 100, 0, -1, -1, true}, false},
		{"unset pending values", split{100, -1, 100, -1, -1, -1, true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RollbackComplete(tt.split.status()); got != tt.want {
				t.Fatalf("RollbackComplete = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecideRollback(t *testing.T) {
	original := raybuilder.MakeRayService("svc", "ns").Incremental(50, 10, 10)
	upgraded := raybuilder.MakeRayService("svc", "ns").Incremental(50, 10, 10).Image("ray:2")
	pending := fixture.Cluster(upgraded.Obj(), "svc-new")
	rolling := func(w *raybuilder.RayServiceWrapper) *rayv1.RayService {
		return w.Obj().DeepCopy()
	}
	tests := []struct {
		name string
		rs   *rayv1.RayService
		want RollbackTransition
	}{
		{"on track", upgraded.Obj(), RollbackUnchanged},
		{"reverted mid-upgrade", original.Obj(), RollbackStart},
		{"a third spec mid-upgrade", raybuilder.MakeRayService("svc", "ns").Incremental(50, 10, 10).Image("ray:3").Obj(), RollbackStart},
		{"already rolling back", withRollback(rolling(original)), RollbackUnchanged},
		{"goal back on the pending cluster", withRollback(rolling(upgraded)), RollbackCancel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideRollback(&tt.rs.Spec, &tt.rs.Status, pending); got != tt.want {
				t.Fatalf("DecideRollback = %v, want %v", got, tt.want)
			}
		})
	}
}

func withRollback(rs *rayv1.RayService) *rayv1.RayService {
	meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{Type: string(rayv1.RollbackInProgress),
		Status: metav1.ConditionTrue, Reason: string(rayv1.TargetClusterChanged)})
	return rs
}

func TestGatewayAndRouteReady(t *testing.T) {
	cond := func(t string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: "R"}
	}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "svc-gateway", Namespace: "ns"}}
	readyGW := gw.DeepCopy()
	readyGW.Status.Conditions = []metav1.Condition{cond("Accepted", metav1.ConditionTrue), cond("Programmed", metav1.ConditionTrue)}
	acceptedOnly := gw.DeepCopy()
	acceptedOnly.Status.Conditions = []metav1.Condition{cond("Accepted", metav1.ConditionTrue), cond("Programmed", metav1.ConditionFalse)}

	route := func(name, ns string, conds ...metav1.Condition) *gwv1.HTTPRoute {
		r := &gwv1.HTTPRoute{}
		ref := gwv1.ParentReference{Name: gwv1.ObjectName(name)}
		if ns != "" {
			ref.Namespace = ptr.To(gwv1.Namespace(ns))
		}
		r.Status.Parents = []gwv1.RouteParentStatus{{ParentRef: ref, Conditions: conds}}
		return r
	}
	good := []metav1.Condition{cond("Accepted", metav1.ConditionTrue), cond("ResolvedRefs", metav1.ConditionTrue)}
	tests := []struct {
		name      string
		gw        *gwv1.Gateway
		route     *gwv1.HTTPRoute
		wantGW    bool
		wantRoute bool
	}{
		{"both ready", readyGW, route("svc-gateway", "ns", good...), true, true},
		{"route parent without namespace", readyGW, route("svc-gateway", "", good...), true, true},
		{"gateway not programmed", acceptedOnly, route("svc-gateway", "ns", good...), false, true},
		{"route on another gateway", readyGW, route("other", "ns", good...), true, false},
		{"route in another namespace's gateway", readyGW, route("svc-gateway", "other", good...), true, false},
		{"route refs unresolved", readyGW, route("svc-gateway", "ns", good[0], cond("ResolvedRefs", metav1.ConditionFalse)), true, false},
		{"nothing yet", nil, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GatewayReady(tt.gw); got != tt.wantGW {
				t.Errorf("GatewayReady = %v, want %v", got, tt.wantGW)
			}
			if got := RouteReady(readyGW, tt.route); tt.route != nil && got != tt.wantRoute {
				t.Errorf("RouteReady = %v, want %v", got, tt.wantRoute)
			}
		})
	}
}
