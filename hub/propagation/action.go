package propagation

import (
	"fmt"
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
)

// Kind is what the hub's executor does on one cluster.
type Kind int

const (
	// Keep writes nothing: the cluster's copy (or its absence) stays as it is.
	Keep Kind = iota
	// Apply server-side applies Desired, creating the namespace first when there is no copy.
	Apply
	// Remove deletes the hub's copy, which is no longer placed there.
	Remove
)

// Reasons of an Action: why it was chosen, as the executor logs it.
const (
	// ReasonInSync and the constants after it are Action.Reason's values.
	ReasonInSync      = "the copy is what the hub applies"
	ReasonMissing     = "the member has no copy"
	ReasonDrifted     = "the copy differs from what the hub applies"
	ReasonUnreachable = "the member could not be read; its copy is left as it is"
	ReasonForeign     = "a RayService of that name the hub did not make; left alone"
	ReasonRefused     = "the member refused this spec; a copy it runs is left as it is"
	ReasonNoCopy      = "no copy could be built"
	ReasonNotPlaced   = "no longer placed there"
	ReasonNotRemoved  = "no longer placed there, but the member is not Ready or not reachable: the copy stays until it is"
)

// Action is the propagation decision for one cluster.
type Action struct {
	Kind Kind
	// Desired is the copy to apply (Apply), or the one the cluster runs already (Keep, in sync).
	Desired *rayv1.RayService
	// Reason says why, in words.
	Reason string
	// Err is why no copy could be built (an override that does not apply to the cluster).
	Err error
}

// Placed is what the decision for one placed cluster depends on.
type Placed struct {
	// Hub is the hub RayService and HubName the hub's name (see OwnershipOf).
	Hub     *rayv1.RayService
	HubName string
	// Copy is the member's RayService of that name, nil when it has none.
	Copy *rayv1.RayService
	// Unreachable is why the member's copy could not be read; nil when it was.
	Unreachable error
	// Desired is the copy the hub would apply there, DesiredErr why there is none.
	Desired    *rayv1.RayService
	DesiredErr error
	// Refused says the member refused this spec (its guard, a terminating namespace, ...).
	Refused bool
}

// ForPlaced decides what to do on a placed cluster: nothing on a member that cannot be read,
// to a copy someone else made, or where the member refused this spec; otherwise apply the
// desired copy when the member's differs.
func ForPlaced(p Placed) Action {
	switch {
	case p.Unreachable != nil:
		return Action{Reason: ReasonUnreachable}
	case OwnershipOf(p.HubName, p.Hub, p.Copy) == Foreign:
		return Action{Reason: ReasonForeign}
	case p.DesiredErr != nil:
		return Action{Reason: ReasonNoCopy, Err: p.DesiredErr}
	case p.Refused:
		return Action{Reason: ReasonRefused}
	case p.Copy == nil:
		return Action{Kind: Apply, Desired: p.Desired, Reason: ReasonMissing}
	case Drifted(p.Desired, p.Copy):
		return Action{Kind: Apply, Desired: p.Desired, Reason: ReasonDrifted}
	}
	return Action{Desired: p.Desired, Reason: ReasonInSync}
}

// ForHolding decides, for the clusters that hold a copy (holding) but are no longer placed,
// which copies go (Remove) and which stay for now (Keep, ReasonNotRemoved): a copy is removed
// only from a member that is reachable and Ready (removable), never on an error. Clusters
// still placed get no entry here.
func ForHolding(placed, holding []string, removable map[string]bool) map[string]Action {
	unremovable := map[string]bool{}
	for _, name := range holding {
		if !removable[name] {
			unremovable[name] = true
		}
	}
	out := map[string]Action{}
	for _, name := range ToRemove(placed, holding, unremovable) {
		out[name] = Action{Kind: Remove, Reason: ReasonNotPlaced}
	}
	for _, name := range holding {
		if unremovable[name] && name != "" && !slices.Contains(placed, name) {
			out[name] = Action{Reason: ReasonNotRemoved}
		}
	}
	return out
}

// String names an action for logs.
func (a Action) String() string {
	kind := map[Kind]string{Keep: "keep", Apply: "apply", Remove: "remove"}[a.Kind]
	if a.Err != nil {
		return fmt.Sprintf("%s (%s: %v)", kind, a.Reason, a.Err)
	}
	return fmt.Sprintf("%s (%s)", kind, a.Reason)
}
