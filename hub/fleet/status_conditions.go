package fleet

// Phase: status. The conditions the status carries, each from the outcome.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/hub/rollout"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
)

// trafficCondition is the hub RayService's TrafficShifting condition: the BlueGreen rollout's,
// or the steady split; RouteNotApplied when the route cannot be written or read. nil when the
// policy manages no traffic and rolls out no BlueGreen.
func trafficCondition(o *outcome) *metav1.Condition {
	d := o.d
	var c *metav1.Condition
	if d.rollout != nil && d.rollout.plan.TrafficShifting != nil {
		c = d.rollout.plan.TrafficShifting.DeepCopy()
	}
	td := d.traffic
	if td == nil {
		return c
	}
	err := td.err
	if o.res != nil && o.res.trafficErr != nil {
		err = o.res.trafficErr
	}
	if err == nil {
		err = o.g.route.err
	}
	if err != nil {
		return routeErrorCondition(o.g.key, err)
	}
	var legacy *types.NamespacedName
	if o.res != nil {
		legacy = o.res.legacyRoute
	}
	switch {
	case o.g.route.state.Refused:
		return notAdmittedCondition(o.g.key, &td.spec, o.g.route.state, legacy)
	case c != nil:
		c.Message = withLegacy(keptText(withUnserved(c.Message, td.unserved), td.kept), legacy)
		return c
	}
	return &metav1.Condition{Type: fleetv1alpha1.ConditionTrafficShifting, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonTrafficSteady, Message: withLegacy(keptText(withUnserved(splitText(td.weights), td.unserved), td.kept), legacy)}
}

// notAdmittedCondition is TrafficShifting when the gateway refused the route of key (st.Refused):
// False with the gateway's own reason and words.
func notAdmittedCondition(key types.NamespacedName, spec *fleetv1alpha1.TrafficSpec, st traffic.State, legacy *types.NamespacedName) *metav1.Condition {
	return &metav1.Condition{Type: fleetv1alpha1.ConditionTrafficShifting, Status: metav1.ConditionFalse,
		Reason: st.Reason, Message: conditions.Truncate(withLegacy(fmt.Sprintf("the Gateway %s/%s does not admit the route %s: %s",
			spec.ParentRef.Namespace, spec.ParentRef.Name, key, st.Message), legacy))}
}

// routeErrorCondition is TrafficShifting when the route of key could not be built, written or
// read: Forbidden when the traffic cluster refused the hub the RayService's namespace.
func routeErrorCondition(key types.NamespacedName, err error) *metav1.Condition {
	c := &metav1.Condition{Type: fleetv1alpha1.ConditionTrafficShifting, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonRouteNotApplied, Message: err.Error()}
	if _, ok := errors.AsType[*notGrantedError](err); ok {
		c.Reason = fleetv1alpha1.ReasonNotGranted
	}
	if apierrors.IsForbidden(err) {
		c.Reason = fleetv1alpha1.ReasonTrafficForbidden
		c.Message = fmt.Sprintf("the hub holds no rights on routes in namespace %s of the traffic cluster; its admin grants them "+
			"(the hub chart's traffic.namespaces, rayfleet join --traffic-namespace, the spoke chart's hubTraffic.namespaces): %v",
			key.Namespace, err)
	}
	return c
}

// withLegacy appends to msg that the route an earlier hub wrote in the Gateway's namespace
// stays, while it does.
func withLegacy(msg string, legacy *types.NamespacedName) string {
	if legacy == nil {
		return msg
	}
	return msg + fmt.Sprintf("; the earlier route %s stays until the gateway accepts the route in the RayService's namespace", legacy)
}

// splitText is the weights as percentages: "eu 50%, us 50%".
func splitText(weights map[string]int32) string {
	parts := make([]string, 0, len(weights))
	for _, name := range slices.Sorted(maps.Keys(weights)) {
		parts = append(parts, fmt.Sprintf("%s %s%%", name, percentText(weights[name])))
	}
	if len(parts) == 0 {
		return "no cluster takes traffic"
	}
	return strings.Join(parts, ", ")
}

// percentText is a weight of rollout.TotalWeight as a percentage, "33.34".
func percentText(w int32) string {
	if w%100 == 0 {
		return fmt.Sprint(w / 100)
	}
	return fmt.Sprintf("%d.%02d", w/100, w%100)
}

// withUnserved appends why clusters cannot take traffic to msg.
func withUnserved(msg string, unserved map[string]string) string {
	for _, name := range slices.Sorted(maps.Keys(unserved)) {
		msg += fmt.Sprintf("; %s takes no traffic: %s", name, unserved[name])
	}
	return msg
}

// setTrafficStatus fills one cluster's colour, weight, serve address (from its copy, when it
// was read) and traffic-off time.
func setTrafficStatus(o *outcome, cs *fleetv1alpha1.ClusterStatus, member *rayv1.RayService, read bool) {
	d := o.d
	cs.Color = ""
	if d.rollout != nil && d.rollout.plan != nil {
		cs.Color = d.rollout.plan.Colors[cs.Name]
	}
	if read {
		cs.ServeAddress = ""
		if member != nil {
			cs.ServeAddress = member.Annotations[labels.ServeAddress]
		}
	}
	if d.traffic == nil {
		cs.Weight, cs.TrafficOffTime = nil, nil
		return
	}
	w := d.traffic.weights[cs.Name]
	cs.Weight = &w
	cs.TrafficOffTime = nil
	if off, ok := d.traffic.offTimes[cs.Name]; ok {
		cs.TrafficOffTime = &off
	}
}

