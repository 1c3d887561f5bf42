package fleet

// Phase: plan. Leaving: the clusters no longer placed and whether their copies go now.

import (
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// departure is a cluster the RayService left whose copy is still there (or could not be read).
type departure struct {
	leaving fleetv1alpha1.ClusterLeaving
	// fresh is set when the RayService left the cluster in this reconcile.
	fresh bool
	// why is the placement's reason for not choosing the cluster, when it gave one.
	why string
}

// previousLeaving are the binding's leaving entries by cluster.
func previousLeaving(g *group) map[string]*fleetv1alpha1.ClusterLeaving {
	out := map[string]*fleetv1alpha1.ClusterLeaving{}
	if g.binding == nil {
		return out
	}
	for i := range g.binding.Status.Clusters {
		if l := g.binding.Status.Clusters[i].Leaving; l != nil {
			out[g.binding.Status.Clusters[i].Name] = l
		}
	}
	return out
}

// departures are the clusters the binding lists that are no longer placed and that still hold a
// copy of ours, could not be read, or are not Ready. A cluster leaves as FailedOver when its
// member is not Ready at that moment (placement left it past its toleration), else as Moved;
// the reason and time stay what they were when it left. A member that left the fleet has
// nothing to keep.
func (r *Reconciler) departures(g *group, placed []string, leaveAs map[string]fleetv1alpha1.LeaveReason,
	rejected map[string]string) map[string]*departure {
	prev := previousLeaving(g)
	out := map[string]*departure{}
	for _, name := range g.holding() {
		m := g.members[name]
		if slices.Contains(placed, name) || m == nil || m.mc == nil {
			continue
		}
		if m.readErr == nil && m.copy != nil && propagation.OwnershipOf(r.opts.HubName, g.hub, m.copy) == propagation.Foreign {
			continue
		}
		// No copy is believed only from a Ready member: the cache of one that is not may be
		// new or stale, and forgetting a copy there would leave it to the orphan sweep.
		if m.readErr == nil && m.copy == nil && memberOf(m.mc).Ready {
			continue
		}
		dep := &departure{why: rejected[name]}
		if dep.why == "" {
			// It qualifies, but others were chosen: fewer clusters asked for, or a better fit.
			dep.why = "still qualifies, but not among the clusters chosen"
		}
		if p := prev[name]; p != nil {
			dep.leaving = *p
		} else {
			dep.fresh = true
			dep.leaving = fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveMoved, Since: metav1.NewTime(g.now.Truncate(time.Second))}
			if reason, ok := leaveAs[name]; ok {
				dep.leaving.Reason = reason
				dep.why = ""
			} else if !memberOf(m.mc).Ready {
				dep.leaving.Reason = fleetv1alpha1.LeaveFailedOver
			}
		}
		out[name] = dep
	}
	return out
}

// leavingResult is, for the departures, what happens to their copies.
type leavingResult struct {
	// actions are the departures' actions, by cluster.
	actions map[string]propagation.Action
	// kept are the departures whose copy stays for now; retained those purgeMode Never keeps.
	kept, retained []string
}

// planLeaving decides, per departure, whether its copy goes now (propagation.ForLeaving):
// only once every placed cluster is done, and after a failover as the purge mode says.
func planLeaving(g *group, departures map[string]*departure, ro *rolloutDecision, placed []string, td *trafficDecision) leavingResult {
	out := leavingResult{actions: make(map[string]propagation.Action, len(departures))}
	notDone := ro.notDone()
	mode := purgeModeOf(g.policy.pp)
	for _, name := range slices.Sorted(maps.Keys(departures)) {
		m := g.members[name]
		a := propagation.ForLeaving(propagation.Leaving{
			Reason: departures[name].leaving.Reason, PurgeMode: mode,
			Reachable: m.readErr == nil, Ready: memberOf(m.mc).Ready,
			NotDone: notDone, Placed: len(placed),
			Draining: td.draining(g, name),
		})
		out.actions[name] = a
		if a.Kind != propagation.Remove {
			out.kept = append(out.kept, name)
		}
		if a.Reason == propagation.ReasonRetained {
			out.retained = append(out.retained, name)
		}
	}
	return out
}

// keepLeaving, for a decision that places nothing new (the RayService or its policy is
// invalid), keeps every cluster the binding lists as leaving, as it is: nothing is removed
// and nothing is forgotten, so neither this hub nor its orphan sweep loses track of a copy.
func keepLeaving(g *group, placed []string) (map[string]*departure, []string) {
	departures := map[string]*departure{}
	var kept []string
	for name, l := range previousLeaving(g) {
		if m := g.members[name]; m != nil && m.mc != nil && !slices.Contains(placed, name) {
			departures[name] = &departure{leaving: *l}
			kept = append(kept, name)
		}
	}
	slices.Sort(kept)
	return departures, kept
}

// notDone lists the placed clusters that are not done, each with why.
func (ro *rolloutDecision) notDone() []string {
	if ro == nil {
		return nil
	}
	var out []string
	for _, c := range ro.clusters {
		if !c.Done {
			out = append(out, fmt.Sprintf("%s: %s", c.Name, c.NotDone))
		}
	}
	return out
}

// failingOver names a cluster the RayService is failing over from right now: one the binding
// lists as FailedOver while a cluster it is placed on does not serve yet. "" when none.
func failingOver(g *group) string {
	prev := previousLeaving(g)
	for _, name := range slices.Sorted(maps.Keys(prev)) {
		if prev[name].Reason != fleetv1alpha1.LeaveFailedOver {
			continue
		}
		for _, placed := range g.placedBefore() {
			m := g.members[placed]
			if m == nil || m.readErr != nil || !servingState(m.copy).done {
				return name
			}
		}
	}
	return ""
}

// purgeModeOf is the policy's purge mode; Graceful when it sets none.
func purgeModeOf(pp *fleetv1alpha1.PlacementPolicy) fleetv1alpha1.PurgeMode {
	if pp == nil || pp.Spec.Failover == nil || pp.Spec.Failover.PurgeMode == "" {
		return fleetv1alpha1.PurgeGraceful
	}
	return pp.Spec.Failover.PurgeMode
}
