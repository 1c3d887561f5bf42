package fleet

import (
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/revision"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// decision is what one reconcile decided from its group, before anything is written.
type decision struct {
	// invalid is why the RayService (or its policy) cannot be placed; nothing is applied or
	// removed then. invalidReason is its condition reason.
	invalid       error
	invalidReason string
	placed        []string
	// placedCond is the binding's Placed condition.
	placedCond metav1.Condition
	// result is the placement decision's label in rayfleet_placement_decisions_total.
	result string
	// wake is when a not-ready member's toleration ends; zero when none is tolerated.
	wake      time.Time
	overrides []fleetv1alpha1.ClusterOverride
	// actions holds an entry for every placed cluster and every cluster holding a copy it is no
	// longer placed on.
	actions map[string]propagation.Action
	// foreign are placed clusters whose RayService of that name is not the hub's.
	foreign []string
	// kept are clusters no longer placed whose copy stays for now (the replacement not done,
	// unreachable, not Ready, retained).
	kept []string
	// departures are the clusters no longer placed whose copy is still there, by name.
	departures map[string]*departure
	// retained are the departures whose copy purgeMode Never keeps.
	retained []string
	// frozen says why failover is frozen; "" when it is not.
	frozen string
	// rollout is which revision each placed cluster gets; nil when invalid.
	rollout *rolloutDecision
	// placeIn is the placement's input, for a green set planned after it.
	placeIn placement.Input
	// colors are a BlueGreen rollout's colours; nil when none is in flight or starting.
	colors *colors
	// leaveAs are the clusters a BlueGreen rollout gave up in this decision, with the reason
	// they leave for.
	leaveAs map[string]fleetv1alpha1.LeaveReason
	// traffic is the route the decision wants; nil when the policy manages no traffic.
	traffic *trafficDecision
	// grant is the GrantMissing condition; nil when the namespace is granted all it uses.
	grant *metav1.Condition
}

// decide computes the decision for a group: validation, the policy, placement, and per
// cluster what to apply or remove. It makes no API calls.
func (r *Reconciler) decide(g *group) *decision {
	d := &decision{placed: g.placedBefore(), actions: map[string]propagation.Action{}}
	if err := r.validate(g.hub); err != nil {
		d.invalid, d.invalidReason = err, fleetv1alpha1.ReasonValidationFailed
		d.placedCond = metav1.Condition{Status: metav1.ConditionFalse, Reason: d.invalidReason, Message: err.Error()}
		r.keepLeaving(g, d)
		return d
	}
	rejected := r.decidePlacement(g, d)
	if d.invalid != nil {
		r.keepLeaving(g, d)
		return d
	}
	if err := r.decideRollout(g, d, g.policy.pp); err != nil {
		d.invalid, d.invalidReason = err, fleetv1alpha1.ReasonPolicyInvalid
		if _, ok := errors.AsType[*revision.TooLargeError](err); ok {
			d.invalidReason = reasonRevisionTooLarge
			d.invalid = fmt.Errorf("RayService %s: %w", g.key, err)
		}
		d.placed = g.placedBefore()
		d.placedCond = metav1.Condition{Status: metav1.ConditionFalse, Reason: d.invalidReason, Message: d.invalid.Error()}
		r.keepLeaving(g, d)
		return d
	}
	for _, name := range d.placed {
		d.actions[name] = r.decideCopy(g, d, name)
	}
	d.traffic = r.decideTraffic(g, d)
	d.grant = grantCondition(g, d, rejected)
	d.departures = r.departures(g, d, rejected)
	r.decideLeaving(g, d)
	return d
}

// decideCopy is the action on one placed cluster: the copy of the revision the rollout gives
// it, applied when the member's copy differs (propagation.ForPlaced). A member that refused
// this spec is not asked again every resync: it would give the same answer.
func (r *Reconciler) decideCopy(g *group, d *decision, name string) propagation.Action {
	m := g.members[name]
	if m == nil || m.readErr != nil {
		return propagation.ForPlaced(propagation.Placed{Hub: g.hub, HubName: r.opts.HubName, Unreachable: unreachableErr(m)})
	}
	p := propagation.Placed{Hub: g.hub, HubName: r.opts.HubName, Copy: m.copy, SpecUnread: m.specErr}
	if why, no := d.placeIn.Ungranted[name]; no && !slices.Contains(g.placedBefore(), name) {
		// Placement never chooses such a member; this keeps any other path from writing there.
		p.DesiredErr = errors.New(why)
		return propagation.ForPlaced(p)
	}
	if propagation.OwnershipOf(r.opts.HubName, g.hub, m.copy) == propagation.Foreign {
		d.foreign = append(d.foreign, name)
		return propagation.ForPlaced(p)
	}
	rev := d.rollout.target
	if planned, ok := d.rollout.plan.Apply[name]; ok {
		rev = planned
	}
	p.Desired, p.DesiredErr = r.copyOf(g, d, name, rev)
	if m.covered != "" && p.Desired != nil {
		// A spec that cannot be hashed leaves DesiredDigest empty: drift, and so re-applied.
		p.Covered = m.covered
		p.DesiredDigest, _ = propagation.SpecHash(&p.Desired.Spec)
	}
	_, p.Refused = g.refusals[name]
	return propagation.ForPlaced(p)
}

// decidePlacement resolves the policy and plans. A policy that is missing leaves the placement
// as it was: moving copies because of a typo in an annotation would be worse. A policy that
// fails its own check stops the RayService (invalid) once, before placement, rather than on
// every cluster its overrides select.
func (r *Reconciler) decidePlacement(g *group, d *decision) (rejected map[string]string) {
	policy := placement.BuiltInPolicy()
	if !g.policy.builtIn {
		if g.policy.pp == nil {
			d.result = resultPolicyNotFound
			d.placedCond = metav1.Condition{Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonPolicyNotFound,
				Message: fmt.Sprintf("PlacementPolicy %q not found in namespace %q; placement unchanged", g.policy.name, g.key.Namespace)}
			return nil
		}
		var err error
		if policy, err = policyOf(g.policy.pp); err != nil {
			d.invalid, d.invalidReason, d.result = err, fleetv1alpha1.ReasonPolicyInvalid, resultPolicyInvalid
			d.placedCond = metav1.Condition{Status: metav1.ConditionFalse, Reason: d.invalidReason, Message: err.Error()}
			return nil
		}
		d.overrides = g.policy.pp.Spec.Overrides
	}

	d.placeIn = placement.Input{
		Demand:  placement.DemandOf(g.hub),
		Policy:  policy,
		Members: membersOf(g.memberClusters, r.memberViews),
		Current: g.placedBefore(),
		Held:    heldBy(g),
		Refused: refusedForPlanning(g),
		// Members the namespace was not granted get no new copy.
		Ungranted: ungranted(g),
		Now:       g.now,
		// Judged once per reconcile, when the group was read.
		PodSecurity: g.podSecurity,
		// One failover at a time: a second one waits until the first one's replacement serves.
		FailingOver: failingOver(g),
	}
	var plan placement.Decision
	if bg := blueGreenInFlight(g); bg != nil {
		plan, d.colors = r.placeBlueGreen(g, d.placeIn, bg)
	} else {
		plan = r.reserved.Plan(g.key, d.placeIn)
	}
	d.placed, d.wake, d.frozen = plan.Clusters, plan.Wake, plan.Frozen
	result, reason, status := resultPlaced, fleetv1alpha1.ReasonClustersChosen, metav1.ConditionTrue
	switch {
	case len(plan.Clusters) == 0:
		result, reason, status = resultNone, fleetv1alpha1.ReasonNoClusterFits, metav1.ConditionFalse
	case !plan.Placed:
		result, reason, status = resultPartial, fleetv1alpha1.ReasonInsufficientClusters, metav1.ConditionFalse
	}
	d.result = result
	d.placedCond = metav1.Condition{Status: status, Reason: reason, Message: plan.Message}
	if len(plan.Clusters) == 0 && g.grants.None() {
		d.placedCond.Reason, d.placedCond.Message = fleetv1alpha1.ReasonNotGranted, g.grants.NoneMessage()
	}
	return plan.Rejected
}

// appliedHash is the spec hash the hub applies (or has applied) on a cluster this reconcile,
// "" when it does not know.
func (d *decision) appliedHash(name string) string {
	if a, ok := d.actions[name]; ok && a.Desired != nil && a.Err == nil {
		return a.Desired.Annotations[labels.SpecHash]
	}
	return ""
}
