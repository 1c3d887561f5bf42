package fleet

// Phase: plan. Blue/green: each colour placed on its own, a green set chosen.

import (
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Why a colour's members are left out of the other colour's placement, in placement messages.
const (
	inGreen = "green in the blue/green rollout"
	inBlue  = "blue in the blue/green rollout"
)

// colors are the clusters of each colour of a BlueGreen rollout.
type colors struct {
	blue, green []string
	// noGreen says why no green set could be chosen for a rollout that needed one.
	noGreen string
}

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

// greenKey is the key green's placements are reserved under, apart from blue's: both exist at
// once, and a plan of one colour must not drop the other's reservations.
func greenKey(key types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "/green"}
}

// placeBlueGreen plans each colour of a rollout in flight on its own, the other colour left
// out: a member of either that fails over is replaced within its colour, by the policy's rules.
// Green is planned on the reservations as blue's plan leaves them; the intents are blue's, then
// green's.
func placeBlueGreen(g *group, in placement.Input, bg *fleetv1alpha1.BlueGreenStatus) (placement.Decision, *colors, []placement.Intent) {
	blueIn := in
	blueIn.Current, blueIn.Refused = bg.Blue, withRefused(in.Refused, bg.Green, inGreen)
	blue, blueIntent := placement.PlanReserved(g.reserved, g.key, blueIn)
	greenIn := in
	greenIn.Current, greenIn.Refused = bg.Green, withRefused(in.Refused, blue.Clusters, inBlue)
	green, greenIntent := placement.PlanReserved(g.reserved.With(blueIntent), greenKey(g.key), greenIn)

	both := blue
	both.Clusters = slices.Sorted(slices.Values(slices.Concat(blue.Clusters, green.Clusters)))
	both.Placed = blue.Placed && green.Placed
	both.Message = "blue: " + blue.Message + "; green: " + green.Message
	both.Rejected = maps.Clone(blue.Rejected)
	for name, why := range green.Rejected {
		if _, ok := both.Rejected[name]; !ok || slices.Contains(blue.Clusters, name) {
			both.Rejected[name] = why
		}
	}
	both.Wake = earliest(blue.Wake, green.Wake)
	if both.Frozen == "" {
		both.Frozen = green.Frozen
	}
	return both, &colors{blue: blue.Clusters, green: green.Clusters}, []placement.Intent{blueIntent, greenIntent}
}

// chooseGreen plans a green set for a rollout that starts: as many members as the policy asks
// for, by its rules, none of them blue, on the reservations as blue's plan (before, the intents
// placement returned) leaves them. When the policy cannot be met the message says why each
// member is not eligible, and the intent drops every green reservation.
func chooseGreen(g *group, in placement.Input, blue []string, before []placement.Intent) (*colors, placement.Intent) {
	in.Current, in.Refused = nil, withRefused(in.Refused, blue, "blue: runs the revision green replaces")
	view := g.reserved
	for _, intent := range before {
		view = view.With(intent)
	}
	plan, intent := placement.PlanReserved(view, greenKey(g.key), in)
	if !plan.Placed {
		return &colors{blue: blue, noGreen: plan.Message}, placement.Intent{Key: greenKey(g.key)}
	}
	return &colors{blue: blue, green: plan.Clusters}, intent
}

// withRefused is refused plus every one of names, with why.
func withRefused(refused map[string]string, names []string, why string) map[string]string {
	out := maps.Clone(refused)
	if out == nil {
		out = map[string]string{}
	}
	for _, name := range names {
		if _, ok := out[name]; !ok {
			out[name] = why
		}
	}
	return out
}

// earliest is the earlier of two times, zero counting as none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// blueGreenInput is the blue/green part of the rollout's input: the colours, whether traffic
// is managed and whether the gateway accepted the route the last decision asked for.
func (r *Reconciler) blueGreenInput(g *group, cols *colors, placed []string, clusters []rollout.Cluster) rollout.BlueGreenInput {
	in := rollout.BlueGreenInput{Traffic: g.policy.pp != nil && g.policy.pp.Spec.Traffic != nil}
	if cols != nil {
		in.Blue, in.Green, in.NoGreen = cols.blue, cols.green, cols.noGreen
	}
	// The gateway accepted the last decision's share when the route it accepted carries the
	// weights that share gives the clusters as they are now.
	var previous int32
	if g.binding != nil && g.binding.Status.Rollout != nil && g.binding.Status.Rollout.BlueGreen != nil {
		previous = g.binding.Status.Rollout.BlueGreen.GreenPercent
	}
	in.Accepted = g.route.acceptedWeights(weights(g, clusters, placed, cols.byName(), previous, dataplane.Unserved(r.backendsOf(g, placed))))
	return in
}

// byName are the clusters' colours by name; nil for no colours.
func (c *colors) byName() map[string]fleetv1alpha1.Color {
	if c == nil {
		return nil
	}
	out := map[string]fleetv1alpha1.Color{}
	for _, name := range c.blue {
		out[name] = fleetv1alpha1.ColorBlue
	}
	for _, name := range c.green {
		out[name] = fleetv1alpha1.ColorGreen
	}
	return out
}
