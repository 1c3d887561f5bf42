package fleet

// Phase: status. The decision's events and metrics, each said once.

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rayfleet/rayfleet/hub/leaving"
	"github.com/rayfleet/rayfleet/hub/placement"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// announce records the decision's events and metrics: a new placement outcome, a new set of
// clusters, a refused spec. A resync that decides what was already decided says nothing.
func (r *Reconciler) announce(g *group, d *decision) {
	if d.invalidReason == fleetv1alpha1.ReasonValidationFailed {
		if placedChanged(g.binding, withType(d.placedCond)) {
			r.recorder.Eventf(g.hub, nil, corev1.EventTypeWarning, "ValidationFailed", "Validate", "%s", d.invalid.Error())
		}
		return
	}
	if d.result == "" {
		return
	}
	if placedChanged(g.binding, withType(d.placedCond)) {
		r.metrics.decision(d.result)
		if d.placedCond.Status != metav1.ConditionTrue && (d.result == placement.ResultPolicyNotFound || d.result == placement.ResultPolicyInvalid) {
			r.recorder.Eventf(g.hub, nil, corev1.EventTypeWarning, d.placedCond.Reason, "Place", "%s", d.placedCond.Message)
		}
	}
	r.announceLeaving(g, d)
	r.announceFreeze(g, d)
	r.announceGrants(g, d)
	if previous := g.placedBefore(); !slices.Equal(previous, d.placed) && len(d.placed) > 0 {
		r.recorder.Eventf(g.hub, nil, corev1.EventTypeNormal, "Placed", "Place", "placed on %s", strings.Join(d.placed, ", "))
	}
	if d.rollout != nil {
		for _, ev := range d.rollout.plan.Events {
			var related runtime.Object
			if ev.Cluster != "" {
				related = memberRef(ev.Cluster)
			}
			r.recorder.Eventf(g.hub, related, ev.Type, ev.Reason, "Rollout", "%s", ev.Message)
		}
		r.metrics.rollout(g.key, g.binding, d.rollout.plan)
	}
}

// withType is c as the binding's Placed condition.
func withType(c metav1.Condition) metav1.Condition {
	c.Type = fleetv1alpha1.ConditionPlaced
	return c
}

// placedChanged reports whether this reconcile's Placed condition differs from the one the
// binding records: a resync that decides what was already decided is not a new decision, so it
// neither counts in rayfleet_placement_decisions_total nor repeats a Warning event.
func placedChanged(binding *fleetv1alpha1.RayServiceBinding, placed metav1.Condition) bool {
	if binding == nil {
		return true
	}
	prev := meta.FindStatusCondition(binding.Status.Conditions, fleetv1alpha1.ConditionPlaced)
	return prev == nil || prev.Status != placed.Status || prev.Reason != placed.Reason || prev.Message != placed.Message
}

// announceLeaving records an event for every cluster the RayService left in this decision, and
// counts failovers.
func (r *Reconciler) announceLeaving(g *group, d *decision) {
	placed := strings.Join(d.placed, ", ")
	if placed == "" {
		placed = "no cluster"
	}
	for _, name := range slices.Sorted(maps.Keys(d.leaving)) {
		dep := d.leaving[name]
		if !dep.Fresh || d.leaveAs[name] != "" {
			// A BlueGreen rollout announced its own leaving clusters (BlueRetired, TrafficReverted).
			continue
		}
		why := ""
		if dep.Why != "" {
			why = " (" + dep.Why + ")"
		}
		if dep.Leaving.Reason == fleetv1alpha1.LeaveFailedOver {
			r.metrics.failover(name)
			r.recorder.Eventf(g.hub, memberRef(name), corev1.EventTypeWarning, "FailedOver", "Failover",
				"cluster %s stayed not Ready past its toleration%s: now placed on %s; its copy there is removed as purgeMode %s says once they are done",
				name, why, placed, leaving.PurgeModeOf(g.policy.pp))
			continue
		}
		r.recorder.Eventf(g.hub, memberRef(name), corev1.EventTypeNormal, "Moving", "Place",
			"leaving cluster %s%s for %s: its copy there is removed once they are done", name, why, placed)
	}
}

// announceFreeze records the freeze of failover, and its end, once each.
func (r *Reconciler) announceFreeze(g *group, d *decision) {
	was := g.binding != nil && meta.IsStatusConditionTrue(g.binding.Status.Conditions, fleetv1alpha1.ConditionFailoverFrozen)
	switch {
	case d.frozen != "" && !was:
		r.recorder.Eventf(g.hub, nil, corev1.EventTypeWarning, "FailoverFrozen", "Failover", "%s", d.frozen)
	case d.frozen == "" && was && d.invalid == nil:
		r.recorder.Eventf(g.hub, nil, corev1.EventTypeNormal, "FailoverUnfrozen", "Failover",
			"at most half of the members the policy selects are not Ready: failover works again")
	}
}

// announceGrants records a Warning event when what is missing from the namespace's grants
// changes: the hub's admin sees it with the RayService's events.
func (r *Reconciler) announceGrants(g *group, d *decision) {
	if d.grant == nil {
		return
	}
	var before *metav1.Condition
	if g.binding != nil {
		before = meta.FindStatusCondition(g.binding.Status.Conditions, fleetv1alpha1.ConditionGrantMissing)
	}
	if before != nil && before.Reason == d.grant.Reason && before.Message == d.grant.Message {
		return
	}
	r.recorder.Eventf(g.hub, nil, corev1.EventTypeWarning, d.grant.Reason, "Grant", "%s", d.grant.Message)
}
