package fleet

// Phase: plan. decide: the decision, assembled once from the features' results in order.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/leaving"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/revision"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// decision is what one reconcile decided from its group, before anything is written. It is
// assembled once, in decide, from the features' results, and nothing assigns to it afterwards:
// the executor carries it out and the status is computed from it.
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
	wake time.Time
	// actions holds an entry for every placed cluster and every cluster holding a copy it is no
	// longer placed on.
	actions map[string]propagation.Action
	// foreign are placed clusters whose RayService of that name is not the hub's.
	foreign []string
	// kept are clusters no longer placed whose copy stays for now (the replacement not done,
	// unreachable, not Ready, retained).
	kept []string
	// leaving are the clusters no longer placed whose copy is still there, by name.
	leaving map[string]leaving.Entry
	// retained are the leaving clusters whose copy purgeMode Never keeps.
	retained []string
	// frozen says why failover is frozen; "" when it is not.
	frozen string
	// rollout is which revision each placed cluster gets; nil when invalid.
	rollout *rolloutDecision
	// colors are a BlueGreen rollout's colours; nil when none is in flight or starting.
	colors *placement.Colors
	// leaveAs are the clusters a BlueGreen rollout gave up in this decision, with the reason
	// they leave for.
	leaveAs map[string]fleetv1alpha1.LeaveReason
	// traffic is the route the decision wants; nil when the policy manages no traffic.
	traffic *trafficDecision
	// grant is the GrantMissing condition; nil when the namespace is granted all it uses.
	grant *metav1.Condition
	// reserve are the reservations the placement implies (blue's before green's), recorded by
	// the executor before it writes anything; none when invalid.
	reserve []placement.Intent
}

// decide computes the decision for a group, feature by feature, each once and in this order:
// validation, placement (the policy, failover, the colours of a blue/green in flight), the
// rollout (which revision each cluster gets, a green set chosen, the clusters it gives up),
// the copy per placed cluster, the route, the clusters left and whether their copies go, and
// the GrantMissing condition. Each step takes what the steps before it returned; none is
// handed the decision. It makes no API calls. What the steps need of the group beyond what it
// read is derived once first (factsOf), and handed to them as values.
func (r *Reconciler) decide(g *group) *decision {
	f := r.factsOf(g)
	if err := r.validate(g.hub); err != nil {
		return r.invalidDecision(g, f, placementResult{}, err, fleetv1alpha1.ReasonValidationFailed)
	}
	pl := r.planPlacement(g, f)
	if pl.invalid != nil {
		return r.invalidDecision(g, f, pl, pl.invalid, pl.invalidReason)
	}
	rs, err := r.planRollout(g, f, pl, g.policy.pp)
	if err != nil {
		reason := fleetv1alpha1.ReasonPolicyInvalid
		if _, ok := errors.AsType[*revision.TooLargeError](err); ok {
			reason = reasonRevisionTooLarge
			err = fmt.Errorf("RayService %s: %w", g.key, err)
		}
		return r.invalidDecision(g, f, pl, err, reason)
	}
	copies, foreign := r.planCopies(g, f, rs.rollout, rs.placed)
	td := r.planTraffic(g, f, rs.rollout, rs.placed)
	lv := leaving.Plan(leavingInput(g, f, r.opts.HubName, rs.placed, rs.leaveAs, pl.rejected, rs.rollout, td))
	actions := maps.Clone(copies)
	maps.Copy(actions, lv.Actions)
	return &decision{
		placed: rs.placed, placedCond: pl.placedCond, result: pl.result, wake: pl.wake, frozen: pl.frozen,
		actions: actions, foreign: foreign,
		kept: lv.Kept, leaving: lv.Entries, retained: lv.Retained,
		rollout: rs.rollout, colors: rs.colors, leaveAs: rs.leaveAs,
		traffic: td,
		grant:   grantCondition(g, pl, rs.placed, td),
		reserve: slices.Concat(pl.reserve, rs.reserve),
	}
}

// invalidDecision is the decision for a RayService (or policy) that cannot be placed: the
// placement stays as the binding has it, nothing is applied or removed, and every cluster the
// binding lists as leaving is kept. What placement said besides (its result, a toleration's
// end, a freeze, the colours) stays.
func (r *Reconciler) invalidDecision(g *group, f *facts, pl placementResult, err error, reason string) *decision {
	placed := g.placedBefore()
	lv := leaving.Keep(leavingInput(g, f, r.opts.HubName, placed, nil, nil, nil, nil))
	return &decision{
		invalid: err, invalidReason: reason,
		placed:     placed,
		placedCond: metav1.Condition{Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()},
		result:     pl.result, wake: pl.wake, frozen: pl.frozen, colors: pl.colors,
		actions: map[string]propagation.Action{},
		leaving: lv.Entries, kept: lv.Kept,
	}
}

// planCopies is the action on every placed cluster (decideCopy), and the placed clusters
// whose RayService of that name is not the hub's.
func (r *Reconciler) planCopies(g *group, f *facts, ro *rolloutDecision, placed []string) (map[string]propagation.Action, []string) {
	actions := make(map[string]propagation.Action, len(placed))
	var foreign []string
	for _, name := range placed {
		a, isForeign := r.decideCopy(g, f, ro, name)
		actions[name] = a
		if isForeign {
			foreign = append(foreign, name)
		}
	}
	return actions, foreign
}

