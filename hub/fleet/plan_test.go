package fleet

import (
	"maps"
	"reflect"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/hub/placement"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// groupSnapshot is a deep copy of what a group read, to tell whether anything changed it.
type groupSnapshot struct {
	hub            *rayv1.RayService
	binding        *fleetv1alpha1.RayServiceBinding
	policy         *fleetv1alpha1.PlacementPolicy
	memberClusters map[string]*fleetv1alpha1.MemberCluster
	copies         map[string]*rayv1.RayService
	refusals       map[string]fleetv1alpha1.ClusterRefusal
	route          routeRead
	history        []string
}

func snapshot(g *group) groupSnapshot {
	s := groupSnapshot{
		hub: g.hub.DeepCopy(), binding: g.binding.DeepCopy(), policy: g.policy.pp.DeepCopy(),
		memberClusters: map[string]*fleetv1alpha1.MemberCluster{}, copies: map[string]*rayv1.RayService{},
		refusals: maps.Clone(g.refusals), route: g.route,
	}
	s.route.state.Weights = maps.Clone(g.route.state.Weights)
	for name, mc := range g.memberClusters {
		s.memberClusters[name] = mc.DeepCopy()
	}
	for name, m := range g.members {
		s.copies[name] = m.copy.DeepCopy()
	}
	for _, cr := range g.history {
		s.history = append(s.history, cr.Name+"@"+cr.ResourceVersion)
	}
	return s
}

// checkUnchanged fails t when g is not as before was taken from it.
func checkUnchanged(t *testing.T, before groupSnapshot, g *group, after string) {
	t.Helper()
	if now := snapshot(g); !reflect.DeepEqual(before, now) {
		t.Errorf("%s changed the group:\nbefore %+v\nafter  %+v", after, before, now)
	}
}

// decideTwice decides g twice and checks that the two decisions are equal and that deciding
// left the group and the reservations as they were: the decision is a function of the group,
// and only the executor records the reservations it names.
func decideTwice(t *testing.T, r *Reconciler, g *group) *decision {
	t.Helper()
	before := snapshot(g)
	reservedBefore := reservedNow(r, g)
	d := r.decide(g)
	checkUnchanged(t, before, g, "deciding")
	again := r.decide(g)
	if !reflect.DeepEqual(d, again) {
		t.Errorf("a second decision of one group differs:\nfirst  %+v\nsecond %+v", d, again)
	}
	if after := reservedNow(r, g); !reflect.DeepEqual(reservedBefore, after) {
		t.Errorf("deciding changed the reservations:\nbefore %+v\nafter  %+v", reservedBefore, after)
	}
	return d
}

// reservedNow are r's reservations as g's RayService would read them at g.now.
func reservedNow(r *Reconciler, g *group) placement.Snapshot {
	return r.reserved.Snapshot(g.now, nil, g.key, placement.GreenKey(g.key))
}
