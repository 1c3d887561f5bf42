package upgrade

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
)

const kuberay = labels.KubeRayVersionValue

func TestShouldPrepareNewCluster(t *testing.T) {
	base := raybuilder.MakeRayService("svc", "ns")
	current := fixture.Cluster(base.Obj(), "svc-old")
	tests := []struct {
		name            string
		rs              *rayv1.RayService
		active, pending *rayv1.RayCluster
		pendingServing  bool
		zeroDowntime    bool
		want            bool
	}{
		{"new RayService", base.Obj(), nil, nil, false, true, true},
		{"new RayService even without zero downtime", base.Obj(), nil, nil, false, false, true},
		{"spec unchanged", base.Obj(), current, nil, false, true, false},
		{"replicas changed only", raybuilder.MakeRayService("svc", "ns").Replicas(0, 4).Obj(), current, nil, false, true, false},
		{"worker group appended: updated in place", raybuilder.MakeRayService("svc", "ns").WorkerGroup("big", 2).Obj(), current, nil, false, true, false},
		{"image changed", raybuilder.MakeRayService("svc", "ns").Image("ray:2").Obj(), current, nil, false, true, true},
		{"image changed, ENABLE_ZERO_DOWNTIME=false", raybuilder.MakeRayService("svc", "ns").Image("ray:2").Obj(), current, nil, false, false, false},
		{"image changed, NewCluster wins over the env", raybuilder.MakeRayService("svc", "ns").Image("ray:2").Strategy(rayv1.RayServiceNewCluster).Obj(),
			current, nil, false, false, true},
		{"image changed, strategy None", raybuilder.MakeRayService("svc", "ns").Image("ray:2").Strategy(rayv1.RayServiceUpgradeNone).Obj(),
			current, nil, false, true, false},
		{"compared with the pending cluster first", raybuilder.MakeRayService("svc", "ns").Image("ray:2").Obj(),
			current, fixture.Cluster(raybuilder.MakeRayService("svc", "ns").Image("ray:2").Obj(), "svc-new"), false, true, false},
		{"spec changed again during an upgrade", raybuilder.MakeRayService("svc", "ns").Image("ray:3").Obj(),
			current, fixture.Cluster(raybuilder.MakeRayService("svc", "ns").Image("ray:2").Obj(), "svc-new"), false, true, true},
		{"pending cluster already serving", raybuilder.MakeRayService("svc", "ns").Image("ray:3").Obj(), current, nil, true, true, false},
		{"rolling back", raybuilder.MakeRayService("svc", "ns").Image("ray:3").
			Condition(rayv1.RollbackInProgress, metav1.ConditionTrue, rayv1.TargetClusterChanged).Obj(), current, nil, false, true, false},
		{"cluster without a hash", base.Obj(), &rayv1.RayCluster{}, nil, false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ShouldPrepareNewCluster(&tt.rs.Spec, &tt.rs.Status, tt.active, tt.pending, tt.pendingServing, tt.zeroDowntime)
			if got != tt.want {
				t.Fatalf("ShouldPrepareNewCluster = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestShouldUpdateCluster(t *testing.T) {
	base := raybuilder.MakeRayService("svc", "ns")
	current := fixture.Cluster(base.Obj(), "svc-a")
	oldOperator := current.DeepCopy()
	oldOperator.Annotations[labels.KubeRayVersion] = "v1.4.0"
	upgrading := raybuilder.MakeRayService("svc", "ns").WorkerGroup("big", 1).Upgrading().Obj()
	autoscaled := raybuilder.MakeRayService("svc", "ns").Autoscaling()
	autoscaledCurrent := fixture.Cluster(autoscaled.Obj(), "svc-a")
	tests := []struct {
		name string
		rs   *rayv1.RayService
		rc   *rayv1.RayCluster
		role Role
		want bool
	}{
		{"no cluster", base.Obj(), nil, Active, false},
		{"unchanged", base.Obj(), current, Active, false},
		{"replicas changed without the autoscaler", raybuilder.MakeRayService("svc", "ns").Replicas(0, 3).Obj(), current, Active, true},
		{"replicas changed on the pending cluster", raybuilder.MakeRayService("svc", "ns").Replicas(0, 3).Obj(), current, Pending, true},
		{"replicas changed with the autoscaler: its business", raybuilder.MakeRayService("svc", "ns").Autoscaling().Replicas(0, 3).Obj(),
			fixture.Cluster(raybuilder.MakeRayService("svc", "ns").Autoscaling().Obj(), "svc-a"), Active, false},
		{"replicas moved by the autoscaler: its business", autoscaled.Obj(), autoscaledTo(autoscaledCurrent, 4), Active, false},
		{"maxReplicas lowered with the autoscaler: in place", raybuilder.MakeRayService("svc", "ns").Autoscaling().ReplicaBounds(0, 0, 1).Obj(),
			autoscaledTo(autoscaledCurrent, 4), Active, true},
		{"minReplicas raised with the autoscaler: in place", raybuilder.MakeRayService("svc", "ns").Autoscaling().ReplicaBounds(0, 3, 5).Obj(),
			autoscaledCurrent, Active, true},
		{"bounds changed with the autoscaler on the pending cluster", raybuilder.MakeRayService("svc", "ns").Autoscaling().ReplicaBounds(0, 0, 1).Obj(),
			autoscaledCurrent, Pending, true},
		{"bounds changed with the autoscaler during an upgrade: active frozen",
			raybuilder.MakeRayService("svc", "ns").Autoscaling().ReplicaBounds(0, 0, 1).Upgrading().Obj(), autoscaledCurrent, Active, false},
		{"minReplicas changed without the autoscaler", raybuilder.MakeRayService("svc", "ns").ReplicaBounds(0, 1, 5).Obj(), current, Active, true},
		{"image changed under None: in place", raybuilder.MakeRayService("svc", "ns").Strategy(rayv1.RayServiceUpgradeNone).Image("ray:2").Obj(),
			current, Active, true},
		{"image changed under None, pending cluster", raybuilder.MakeRayService("svc", "ns").Strategy(rayv1.RayServiceUpgradeNone).Image("ray:2").Obj(),
			current, Pending, false},
		{"worker group appended", raybuilder.MakeRayService("svc", "ns").WorkerGroup("big", 1).Obj(), current, Active, true},
		{"worker group appended to the pending cluster", raybuilder.MakeRayService("svc", "ns").WorkerGroup("big", 1).Obj(), current, Pending, true},
		{"worker group inserted first", prependGroup(base.Obj()), current, Active, false},
		{"image changed", raybuilder.MakeRayService("svc", "ns").Image("ray:2").Obj(), current, Active, false},
		{"suspended", raybuilder.MakeRayService("svc", "ns").Suspend(true).Obj(), current, Active, true},
		{"resumed", base.Obj(), suspended(current), Pending, true},
		{"operator version changed", base.Obj(), oldOperator, Active, true},
		{"operator version changed, pending cluster left alone", base.Obj(), oldOperator, Pending, false},
		{"active cluster frozen during an upgrade", upgrading, current, Active, false},
		{"active cluster frozen even for a new operator", raybuilder.MakeRayService("svc", "ns").Upgrading().Obj(), oldOperator, Active, false},
		{"pending cluster still updated during an upgrade", upgrading, current, Pending, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShouldUpdateCluster(&tt.rs.Spec, &tt.rs.Status, tt.rc, tt.role, kuberay, true); got != tt.want {
				t.Fatalf("ShouldUpdateCluster = %v, want %v", got, tt.want)
			}
		})
	}
}

func prependGroup(rs *rayv1.RayService) *rayv1.RayService {
	g := *rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].DeepCopy()
	g.GroupName = "first"
	rs.Spec.RayClusterSpec.WorkerGroupSpecs = append([]rayv1.WorkerGroupSpec{g}, rs.Spec.RayClusterSpec.WorkerGroupSpecs...)
	return rs
}

// autoscaledTo returns rc with its first worker group's replicas set to n, as the autoscaler
// would write them.
func autoscaledTo(rc *rayv1.RayCluster, n int32) *rayv1.RayCluster {
	rc = rc.DeepCopy()
	rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(n)
	return rc
}

func suspended(rc *rayv1.RayCluster) *rayv1.RayCluster {
	rc = rc.DeepCopy()
	rc.Spec.Suspend = ptr.To(true)
	return rc
}

func TestInPlaceUpdate(t *testing.T) {
	tests := []struct {
		name         string
		autoscaling  bool
		wantReplicas []int32
		wantDelete   []string
	}{
		// KubeRay rebuilds the spec and so resets the autoscaler's replicas and workersToDelete.
		{"autoscaled groups keep the autoscaler's replicas", true, []int32{4, 2}, []string{"w-1"}},
		{"without the autoscaler the RayService's replicas apply", false, []int32{1, 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := raybuilder.MakeRayService("svc", "ns")
			if tt.autoscaling {
				w.Autoscaling()
			}
			current := fixture.Cluster(w.Obj(), "svc-a")
			current.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4)
			current.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{"w-1"}
			current.Annotations["kueue.x-k8s.io/keep"] = "yes"

			rs := w.WorkerGroup("big", 2).Obj()
			got := InPlaceUpdate(current, fixture.Cluster(rs, "svc-a"))

			if n := len(got.Spec.WorkerGroupSpecs); n != 2 {
				t.Fatalf("worker groups = %d, want 2", n)
			}
			for i, want := range tt.wantReplicas {
				if r := ptr.Deref(got.Spec.WorkerGroupSpecs[i].Replicas, -1); r != want {
					t.Errorf("group %d replicas = %d, want %d", i, r, want)
				}
			}
			if del := got.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete; len(del) != len(tt.wantDelete) {
				t.Errorf("workersToDelete = %v, want %v", del, tt.wantDelete)
			}
			if got.Annotations[labels.NumWorkerGroups] != "2" || got.Annotations["kueue.x-k8s.io/keep"] != "yes" {
				t.Errorf("annotations = %v: want the new group count and the foreign annotation kept", got.Annotations)
			}
			if current.Annotations[labels.NumWorkerGroups] != "1" {
				t.Error("the current cluster was modified")
			}
		})
	}
}

func TestAutoscaledWorkerGroups(t *testing.T) {
	p := ptr.To[int32]
	group := func(name string, replicas, minReplicas, maxReplicas *int32) rayv1.WorkerGroupSpec {
		return rayv1.WorkerGroupSpec{GroupName: name, Replicas: replicas, MinReplicas: minReplicas, MaxReplicas: maxReplicas}
	}
	tests := []struct {
		name         string
		current      rayv1.WorkerGroupSpec
		goal         rayv1.WorkerGroupSpec
		wantReplicas *int32
	}{
		{"within the bounds: the autoscaler's replicas kept", group("g", p(3), p(0), p(5)), group("g", p(1), p(0), p(5)), p(3)},
		{"maxReplicas lowered: clamped down", group("g", p(4), p(0), p(4)), group("g", p(1), p(0), p(1)), p(1)},
		{"minReplicas raised: clamped up", group("g", p(1), p(0), p(5)), group("g", p(1), p(3), p(5)), p(3)},
		{"maxReplicas lowered to 0", group("g", p(2), p(0), p(4)), group("g", p(1), p(0), p(0)), p(0)},
		{"no maxReplicas: unbounded", group("g", p(9), nil, p(4)), group("g", p(1), nil, nil), p(9)},
		// As demand.WorkerGroupReplicas: above minReplicas, maxReplicas applies.
		{"inverted bounds", group("g", p(4), p(0), p(5)), group("g", p(1), p(3), p(2)), p(2)},
		{"no replicas written yet: the RayService's", group("g", nil, p(0), p(5)), group("g", p(1), p(0), p(5)), p(1)},
		{"a new group: the RayService's", group("other", p(4), p(0), p(5)), group("g", p(1), p(0), p(5)), p(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := []rayv1.WorkerGroupSpec{tt.current}
			current[0].ScaleStrategy.WorkersToDelete = []string{"w-1"}
			goal := []rayv1.WorkerGroupSpec{tt.goal}
			got := AutoscaledWorkerGroups(current, goal)
			if len(got) != 1 {
				t.Fatalf("worker groups = %d, want 1", len(got))
			}
			if !ptr.Equal(got[0].Replicas, tt.wantReplicas) {
				t.Errorf("replicas = %v, want %v", ptr.Deref(got[0].Replicas, -1), ptr.Deref(tt.wantReplicas, -1))
			}
			if !ptr.Equal(got[0].MinReplicas, tt.goal.MinReplicas) || !ptr.Equal(got[0].MaxReplicas, tt.goal.MaxReplicas) {
				t.Errorf("bounds = [%v, %v], want the RayService's", ptr.Deref(got[0].MinReplicas, -1), ptr.Deref(got[0].MaxReplicas, -1))
			}
			kept := tt.current.GroupName == tt.goal.GroupName
			if del := got[0].ScaleStrategy.WorkersToDelete; (len(del) == 1) != kept {
				t.Errorf("workersToDelete = %v, want the current group's kept only when it is the same group", del)
			}
			if ptr.Deref(goal[0].Replicas, -1) != ptr.Deref(tt.goal.Replicas, -1) {
				t.Error("the goal was modified")
			}
		})
	}
}

// The hub lowers a blue/green's capacity under the autoscaler by lowering maxReplicas: the
// active cluster is updated in place and its replicas fall to the new bound at once.
func TestMaxReplicasLoweredUnderAutoscaling(t *testing.T) {
	w := raybuilder.MakeRayService("svc", "ns").Autoscaling().ReplicaBounds(0, 0, 4)
	current := autoscaledTo(fixture.Cluster(w.Obj(), "svc-a"), 3)
	rs := w.ReplicaBounds(0, 0, 1).Obj()
	if !ShouldUpdateCluster(&rs.Spec, &rs.Status, current, Active, kuberay, true) {
		t.Fatal("ShouldUpdateCluster = false, want the lowered maxReplicas applied in place")
	}
	if ShouldPrepareNewCluster(&rs.Spec, &rs.Status, current, nil, false, true) {
		t.Fatal("ShouldPrepareNewCluster = true, want no new cluster for a bound change")
	}
	got := InPlaceUpdate(current, fixture.Cluster(rs, "svc-a"))
	g := got.Spec.WorkerGroupSpecs[0]
	if ptr.Deref(g.MaxReplicas, -1) != 1 || ptr.Deref(g.Replicas, -1) != 1 {
		t.Fatalf("replicas %d, maxReplicas %d; want 1 and 1", ptr.Deref(g.Replicas, -1), ptr.Deref(g.MaxReplicas, -1))
	}
}