// keptText appends to msg the clusters that keep their traffic only because their serve
// endpoints answer the hub's probe.
func keptText(msg string, kept map[string]string) string {
	for _, name := range slices.Sorted(maps.Keys(kept)) {
		msg += "; " + name + " keeps its traffic: " + kept[name] + " to the hub, its serve endpoint answers"
	}
	return msg
}

// rolloutConditions are the hub RayService's RolloutProgressing and RolloutPaused, stamped.
func rolloutConditions(hub *rayv1.RayService, plan *rollout.Decision, now metav1.Time) []metav1.Condition {
	out := []metav1.Condition{plan.Progressing, plan.Paused}
	for i := range out {
		out[i].ObservedGeneration = hub.Generation
		out[i].LastTransitionTime = now
	}
	return out
}

// bindingTime is a planner time as the binding keeps it (to the second; nil for none).
func bindingTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}

// leavingConditions are FailoverFrozen and CopiesRetained as the decision has them: each True
// while it holds, nil (removed) otherwise.
func leavingConditions(d *decision) map[string]*metav1.Condition {
	out := map[string]*metav1.Condition{fleetv1alpha1.ConditionFailoverFrozen: nil, fleetv1alpha1.ConditionCopiesRetained: nil}
	if d.frozen != "" {
		out[fleetv1alpha1.ConditionFailoverFrozen] = &metav1.Condition{Type: fleetv1alpha1.ConditionFailoverFrozen,
			Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonTooManyMembersNotReady, Message: d.frozen}
	}
	if len(d.retained) > 0 {
		out[fleetv1alpha1.ConditionCopiesRetained] = &metav1.Condition{Type: fleetv1alpha1.ConditionCopiesRetained,
			Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonPurgeModeNever,
			Message: fmt.Sprintf("purgeMode Never keeps the copies on %s, which the RayService failed over from; delete them there when they are no longer needed",
				strings.Join(d.retained, ", "))}
	}
	return out
}

// setLeavingConditions sets or removes FailoverFrozen and CopiesRetained in conds.
func setLeavingConditions(conds *[]metav1.Condition, d *decision, generation int64, now metav1.Time) {
	for typ, c := range leavingConditions(d) {
		if c == nil {
			meta.RemoveStatusCondition(conds, typ)
			continue
		}
		c.ObservedGeneration, c.LastTransitionTime = generation, now
		conditions.Set(conds, *c)
	}
}

// setGrantCondition sets or removes GrantMissing in conds.
func setGrantCondition(conds *[]metav1.Condition, d *decision, generation int64, now metav1.Time) {
	if d.grant == nil {
		meta.RemoveStatusCondition(conds, fleetv1alpha1.ConditionGrantMissing)
		return
	}
	c := *d.grant
	c.ObservedGeneration, c.LastTransitionTime = generation, now
	conditions.Set(conds, c)
}

// refusalList is the binding's status.refusals: this reconcile's refusals, sorted by cluster.
func refusalList(refusals map[string]fleetv1alpha1.ClusterRefusal) []fleetv1alpha1.ClusterRefusal {
	out := make([]fleetv1alpha1.ClusterRefusal, 0, len(refusals))
	for _, name := range slices.Sorted(maps.Keys(refusals)) {
		out = append(out, refusals[name])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// refusedCondition is the hub RayService's MemberRefused condition, or false when there is
// nothing to say: no refusal now and no condition to turn False (a RayService never refused
// carries no such condition).
func refusedCondition(hub *rayv1.RayService, refusals map[string]fleetv1alpha1.ClusterRefusal, had bool) (metav1.Condition, bool) {
	c := metav1.Condition{Type: fleetv1alpha1.ConditionMemberRefused, ObservedGeneration: hub.Generation}
	if len(refusals) == 0 {
		c.Status, c.Reason = metav1.ConditionFalse, fleetv1alpha1.ReasonNoMemberRefused
		c.Message = "no member refuses the current spec"
		return c, had
	}
	parts := make([]string, 0, len(refusals))
	for _, name := range slices.Sorted(maps.Keys(refusals)) {
		parts = append(parts, fmt.Sprintf("%s: %s", name, refusalText(refusals[name])))
	}
	c.Status, c.Reason = metav1.ConditionTrue, fleetv1alpha1.ReasonRefusedByMember
	c.Message = conditions.Join(fmt.Sprintf("refused by %d member(s)", len(parts)), parts...)
	return c, true
}

// podSecurityCondition is the hub RayService's PodSecurityEnforced condition: False while a
// member it is placed on holds its namespace unlabelled because Pods running there break the
// member's level (the MemberCluster's unenforcedNamespaces, see hub/membership), naming the
// members, Pods and checks; nil otherwise, and the condition is then removed.
func podSecurityCondition(hub *rayv1.RayService, placed []string, mcs map[string]*fleetv1alpha1.MemberCluster) *metav1.Condition {
	var parts []string
	for _, name := range slices.Sorted(slices.Values(placed)) {
		mc := mcs[name]
		if mc == nil {
			continue
		}
		for _, u := range mc.Status.UnenforcedNamespaces {
			if u.Name == hub.Namespace {
				parts = append(parts, fmt.Sprintf("cluster %s (level %s): %s", name, podSecurityLevel(mc), strings.Join(u.Violations, "; ")))
			}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return &metav1.Condition{
		Type: fleetv1alpha1.ConditionPodSecurityEnforced, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonPodsViolateLevel, ObservedGeneration: hub.Generation,
		Message: conditions.Truncate(fmt.Sprintf("namespace %s is not labelled %s, Pods running there break the member's level "+
			"(nothing was moved or deleted): %s", hub.Namespace, podsecurity.EnforceLabel, strings.Join(parts, "; "))),
	}
}
