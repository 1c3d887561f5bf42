package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/hub/aggregate"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/raystatus"
)

// lastSeenRefresh is how stale a binding entry's lastSeenTime may get before it alone is worth
// a status write: refreshing it on every resync would write every binding every 10 s.
const lastSeenRefresh = time.Minute

// writeStatus computes the binding's and the hub RayService's status from what the reconcile
// read and writes each once, only when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	now := metav1.NewTime(r.clock.Now())
	clusters := clusterStatuses(s, now)
	hubStatus := aggregate.HubStatus(s.hub, s.placed, clusters, now)
	if s.invalid != nil {
		conditions.Set(&hubStatus.Conditions, metav1.Condition{
			Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: s.invalidReason(),
			Message: s.invalid.Error(), ObservedGeneration: s.hub.Generation, LastTransitionTime: now,
		})
		hubStatus.ServiceStatus = ""
	}
	noteShortfall(&hubStatus, s.placedCond)
	had := meta.FindStatusCondition(s.hub.Status.Conditions, fleetv1alpha1.ConditionMemberRefused) != nil
	if c, ok := refusedCondition(s, had); ok {
		c.LastTransitionTime = now
		conditions.Set(&hubStatus.Conditions, c)
	}

	next := s.binding.Status.DeepCopy()
	next.ObservedGeneration = s.binding.Generation
	next.Clusters = clusters
	next.Refusals = refusalList(s)
	for _, c := range bindingConditions(s) {
		c.ObservedGeneration = s.binding.Generation
		c.LastTransitionTime = now
		conditions.Set(&next.Conditions, c)
	}
	// Ready mirrors the hub RayService's, so that both say the same thing in the same words.
	conditions.Mirror(&next.Conditions, hubStatus.Conditions, string(rayv1.RayServiceReady), fleetv1alpha1.ConditionReady,
		s.binding.Generation, now)
	if bindingChanged(&s.binding.Status, next) {
		orig := s.binding.DeepCopy()
		s.binding.Status = *next
		if err := r.client.Status().Patch(ctx, s.binding, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("patch RayServiceBinding %s status: %w", s.key, err)
		}
	}
	if raystatus.RayServiceChanged(&s.hub.Status, &hubStatus) {
		orig := s.hub.DeepCopy()
		s.hub.Status = hubStatus
		if err := r.client.Status().Patch(ctx, s.hub, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("patch RayService %s status: %w", s.key, err)
		}
		r.metrics.statusWritten(s.key, s.copies, now.Time)
	}
	r.metrics.placed(s.key, len(s.placed))
	return nil
}

// clusterStatuses is the binding's per-cluster list: the placed clusters and those still
// holding a copy. A cluster not read this time (unreachable) keeps its last entry, so its
// last known state and lastSeenTime stay visible; a foreign copy describes nothing of ours.
func clusterStatuses(s *scope, now metav1.Time) []fleetv1alpha1.ClusterStatus {
	previous := map[string]*fleetv1alpha1.ClusterStatus{}
	for i := range s.binding.Status.Clusters {
		previous[s.binding.Status.Clusters[i].Name] = &s.binding.Status.Clusters[i]
	}
	names := slices.Concat(s.placed, s.kept)
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]fleetv1alpha1.ClusterStatus, 0, len(names))
	for _, name := range names {
		member, read := s.copies[name]
		switch {
		case read:
			out = append(out, aggregate.ClusterStatusOf(name, member, s.applied[name], now))
		case slices.Contains(s.foreign, name):
			out = append(out, fleetv1alpha1.ClusterStatus{Name: name})
		case previous[name] != nil:
			out = append(out, *previous[name].DeepCopy())
		default:
			out = append(out, fleetv1alpha1.ClusterStatus{Name: name})
		}
	}
	return out
}

// bindingConditions computes Placed and Propagated; writeStatus mirrors Ready.
func bindingConditions(s *scope) []metav1.Condition {
	placed := s.placedCond
	if s.invalid != nil {
		placed = metav1.Condition{Status: metav1.ConditionFalse, Reason: s.invalidReason(), Message: s.invalid.Error()}
	}
	placed.Type = fleetv1alpha1.ConditionPlaced
	if placed.Status == "" {
		// place did not run (it always does for a valid RayService); say so rather than lie.
		placed.Status, placed.Reason = metav1.ConditionUnknown, fleetv1alpha1.ReasonApplyPending
	}
	return []metav1.Condition{placed, propagatedCondition(s)}
}

// propagatedCondition is True when every placed cluster holds the copy the hub applies there.
func propagatedCondition(s *scope) metav1.Condition {
	c := metav1.Condition{Type: fleetv1alpha1.ConditionPropagated, Status: metav1.ConditionFalse}
	if s.invalid != nil {
		c.Reason, c.Message = s.invalidReason(), "nothing is applied until the Placed condition's problem is fixed; member copies are left as they were"
		return c
	}
	if len(s.foreign) > 0 {
		c.Reason = fleetv1alpha1.ReasonForeignRayService
		c.Message = fmt.Sprintf("a RayService %s not created by the hub exists on %s; it is left alone",
			s.key, strings.Join(s.foreign, ", "))
		return c
	}
	if len(s.placed) == 0 {
		// "Applied on 0/0 clusters" would read as success.
		c.Reason, c.Message = fleetv1alpha1.ReasonNotPlaced, "placed on no cluster; see the Placed condition"
		return c
	}
	var failed, refused, pending []string
	for _, name := range s.placed {
		if ref, ok := s.refusals[name]; ok {
			refused = append(refused, fmt.Sprintf("%s refused it: %s", name, refusalText(ref)))
			continue
		}
		if err := s.unreachable[name]; err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if err := s.applyErrs[name]; err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if member := s.copies[name]; member == nil || member.Annotations[labels.SpecHash] != s.applied[name] {
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
		c.Message = fmt.Sprintf("applied on %d/%d clusters", len(s.placed), len(s.placed))
	}
	return c
}

// bindingChanged reports whether the binding status must be written: it differs in anything
// but the entries' lastSeenTime, or some entry's lastSeenTime is older than lastSeenRefresh.
func bindingChanged(prev, next *fleetv1alpha1.RayServiceBindingStatus) bool {
	seen := map[string]*metav1.Time{}
	for i := range prev.Clusters {
		seen[prev.Clusters[i].Name] = prev.Clusters[i].LastSeenTime
	}
	for i := range next.Clusters {
		last, cur := seen[next.Clusters[i].Name], next.Clusters[i].LastSeenTime
		if cur != nil && (last == nil || cur.Sub(last.Time) >= lastSeenRefresh) {
			return true
		}
	}
	a, b := prev.DeepCopy(), next.DeepCopy()
	for _, st := range []*fleetv1alpha1.RayServiceBindingStatus{a, b} {
		for i := range st.Clusters {
			if st.Clusters[i].LastSeenTime != nil {
				st.Clusters[i].LastSeenTime = &metav1.Time{}
			}
		}
	}
	return !equality.Semantic.DeepEqual(a, b)
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