// decideCopy is the action on one placed cluster: the copy of the revision the rollout gives
// it, applied when the member's copy differs (propagation.ForPlaced). A member that refused
// this spec is not asked again every resync: it would give the same answer. foreign is set
// when the member's RayService of that name is not the hub's.
func (r *Reconciler) decideCopy(g *group, f *facts, ro *rolloutDecision, name string) (a propagation.Action, foreign bool) {
	m := g.members[name]
	if m == nil || m.readErr != nil {
		return propagation.ForPlaced(propagation.Placed{Hub: g.hub, HubName: r.opts.HubName, Unreachable: unreachableErr(m)}), false
	}
	p := propagation.Placed{Hub: g.hub, HubName: r.opts.HubName, Copy: m.copy, SpecUnread: m.specErr}
	if why, no := f.ungranted[name]; no && !slices.Contains(g.placedBefore(), name) {
		// Placement never chooses such a member; this keeps any other path from writing there.
		p.DesiredErr = errors.New(why)
		return propagation.ForPlaced(p), false
	}
	if propagation.OwnershipOf(r.opts.HubName, g.hub, m.copy) == propagation.Foreign {
		return propagation.ForPlaced(p), true
	}
	rev := ro.target
	if planned, ok := ro.plan.Apply[name]; ok {
		rev = planned
	}
	p.Desired, p.DesiredErr = r.copyOf(g, f, ro, name, rev)
	if o, ok := ro.overlays[name]; ok && p.DesiredErr == nil {
		p.Desired, p.DesiredErr = o.resized(p.Desired)
	}
	if m.covered != "" && p.Desired != nil {
		// A spec that cannot be hashed leaves DesiredDigest empty: drift, and so re-applied.
		p.Covered = m.covered
		p.DesiredDigest, _ = propagation.SpecHash(&p.Desired.Spec)
	}
	_, p.Refused = g.refusals[name]
	return propagation.ForPlaced(p), false
}

// placementResult is what placement decided: the clusters, the Placed condition and the
// label of the decision, and what the later steps need of its input.
type placementResult struct {
	// invalid is why the policy cannot be used (invalidReason its condition reason).
	invalid       error
	invalidReason string
	result        string
	placedCond    metav1.Condition
	placed        []string
	wake          time.Time
	frozen        string
	overrides     []fleetv1alpha1.ClusterOverride
	// in is the planner's input, for a green set planned after it.
	in placement.Input
	// colors are the colours of a blue/green rollout in flight, each planned on its own.
	colors *placement.Colors
	// rejected says why each member not chosen was not.
	rejected map[string]string
	// reserve are the reservations the plan implies, one per colour planned.
	reserve []placement.Intent
}

// planPlacement resolves the policy and plans. A policy that is missing leaves the placement
// as it was: moving copies because of a typo in an annotation would be worse. A policy that
// fails its own check stops the RayService (invalid) once, before placement, rather than on
// every cluster its overrides select.
func (r *Reconciler) planPlacement(g *group, f *facts) placementResult {
	policy := placement.BuiltInPolicy()
	var overrides []fleetv1alpha1.ClusterOverride
	if !g.policy.builtIn {
		if g.policy.pp == nil {
			return placementResult{result: placement.ResultPolicyNotFound, placed: g.placedBefore(),
				placedCond: metav1.Condition{Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonPolicyNotFound,
					Message: fmt.Sprintf("PlacementPolicy %q not found in namespace %q; placement unchanged", g.policy.name, g.key.Namespace)}}
		}
		var err error
		if policy, err = policyOf(g.policy.pp); err != nil {
			return placementResult{invalid: err, invalidReason: fleetv1alpha1.ReasonPolicyInvalid, result: placement.ResultPolicyInvalid}
		}
		overrides = g.policy.pp.Spec.Overrides
	}

	in := placement.Input{
		Demand:  placement.DemandOf(g.hub),
		Policy:  policy,
		Members: f.planning,
		Current: g.placedBefore(),
		Held:    f.held,
		Refused: f.refused,
		// Members the namespace was not granted get no new copy.
		Ungranted: f.ungranted,
		Now:       g.now,
		// Judged once per reconcile, when the group was read.
		PodSecurity: g.podSecurity,
		// One failover at a time: a second one waits until the first one's replacement serves.
		FailingOver: f.failingOver,
		// A member the hub cannot see but whose users are served is not failed over.
		Serving: f.serving,
	}
	var plan placement.Decision
	var cols *placement.Colors
	var reserve []placement.Intent
	if bg := f.blueGreen; bg != nil {
		if bg.Capacity != nil {
			// Green is kept by what it runs now: it starts small and grows.
			in.Green = greenDemand(g.hub, bg.Capacity.Green, fmt.Sprintf("green at %d%% of its set", bg.Capacity.Green))
		}
		plan, cols, reserve = placement.PlanBlueGreen(g.reserved, g.key, in, bg.Blue, bg.Green)
	} else {
		var intent placement.Intent
		plan, intent = placement.PlanReserved(g.reserved, g.key, in)
		reserve = []placement.Intent{intent}
	}
	notGranted := ""
	if g.grants.None() {
		notGranted = g.grants.NoneMessage()
	}
	result, cond := placement.Outcome(plan, notGranted)
	return placementResult{result: result, placedCond: cond, placed: plan.Clusters, wake: plan.Wake, frozen: plan.Frozen,
		overrides: overrides, in: in, colors: cols, rejected: plan.Rejected, reserve: reserve}
}

// appliedHash is the spec hash the hub applies (or has applied) on a cluster this reconcile,
// "" when it does not know.
func (d *decision) appliedHash(name string) string {
	if a, ok := d.actions[name]; ok && a.Desired != nil && a.Err == nil {
		return a.Desired.Annotations[labels.SpecHash]
	}
	return ""
}
