package fleet

// Phase: plan. Blue/green: what its planner reads of the rollout in flight.

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

// blueGreenInput is the blue/green part of the rollout's input: the colours, whether traffic
// is managed and whether the gateway accepted the route the last decision asked for.
func blueGreenInput(g *group, f *facts, cols *placement.Colors, placed []string, clusters []rollout.Cluster) rollout.BlueGreenInput {
	in := rollout.BlueGreenInput{Traffic: f.traffic != nil}
	if cols != nil {
		in.Blue, in.Green, in.NoGreen = cols.Blue, cols.Green, cols.NoGreen
	}
	// The gateway accepted the last decision's share when the route it accepted carries the
	// weights that share gives the clusters as they are now.
	var previous int32
	if g.binding != nil && g.binding.Status.Rollout != nil && g.binding.Status.Rollout.BlueGreen != nil {
		previous = g.binding.Status.Rollout.BlueGreen.GreenPercent
	}
	in.Accepted = g.route.acceptedWeights(weights(f, clusters, placed, cols.ByName(), previous, dataplane.Unserved(f.backends(placed))))
	return in
}
