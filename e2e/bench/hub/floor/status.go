package floor

// The status floor (-status-floor): what the hub writes to show one member status change,
// decided here from what the placement replay wrote and the copies the status watch saw. The
// decision reuses the hub's own functions: hub/rollout.Plan for the rollout status and its
// events (ClusterDone for the copy, RolloutComplete with the RayService's last copy),
// hub/aggregate for the per-cluster entries and the hub RayService's status, whose
// numServeEndpoints the benchmark watches.
//
// What it leaves out of the hub's status path: the reconcile's reads (cached), the group it
// reads and the placement it decides again (the floor keeps the placement it replayed), the
// drift check of the copies, and the spoke's running-hash annotations in "done" (a copy is done
// once Ready for its generation and spec: the floor's copies never carry those annotations).

import (
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/aggregate"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/raystatus"
)

// placedRayService is what the placement replay wrote for one RayService, and the copies as
// the status watch last saw them: the group a status change is decided from.
type placedRayService struct {
	// rs and binding are the objects as their last status write answered.
	rs      *rayv1.RayService
	binding *fleetv1alpha1.RayServiceBinding
	// rev is the revision applied; placed the members holding a copy, sorted.
	rev    string
	placed []string
	// copies are the member copies by member, as last seen (the apply's answer at first);
	// hashes the spec hash applied to each.
	copies map[string]*rayv1.RayService
	hashes map[string]string
}

// statusWrites are the writes that show a change: each status nil when it did not change.
type statusWrites struct {
	binding *fleetv1alpha1.RayServiceBindingStatus
	hub     *rayv1.RayServiceStatuses
	events  []rollout.Event
}

// decideStatus is what the hub writes after the copies of g changed: the binding's status
// (per-cluster entries, the rollout planned by rollout.Plan, Ready mirrored), the hub
// RayService's (hub/aggregate, with the rollout's conditions) and the rollout's events.
// memberLabels are the members' MemberCluster labels; g is not modified.
func decideStatus(g *placedRayService, strategy rollout.Strategy, memberLabels map[string]map[string]string, at time.Time) statusWrites {
	now := metav1.NewTime(at)
	clusters := make([]rollout.Cluster, 0, len(g.placed))
	for _, name := range g.placed {
		cp := g.copies[name]
		c := rollout.Cluster{Name: name, Labels: memberLabels[name], Ready: true}
		if cp != nil {
			c.Revision, c.Endpoints = cp.Annotations[labels.Revision], cp.Status.NumServeEndpoints
			c.Done = copyDone(cp, g.rev, g.hashes[name])
		}
		clusters = append(clusters, c)
	}
	plan := rollout.Plan(rollout.Input{
		Now: at, Strategy: strategy, Target: g.rev, Previous: g.binding.Status.Rollout,
		Clusters: clusters, ClusterPhases: rollout.PhasesOf(g.binding.Status.Clusters),
	})
	entries := make([]fleetv1alpha1.ClusterStatus, 0, len(g.placed))
	for _, name := range g.placed {
		cs := aggregate.ClusterStatusOf(name, g.copies[name], g.hashes[name], now)
		if cp := g.copies[name]; cp != nil {
			cs.Revision = cp.Annotations[labels.Revision]
		}
		if p, ok := plan.Phases[name]; ok {
			cs.RolloutPhase, cs.PhaseTime, cs.UpdateTime = p.Phase, secondsOf(p.Since), secondsOf(p.Started)
		}
		entries = append(entries, cs)
	}
	hub := aggregate.HubStatus(g.rs, g.placed, entries, now)
	for _, c := range []metav1.Condition{plan.Progressing, plan.Paused} {
		c.ObservedGeneration, c.LastTransitionTime = g.rs.Generation, now
		conditions.Set(&hub.Conditions, c)
	}
	b := g.binding
	next := b.Status.DeepCopy()
	next.ObservedGeneration = b.Generation
	next.Clusters = entries
	next.Rollout = plan.Status.DeepCopy()
	conditions.Mirror(&next.Conditions, hub.Conditions, string(rayv1.RayServiceReady), fleetv1alpha1.ConditionReady,
		b.Generation, now)
	out := statusWrites{events: plan.Events}
	if bindingChanged(&b.Status, next) {
		out.binding = next
	}
	if raystatus.RayServiceChanged(&g.rs.Status, &hub) {
		out.hub = &hub
	}
	return out
}

// copyDone is the hub's "done" for a copy of revision rev with spec hash hash: it carries
// them, its member observed its generation, it is Ready and nothing is pending.
func copyDone(cp *rayv1.RayService, rev, hash string) bool {
	st := &cp.Status
	return cp.Annotations[labels.Revision] == rev && cp.Annotations[labels.SpecHash] == hash &&
		st.ObservedGeneration >= cp.Generation && st.PendingServiceStatus.RayClusterName == "" &&
		meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceReady))
}

// bindingChanged reports whether the binding's status differs in anything but the entries'
// lastSeenTime, which the hub never writes alone.
func bindingChanged(prev, next *fleetv1alpha1.RayServiceBindingStatus) bool {
	a, b := prev.DeepCopy(), next.DeepCopy()
	for _, st := range []*fleetv1alpha1.RayServiceBindingStatus{a, b} {
		for i := range st.Clusters {
			st.Clusters[i].LastSeenTime = nil
		}
	}
	return !equality.Semantic.DeepEqual(a, b)
}

// secondsOf is a planner time as the binding keeps it (to the second; nil for none).
func secondsOf(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}
