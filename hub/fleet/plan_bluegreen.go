package fleet

// Phase: plan. Blue/green: whether a rollout is in flight, and what its planner reads of it.

import (
	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// isBlueGreen reports whether the policy rolls out BlueGreen.
func isBlueGreen(pp *fleetv1alpha1.PlacementPolicy) bool {
	return pp != nil && pp.Spec.Rollout != nil && pp.Spec.Rollout.Type == fleetv1alpha1.RolloutBlueGreen
}

// blueGreenInFlight is the BlueGreen rollout the binding records, while the policy still rolls
// out BlueGreen; nil otherwise (a policy changed to another type mid-rollout places blue and
// green together as one set, and its own rollout takes over).
func blueGreenInFlight(g *group) *fleetv1alpha1.BlueGreenStatus {
	if !isBlueGreen(g.policy.pp) || g.binding == nil || g.binding.Status.Rollout == nil {
		return nil
	}
	return g.binding.Status.Rollout.BlueGreen
}

// blueGreenInput is the blue/green part of the rollout's input: the colours, whether traffic
// is managed and whether the gateway accepted the route the last decision asked for.
func (r *Reconciler) blueGreenInput(g *group, cols *placement.Colors, placed []string, clusters []rollout.Cluster) rollout.BlueGreenInput {
	in := rollout.BlueGreenInput{Traffic: g.policy.pp != nil && g.policy.pp.Spec.Traffic != nil}
	if cols != nil {
		in.Blue, in.Green, in.NoGreen = cols.Blue, cols.Green, cols.NoGreen
	}
	// The gateway accepted the last decision's share when the route it accepted carries the
	// weights that share gives the clusters as they are now.
	var previous int32
	if g.binding != nil && g.binding.Status.Rollout != nil && g.binding.Status.Rollout.BlueGreen != nil {
		previous = g.binding.Status.Rollout.BlueGreen.GreenPercent
	}
	in.Accepted = g.route.acceptedWeights(weights(g, clusters, placed, cols.ByName(), previous, dataplane.Unserved(r.backendsOf(g, placed))))
	return in
}
