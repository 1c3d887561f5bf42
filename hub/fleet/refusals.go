package fleet

import (
	"fmt"
	"maps"
	"slices"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// refusalsOf returns the binding's refusals that still hold: for the spec hash the hub
// propagates now and not yet due for a retry. A new spec, or a retry time reached, drops the
// refusal, so the member is tried again.
func refusalsOf(b *fleetv1alpha1.RayServiceBinding, hash string, now time.Time) map[string]fleetv1alpha1.ClusterRefusal {
	out := map[string]fleetv1alpha1.ClusterRefusal{}
	if b == nil {
		return out
	}
	for _, r := range b.Status.Refusals {
		if r.SpecHash == hash && now.Before(r.RetryTime.Time) {
			out[r.Cluster] = r
		}
	}
	return out
}

// refusedForPlanning maps the refused members that hold no copy of the RayService to what
// refused it, for the planner to leave them out. A member that refused an update but still
// runs an earlier copy stays placed: leaving it out would delete a serving copy because of a
// refused change.
func refusedForPlanning(g *group) map[string]string {
	if len(g.refusals) == 0 {
		return nil
	}
	out := map[string]string{}
	for name, r := range g.refusals {
		if m := g.members[name]; m == nil || m.readErr != nil || m.copy == nil {
			out[name] = refusalText(r)
		}
	}
	return out
}

// recordRefusal notes a member's refusal of the copy and, when it is new (another rule, or a
// spec not refused before), says so with a Warning event related to the member.
func (r *Reconciler) recordRefusal(g *group, res *results, name string, ref *propagation.Refusal) {
	prev, had := res.refusals[name]
	rec := fleetv1alpha1.ClusterRefusal{
		Cluster: name, SpecHash: g.hash, Rule: ref.Rule, Message: ref.Message,
		RetryTime: metav1.NewTime(g.now.Add(ref.Retry).Truncate(time.Second)),
	}
	res.refusals[name] = rec
	if had && prev.Rule == rec.Rule && prev.SpecHash == rec.SpecHash {
		return
	}
	r.metrics.refused(name, ref.Rule)
	r.recorder.Eventf(g.hub, memberRef(name), corev1.EventTypeWarning, fleetv1alpha1.ReasonRefusedByMember, "Propagate",
		"cluster %s refused RayService %s: %s; nothing was created there, and the hub places it elsewhere until %s",
		name, g.key, refusalText(rec), rec.RetryTime.UTC().Format(time.RFC3339))
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

// refusalText is how a refusal reads in messages: the rule and the member's words.
func refusalText(r fleetv1alpha1.ClusterRefusal) string {
	if r.Message == "" {
		return r.Rule
	}
	return r.Rule + ": " + r.Message
}
