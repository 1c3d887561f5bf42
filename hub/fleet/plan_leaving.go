package fleet

// Phase: plan. Leaving: the facts of the clusters the binding lists, gathered for
// hub/leaving, which decides whether the leaving clusters' copies go now.

import (
	"fmt"
	"slices"

	"github.com/rayfleet/rayfleet/hub/leaving"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// leavingInput gathers from g what hub/leaving decides from, for a decision that places the
// RayService on placed. leaveAs, rejected, ro and td are nil for an invalid decision.
func leavingInput(g *group, f *facts, hubName string, placed []string, leaveAs map[string]fleetv1alpha1.LeaveReason,
	rejected map[string]string, ro *rolloutDecision, td *trafficDecision) leaving.Input {
	prev := f.previousLeaving
	names := g.holding()
	clusters := make([]leaving.Cluster, 0, len(names))
	for _, name := range names {
		m := g.members[name]
		gone := m == nil || m.mc == nil
		var unreadable, hasCopy, foreign, ready bool
		if !gone {
			unreadable, hasCopy, ready = m.readErr != nil, m.copy != nil, f.members[name].ready
			foreign = !unreadable && hasCopy && propagation.OwnershipOf(hubName, g.hub, m.copy) == propagation.Foreign
		}
		clusters = append(clusters, leaving.Cluster{
			Name: name, Placed: slices.Contains(placed, name), Gone: gone,
			Unreadable: unreadable, HasCopy: hasCopy, Foreign: foreign, Ready: ready,
			Previous: prev[name], Rejected: rejected[name], LeaveAs: leaveAs[name],
			Draining: td != nil && traffic.Draining(td.offTimes, name, g.now, drainDelay),
		})
	}
	return leaving.Input{Clusters: clusters, Now: g.now, PurgeMode: leaving.PurgeModeOf(g.policy.pp),
		NotDone: ro.notDone(), Placed: len(placed)}
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
