package fleet

// Phase: status. The binding's and the hub RayService's status, written once per reconcile.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/hub/aggregate"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/raystatus"
)

// outcome is one reconcile's group, decision and results: what the status is computed from.
// res is nil when the reconcile stopped before executing (an error reading or deciding); the
// status then says what was read.
type outcome struct {
	g   *group
	d   *decision
	res *results
}

// copies are the member copies as they stand: what the executor left, or what was read.
func (o *outcome) copies() map[string]*rayv1.RayService {
	if o.res != nil {
		return o.res.copies
	}
	out := map[string]*rayv1.RayService{}
	for name, m := range o.g.members {
		if m.readErr == nil {
			out[name] = m.copy
		}
	}
	return out
}

// refusals are the member refusals in force.
func (o *outcome) refusals() map[string]fleetv1alpha1.ClusterRefusal {
	if o.res != nil {
		return o.res.refusals
	}
	return o.g.refusals
}

// binding is the binding as it stands: as the executor wrote it, or as read; nil before the
// first reconcile created it.
func (o *outcome) binding() *fleetv1alpha1.RayServiceBinding {
	if o.res != nil && o.res.binding != nil {
		return o.res.binding
	}
	return o.g.binding
}

// kept are the clusters no longer placed whose copy is still there.
func (o *outcome) kept() []string {
	if o.res != nil {
		return o.res.kept
	}
	return o.d.kept
}

// writeStatus computes the binding's and the hub RayService's status from the outcome and
// writes each once, only when it changed. It runs on every path of a reconcile that read its
// group, errors included.
func (r *Reconciler) writeStatus(ctx context.Context, o *outcome) error {
	g, d := o.g, o.d
	now := metav1.NewTime(g.now)
	clusters := clusterStatuses(o, now)
	hubStatus := aggregate.HubStatus(g.hub, d.placed, clusters, now)
	if d.invalid != nil {
		conditions.Set(&hubStatus.Conditions, metav1.Condition{
			Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: d.invalidReason,
			Message: d.invalid.Error(), ObservedGeneration: g.hub.Generation, LastTransitionTime: now,
		})
		hubStatus.ServiceStatus = ""
	}
	noteShortfall(&hubStatus, d.placedCond)
	if d.rollout != nil {
		for _, c := range rolloutConditions(g.hub, d.rollout.plan, now) {
			conditions.Set(&hubStatus.Conditions, c)
		}
	}
	setLeavingConditions(&hubStatus.Conditions, d, g.hub.Generation, now)
	setGrantCondition(&hubStatus.Conditions, d, g.hub.Generation, now)
	if c := trafficCondition(o); c != nil {
		c.ObservedGeneration, c.LastTransitionTime = g.hub.Generation, now
		conditions.Set(&hubStatus.Conditions, *c)
	} else {
		meta.RemoveStatusCondition(&hubStatus.Conditions, fleetv1alpha1.ConditionTrafficShifting)
	}
	if c := podSecurityCondition(g.hub, d.placed, g.memberClusters); c != nil {
		c.LastTransitionTime = now
		conditions.Set(&hubStatus.Conditions, *c)
	} else {
		meta.RemoveStatusCondition(&hubStatus.Conditions, fleetv1alpha1.ConditionPodSecurityEnforced)
	}
	had := meta.FindStatusCondition(g.hub.Status.Conditions, fleetv1alpha1.ConditionMemberRefused) != nil
	if c, ok := refusedCondition(g.hub, o.refusals(), had); ok {
		c.LastTransitionTime = now
		conditions.Set(&hubStatus.Conditions, c)
	}

	// The two objects are written at once, each only when it changed: a member's change that
	// moves both costs one round trip, not two.
	var bindingErr, hubErr error
	var wg sync.WaitGroup
	if b := o.binding(); b != nil {
		if next := r.nextBindingStatus(o, clusters, hubStatus.Conditions, now); bindingChanged(&b.Status, next) {
			wg.Go(func() { bindingErr = r.patchBindingStatus(ctx, g.key, b, next) })
		}
	}
	if raystatus.RayServiceChanged(&g.hub.Status, &hubStatus) {
		wg.Go(func() {
			hub := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: g.key.Namespace, Name: g.key.Name}}
			if hubErr = patchStatus(ctx, r.client, hub, &g.hub.Status, &hubStatus); hubErr != nil {
				hubErr = fmt.Errorf("patch RayService %s status: %w", g.key, hubErr)
				return
			}
			r.metrics.statusWritten(g.key, o.copies(), now.Time)
		})
	}
	wg.Wait()
	errs := []error{bindingErr, hubErr}
	r.metrics.placed(g.key, len(d.placed))
	return errors.Join(errs...)
}

