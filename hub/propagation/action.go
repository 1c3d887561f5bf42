package propagation

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
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
	ReasonSpecUnread  = "the copy's spec could not be read from the member; it is compared next time"
	ReasonNotPlaced   = "no longer placed there"
	ReasonNotRemoved  = "no longer placed there, but the member is not Ready or not reachable: the copy stays until it is"
	// ReasonNoReplacement and the constants after it are ForLeaving's.
	ReasonNoReplacement      = "no longer placed there, and placed nowhere else: the copy stays, serving, until a cluster replaces it"
	ReasonReplacementNotDone = "no longer placed there; the copy stays until the clusters replacing it are done"
	ReasonRetained           = "failed over from; purgeMode Never keeps the copy"
	ReasonDraining           = "no longer placed there; the copy stays until the gateway has routed no traffic to it for a drain delay"
	ReasonPurged             = "failed over from, and the replacement is done"
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
	// Covered is set when Copy was read without its spec: the SpecHash of the desired spec the
	// copy was last seen to contain at its generation (see Covered), which the drift check
	// compares with DesiredDigest instead of comparing specs.
	Covered, DesiredDigest string
	// SpecUnread is why Copy, read without its spec, could not be read whole; nil when it was
	// (or did not need to be).
	SpecUnread error
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
	case p.SpecUnread != nil:
		return Action{Reason: ReasonSpecUnread}
	case p.drifted():
		return Action{Kind: Apply, Desired: p.Desired, Reason: ReasonDrifted}
	}
	return Action{Desired: p.Desired, Reason: ReasonInSync}
}

// drifted is Drifted, or DriftedCovered for a copy read without its spec.
func (p Placed) drifted() bool {
	if p.Covered != "" {
		return DriftedCovered(p.Desired, p.Copy, p.DesiredDigest, p.Covered)
	}
	return Drifted(p.Desired, p.Copy)
}

// Leaving is what the decision for one cluster the RayService left depends on: a cluster that
// still holds its copy but is no longer placed.
type Leaving struct {
	// Reason is why the RayService left: Moved, or FailedOver (its member stayed not Ready).
	Reason fleetv1alpha1.LeaveReason
	// PurgeMode is the policy's failover.purgeMode; "" reads as Graceful.
	PurgeMode fleetv1alpha1.PurgeMode
	// Reachable is whether the member's copy was read; Ready whether its MemberCluster is Ready.
	Reachable, Ready bool
	// NotDone lists the placed clusters that are not done yet, each with why; empty when all
	// are. With no placed cluster at all nothing replaces the copy, and it is not done either.
	NotDone []string
	// Placed is how many clusters the RayService is placed on now.
	Placed int
	// Draining is set while the copy may still get traffic: the policy manages traffic and
	// the gateway has not accepted a route without the cluster a drain delay ago.
	Draining bool
}

// ForLeaving decides what happens to the copy on a cluster the RayService left. Moves are
// make-before-break: the copy stays until every placed cluster is done, so the fleet never
// serves from fewer copies than before the move. Then a moved copy goes once its member is
// Ready and reachable (never on an error); a copy failed over from goes as the purge mode
// says: Graceful as a moved one, Immediately as soon as the member can be reached at all
// (a member reachable but not Ready is still asked), Never not at all.
func ForLeaving(l Leaving) Action {
	failedOver := l.Reason == fleetv1alpha1.LeaveFailedOver
	switch {
	case l.Placed == 0:
		return Action{Reason: ReasonNoReplacement}
	case len(l.NotDone) > 0:
		return Action{Reason: ReasonReplacementNotDone}
	case l.Draining:
		return Action{Reason: ReasonDraining}
	case failedOver && l.PurgeMode == fleetv1alpha1.PurgeNever:
		return Action{Reason: ReasonRetained}
	case failedOver && l.PurgeMode == fleetv1alpha1.PurgeImmediately && l.Reachable:
		return Action{Kind: Remove, Reason: ReasonPurged}
	case !l.Reachable || !l.Ready:
		return Action{Reason: ReasonNotRemoved}
	case failedOver:
		return Action{Kind: Remove, Reason: ReasonPurged}
	}
	return Action{Kind: Remove, Reason: ReasonNotPlaced}
}

// String names an action for logs.
func (a Action) String() string {
	kind := map[Kind]string{Keep: "keep", Apply: "apply", Remove: "remove"}[a.Kind]
	if a.Err != nil {
		return fmt.Sprintf("%s (%s: %v)", kind, a.Reason, a.Err)
	}
	return fmt.Sprintf("%s (%s)", kind, a.Reason)
}
