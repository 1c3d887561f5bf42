package floor

import (
	"slices"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/aggregate"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// placedOn is a RayService as the placement replay leaves it on members: copies applied, none
// Ready, the binding's rollout of revision rs-rev1 under way.
func placedOn(members ...string) *placedRayService {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rs := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "rs", Generation: 1}}
	g := &placedRayService{rs: rs, rev: "rs-rev1", placed: members,
		copies: map[string]*rayv1.RayService{}, hashes: map[string]string{}}
	var entries []fleetv1alpha1.ClusterStatus
	for _, m := range members {
		g.copies[m] = &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: m + "-bench", Generation: 1,
			Annotations: map[string]string{labels.Revision: g.rev, labels.SpecHash: "h1"}}}
		g.hashes[m] = "h1"
		entries = append(entries, aggregate.ClusterStatusOf(m, g.copies[m], "h1", now))
	}
	rs.Status = aggregate.HubStatus(rs, members, entries, now)
	b := &fleetv1alpha1.RayServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "rs", Generation: 1}}
	b.Status = *bindingStatus(b, entries, rs.Status.Conditions, g.rev, members, now)
	g.binding = b
	return g
}

// turnReady is g with member's copy Ready with one serve endpoint, as the benchmark's change
// leaves it.
func turnReady(g *placedRayService, member string) {
	cp := g.copies[member].DeepCopy()
	cp.Status = rayv1.RayServiceStatuses{ObservedGeneration: 1, NumServeEndpoints: 1, ServiceStatus: rayv1.Running,
		ActiveServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-abcde"},
		Conditions: []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue,
			Reason: "NonZeroServeEndpoints", ObservedGeneration: 1}}}
	g.copies[member] = cp
}

// apply is g after its writes landed, as the status writer keeps it.
func apply(g *placedRayService, d statusWrites) {
	if d.binding != nil {
		g.binding = g.binding.DeepCopy()
		g.binding.Status = *d.binding
	}
	if d.hub != nil {
		g.rs = g.rs.DeepCopy()
		g.rs.Status = *d.hub
	}
}

func TestDecideStatus(t *testing.T) {
	strategy, err := rollout.StrategyOf(&fleetv1alpha1.RolloutStrategy{SoakSeconds: new(int32)})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)
	type want struct {
		endpoints int32
		writes    int
		events    []string
		ready     metav1.ConditionStatus
	}
	for _, tc := range []struct {
		name    string
		members []string
		// ready are the copies turned Ready before each decision, in turn.
		steps [][]string
		want  []want
	}{
		{
			name: "one copy: its change shows, the cluster and the rollout are done", members: []string{"sim-000"},
			steps: [][]string{{"sim-000"}},
			want:  []want{{endpoints: 1, writes: 2, events: []string{"sim-000 ClusterDone", " RolloutComplete"}, ready: metav1.ConditionTrue}},
		},
		{
			name: "two copies, one at a time: the rollout completes with the second", members: []string{"sim-000", "sim-001"},
			steps: [][]string{{"sim-001"}, {"sim-000"}},
			want: []want{
				{endpoints: 1, writes: 2, events: []string{"sim-001 ClusterDone"}, ready: metav1.ConditionFalse},
				{endpoints: 2, writes: 2, events: []string{"sim-000 ClusterDone", " RolloutComplete"}, ready: metav1.ConditionTrue},
			},
		},
		{
			name: "nothing changed: nothing written", members: []string{"sim-000"},
			steps: [][]string{{"sim-000"}, nil},
			want: []want{
				{endpoints: 1, writes: 2, events: []string{"sim-000 ClusterDone", " RolloutComplete"}, ready: metav1.ConditionTrue},
				{endpoints: 1, writes: 0},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := placedOn(tc.members...)
			for i, ready := range tc.steps {
				for _, m := range ready {
					turnReady(g, m)
				}
				before := g.binding.DeepCopy()
				d := decideStatus(g, strategy, nil, at.Add(time.Duration(i)*time.Second))
				w := tc.want[i]
				writes := 0
				if d.binding != nil {
					writes++
				}
				if d.hub != nil {
					writes++
					if d.hub.NumServeEndpoints != w.endpoints {
						t.Errorf("step %d: numServeEndpoints %d, want %d", i, d.hub.NumServeEndpoints, w.endpoints)
					}
					if c := meta.FindStatusCondition(d.hub.Conditions, string(rayv1.RayServiceReady)); c == nil || c.Status != w.ready {
						t.Errorf("step %d: hub Ready %+v, want %s", i, c, w.ready)
					}
				}
				if writes != w.writes {
					t.Errorf("step %d: %d status writes, want %d", i, writes, w.writes)
				}
				var events []string
				for _, ev := range d.events {
					events = append(events, ev.Cluster+" "+ev.Reason)
				}
				if !slices.Equal(events, w.events) {
					t.Errorf("step %d: events %v, want %v", i, events, w.events)
				}
				if d.binding != nil {
					if d.binding.Rollout == nil || d.binding.Rollout.TargetRevision != "rs-rev1" {
						t.Errorf("step %d: binding rollout %+v, want revision rs-rev1", i, d.binding.Rollout)
					}
					if c := meta.FindStatusCondition(d.binding.Conditions, fleetv1alpha1.ConditionReady); c == nil || c.Status != w.ready {
						t.Errorf("step %d: binding Ready %+v, want %s mirrored", i, c, w.ready)
					}
				}
				if !equality.Semantic.DeepEqual(before, g.binding) {
					t.Errorf("step %d: decideStatus modified the binding", i)
				}
				apply(g, d)
			}
		})
	}
}
