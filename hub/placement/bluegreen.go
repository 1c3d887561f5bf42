package placement

import (
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Why a colour's members are left out of the other colour's placement, in placement messages.
const (
	inGreen = "green in the blue/green rollout"
	inBlue  = "blue in the blue/green rollout"
	// isBlue is why blue's members are left out of a green set being chosen.
	isBlue = "blue: runs the revision green replaces"
)

// Colors are the clusters of each colour of a BlueGreen rollout.
type Colors struct {
	Blue, Green []string
	// NoGreen says why no green set could be chosen for a rollout that needed one.
	NoGreen string
}

// ByName are the clusters' colours by name; nil for no colours.
func (c *Colors) ByName() map[string]fleetv1alpha1.Color {
	if c == nil {
		return nil
	}
	out := map[string]fleetv1alpha1.Color{}
	for _, name := range c.Blue {
		out[name] = fleetv1alpha1.ColorBlue
	}
	for _, name := range c.Green {
		out[name] = fleetv1alpha1.ColorGreen
	}
	return out
}

// GreenKey is the key green's placements are reserved under, apart from blue's: both exist at
// once, and a plan of one colour must not drop the other's reservations.
func GreenKey(key types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "/green"}
}

// PlanBlueGreen plans each colour of a rollout in flight on its own, the other colour left
// out: a member of either that fails over is replaced within its colour, by the policy's rules
// (green by in.Green's demand when it has one).
// Green is planned on the reservations as blue's plan leaves them; the intents are blue's, then
// green's. The decision joins both colours' plans.
func PlanBlueGreen(s Snapshot, key types.NamespacedName, in Input, blue, green []string) (Decision, *Colors, []Intent) {
	blueIn := in
	blueIn.Green = nil
	blueIn.Current, blueIn.Refused = blue, withRefused(in.Refused, green, inGreen)
	bluePlan, blueIntent := PlanReserved(s, key, blueIn)
	greenIn := in.forGreen()
	greenIn.Current, greenIn.Refused = green, withRefused(in.Refused, bluePlan.Clusters, inBlue)
	greenPlan, greenIntent := PlanReserved(s.With(blueIntent), GreenKey(key), greenIn)

	both := bluePlan
	both.Clusters = slices.Sorted(slices.Values(slices.Concat(bluePlan.Clusters, greenPlan.Clusters)))
	both.Placed = bluePlan.Placed && greenPlan.Placed
	both.Message = "blue: " + bluePlan.Message + "; green: " + greenPlan.Message
	both.Rejected = maps.Clone(bluePlan.Rejected)
	for name, why := range greenPlan.Rejected {
		if _, ok := both.Rejected[name]; !ok || slices.Contains(bluePlan.Clusters, name) {
			both.Rejected[name] = why
		}
	}
	both.Wake = earliest(bluePlan.Wake, greenPlan.Wake)
	if both.Frozen == "" {
		both.Frozen = greenPlan.Frozen
	}
	return both, &Colors{Blue: bluePlan.Clusters, Green: greenPlan.Clusters}, []Intent{blueIntent, greenIntent}
}

// ChooseGreen plans a green set for a rollout that starts: as many members as the policy asks
// for, by its rules, none of them blue, on the reservations as the intents before (blue's
// plan) leave them; green is planned by in.Green's demand when it has one. When the policy cannot be met NoGreen says why each member is not
// eligible, and the intent drops every green reservation.
func ChooseGreen(s Snapshot, key types.NamespacedName, in Input, blue []string, before []Intent) (*Colors, Intent) {
	in = in.forGreen()
	in.Current, in.Refused = nil, withRefused(in.Refused, blue, isBlue)
	for _, intent := range before {
		s = s.With(intent)
	}
	plan, intent := PlanReserved(s, GreenKey(key), in)
	if !plan.Placed {
		return &Colors{Blue: blue, NoGreen: plan.Message}, Intent{Key: GreenKey(key)}
	}
	return &Colors{Blue: blue, Green: plan.Clusters}, intent
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