// nextBindingStatus is the binding's status computed from the outcome: the clusters, the
// refusals, the rollout, Placed and Propagated, and Ready mirrored from the hub RayService's.
func (r *Reconciler) nextBindingStatus(o *outcome, clusters []fleetv1alpha1.ClusterStatus, hubConditions []metav1.Condition,
	now metav1.Time,
) *fleetv1alpha1.RayServiceBindingStatus {
	d, b := o.d, o.binding()
	next := b.Status.DeepCopy()
	next.ObservedGeneration = b.Generation
	next.Clusters = clusters
	next.Refusals = refusalList(o.refusals())
	if d.rollout != nil {
		next.Rollout = d.rollout.plan.Status.DeepCopy()
	}
	for _, c := range bindingConditions(o) {
		c.ObservedGeneration = b.Generation
		c.LastTransitionTime = now
		conditions.Set(&next.Conditions, c)
	}
	setLeavingConditions(&next.Conditions, d, b.Generation, now)
	setGrantCondition(&next.Conditions, d, b.Generation, now)
	// Ready mirrors the hub RayService's, so that both say the same thing in the same words.
	conditions.Mirror(&next.Conditions, hubConditions, string(rayv1.RayServiceReady), fleetv1alpha1.ConditionReady,
		b.Generation, now)
	return next
}

// patchBindingStatus writes next as the status of binding, by a patch from binding's status.
func (r *Reconciler) patchBindingStatus(ctx context.Context, key types.NamespacedName, binding *fleetv1alpha1.RayServiceBinding,
	next *fleetv1alpha1.RayServiceBindingStatus) error {
	b := &fleetv1alpha1.RayServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: binding.UID}}
	if err := patchStatus(ctx, r.client, b, &binding.Status, next); err != nil {
		return fmt.Errorf("patch RayServiceBinding %s status: %w", key, err)
	}
	// Remembered as the cache will show it: the answer no longer carries the stored status, and
	// the API server keeps times to the second.
	r.bindingStatuses.Remember(b, asStored(next))
	return nil
}

// clusterStatuses is the binding's per-cluster list: the placed clusters and those still
// holding a copy. A cluster not read this time (unreachable) keeps its last entry, so its
// last known state and lastSeenTime stay visible; a foreign copy describes nothing of ours.
func clusterStatuses(o *outcome, now metav1.Time) []fleetv1alpha1.ClusterStatus {
	previous := map[string]*fleetv1alpha1.ClusterStatus{}
	if b := o.binding(); b != nil {
		for i := range b.Status.Clusters {
			previous[b.Status.Clusters[i].Name] = &b.Status.Clusters[i]
		}
	}
	names := slices.Concat(o.d.placed, o.kept())
	slices.Sort(names)
	names = slices.Compact(names)
	copies := o.copies()
	out := make([]fleetv1alpha1.ClusterStatus, 0, len(names))
	for _, name := range names {
		out = append(out, clusterStatus(o, name, previous[name], copies, now))
		member, read := copies[name]
		setTrafficStatus(o, &out[len(out)-1], member, read)
		if dep, ok := o.d.leaving[name]; ok {
			out[len(out)-1].Leaving = dep.Leaving.DeepCopy()
		}
	}
	return out
}

// clusterStatus is one cluster's entry: as read, blank for a foreign copy, or the previous
// entry for a cluster not read this time.
func clusterStatus(o *outcome, name string, previous *fleetv1alpha1.ClusterStatus, copies map[string]*rayv1.RayService,
	now metav1.Time,
) fleetv1alpha1.ClusterStatus {
	member, read := copies[name]
	switch {
	case read && !slices.Contains(o.d.foreign, name):
		cs := aggregate.ClusterStatusOf(name, member, o.d.appliedHash(name), now)
		if member != nil {
			cs.Revision = member.Annotations[labels.Revision]
		}
		if o.d.rollout != nil {
			if p, ok := o.d.rollout.plan.Phases[name]; ok {
				cs.RolloutPhase, cs.PhaseTime, cs.UpdateTime = p.Phase, bindingTime(p.Since), bindingTime(p.Started)
			}
		}
		return cs
	case slices.Contains(o.d.foreign, name):
		return fleetv1alpha1.ClusterStatus{Name: name}
	case previous != nil:
		return *previous.DeepCopy()
	}
	return fleetv1alpha1.ClusterStatus{Name: name}
}

// bindingConditions computes Placed and Propagated; writeStatus mirrors Ready.
func bindingConditions(o *outcome) []metav1.Condition {
	placed := o.d.placedCond
	placed.Type = fleetv1alpha1.ConditionPlaced
	if placed.Status == "" {
		// place did not run (it always does for a valid RayService); say so rather than lie.
		placed.Status, placed.Reason = metav1.ConditionUnknown, fleetv1alpha1.ReasonApplyPending
	}
	return []metav1.Condition{placed, propagatedCondition(o)}
}

// propagatedCondition is True when every placed cluster holds the copy the hub applies there.
func propagatedCondition(o *outcome) metav1.Condition {
	g, d := o.g, o.d
	c := metav1.Condition{Type: fleetv1alpha1.ConditionPropagated, Status: metav1.ConditionFalse}
	if d.invalid != nil {
		c.Reason, c.Message = d.invalidReason, "nothing is applied until the Placed condition's problem is fixed; member copies are left as they were"
		return c
	}
	if len(d.foreign) > 0 {
		c.Reason = fleetv1alpha1.ReasonForeignRayService
		c.Message = fmt.Sprintf("a RayService %s not created by the hub exists on %s; it is left alone",
			g.key, strings.Join(d.foreign, ", "))
		return c
	}
	if len(d.placed) == 0 {
		// "Applied on 0/0 clusters" would read as success.
		c.Reason, c.Message = fleetv1alpha1.ReasonNotPlaced, "placed on no cluster; see the Placed condition"
		return c
	}
	refusals, copies := o.refusals(), o.copies()
	var failed, refused, pending []string
	for _, name := range d.placed {
		if ref, ok := refusals[name]; ok {
			refused = append(refused, fmt.Sprintf("%s refused it: %s", name, refusalText(ref)))
			continue
		}
		if m := g.members[name]; m == nil || m.readErr != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", name, unreachableErr(m)))
			continue
		}
		if err := o.applyErr(name); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if member := copies[name]; member == nil || member.Annotations[labels.SpecHash] != d.appliedHash(name) {
			pending = append(pending, name)
		}
	}
	switch {
	case len(failed) > 0:
		c.Reason, c.Message = fleetv1alpha1.ReasonApplyFailed, strings.Join(slices.Concat(failed, refused), "; ")
	case len(refused) > 0:
		c.Reason, c.Message = fleetv1alpha1.ReasonRefusedByMember, strings.Join(refused, "; ")
	case len(pending) > 0:
		c.Reason, c.Message = fleetv1alpha1.ReasonApplyPending, "not yet applied on "+strings.Join(pending, ", ")
	default:
		c.Status, c.Reason = metav1.ConditionTrue, fleetv1alpha1.ReasonApplied
		c.Message = fmt.Sprintf("applied on %d/%d clusters", len(d.placed), len(d.placed))
	}
	return c
}

// bindingChanged reports whether the binding status must be written: it differs in anything
// but the entries' lastSeenTime. A lastSeenTime alone is never worth a write (a quiet fleet
// would rewrite every binding every resync): it moves when something else does, and how stale
// a member's view is shows in its MemberCluster's heartbeat.
func bindingChanged(prev, next *fleetv1alpha1.RayServiceBindingStatus) bool {
	a, b := prev.DeepCopy(), next.DeepCopy()
	for _, st := range []*fleetv1alpha1.RayServiceBindingStatus{a, b} {
		for i := range st.Clusters {
			st.Clusters[i].LastSeenTime = nil
		}
	}
	return !equality.Semantic.DeepEqual(a, b)
}

// applyErr is why writing to cluster name failed this reconcile: the executor's error, or the
// decision's when no copy could be built.
func (o *outcome) applyErr(name string) error {
	if o.res != nil {
		if err := o.res.applyErrs[name]; err != nil {
			return err
		}
	}
	return o.d.actions[name].Err
}

// unreachableErr is why a member's copy was not read.
func unreachableErr(m *memberRecord) error {
	if m == nil {
		return errors.New("not read")
	}
	return m.readErr
}

// noteShortfall adds to a True Ready condition that fewer clusters run the RayService than its
// policy asks for. Ready stays True, as the placed copies serve; but a fleet asked to span two
// regions and running in one is degraded, and Ready's message is where `kubectl get` and
// alerts look.
func noteShortfall(st *rayv1.RayServiceStatuses, placed metav1.Condition) {
	ready := meta.FindStatusCondition(st.Conditions, string(rayv1.RayServiceReady))
	if ready == nil || ready.Status != metav1.ConditionTrue || placed.Reason != fleetv1alpha1.ReasonInsufficientClusters {
		return
	}
	ready.Message = conditions.Truncate(ready.Message + "; fewer clusters than the policy asks for: " + placed.Message)
}
