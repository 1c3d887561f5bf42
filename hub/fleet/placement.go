package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/policy"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Results of a placement decision, the values of the result label of
// rayfleet_placement_decisions_total.
const (
	resultPlaced         = "placed"
	resultPartial        = "partial"
	resultNone           = "none"
	resultPolicyNotFound = "policy_not_found"
	resultPolicyInvalid  = "policy_invalid"
)

// scope is what one reconcile read and decided, passed from phase to phase.
type scope struct {
	hub            *rayv1.RayService
	key            types.NamespacedName
	binding        *fleetv1alpha1.RayServiceBinding
	memberClusters map[string]*fleetv1alpha1.MemberCluster
	policyName     string
	overrides      []fleetv1alpha1.ClusterOverride
	// previous are the binding's clusters before this reconcile's decision.
	previous []string
	// placed starts as the binding's clusters and becomes the decision's.
	placed []string
	// placedCond is the binding's Placed condition; Status "" until place sets it.
	placedCond metav1.Condition
	// invalid is why the hub RayService cannot be placed as it stands: its own validation
	// failed, or its PlacementPolicy's (a *policyError). Nothing is placed, applied or removed.
	invalid error
	// copies holds, per cluster read this reconcile, its copy (nil when it has none).
	copies map[string]*rayv1.RayService
	// applied is, per cluster, the spec hash the hub applies there.
	applied     map[string]string
	unreachable map[string]error
	applyErrs   map[string]error
	foreign     []string
	// kept are clusters no longer placed whose copy could not be removed yet.
	kept []string
	// wake is when a not-ready member's toleration ends; zero when none is tolerated.
	wake time.Time
	// hash is the hub spec's hash (before overrides), what a refusal is recorded against.
	hash string
	// refusals are the members refusing the copy of this spec: the binding's that still hold,
	// plus those met this reconcile.
	refusals map[string]fleetv1alpha1.ClusterRefusal
	// newRefusal is set when this reconcile met a refusal: the next one re-plans without it.
	newRefusal bool
}

func newScope(hub *rayv1.RayService) *scope {
	return &scope{
		hub:            hub,
		key:            types.NamespacedName{Namespace: hub.Namespace, Name: hub.Name},
		memberClusters: map[string]*fleetv1alpha1.MemberCluster{},
		copies:         map[string]*rayv1.RayService{},
		applied:        map[string]string{},
		unreachable:    map[string]error{},
		applyErrs:      map[string]error{},
		refusals:       map[string]fleetv1alpha1.ClusterRefusal{},
	}
}

// place resolves the policy and plans. A policy that is missing or unusable leaves the
// placement as it was: moving copies because of a typo in an annotation would be worse.
func (r *Reconciler) place(ctx context.Context, s *scope) error {
	var pps fleetv1alpha1.PlacementPolicyList
	if err := r.client.List(ctx, &pps, client.InNamespace(s.hub.Namespace)); err != nil {
		return fmt.Errorf("list PlacementPolicies in %s: %w", s.hub.Namespace, err)
	}
	names := make([]string, 0, len(pps.Items))
	for i := range pps.Items {
		names = append(names, pps.Items[i].Name)
	}
	name, builtIn := placement.PolicyName(s.hub.Annotations, names)
	s.policyName = name
	policy := placement.BuiltInPolicy()
	toleration := tolerationOf(nil)
	if !builtIn {
		i := slices.Index(names, name)
		if i < 0 {
			r.keepPlacement(s, resultPolicyNotFound, fleetv1alpha1.ReasonPolicyNotFound,
				fmt.Sprintf("PlacementPolicy %q not found in namespace %q; placement unchanged", name, s.hub.Namespace))
			return nil
		}
		var err error
		if policy, err = policyOf(&pps.Items[i]); err != nil {
			// Rejected here, once, rather than by every member's propagation later: an override
			// that breaks the schema would otherwise fail on each cluster it selects.
			s.invalid = err
			r.keepPlacement(s, resultPolicyInvalid, fleetv1alpha1.ReasonPolicyInvalid, err.Error())
			return nil
		}
		s.overrides = pps.Items[i].Spec.Overrides
		toleration = tolerationOf(&pps.Items[i])
	}

	previous := slices.Clone(s.placed)
	members := membersOf(s.memberClusters)
	tol := tolerateNotReady(members, s.memberClusters, previous, toleration, r.clock.Now())
	s.wake = tol.wake
	d := r.reserved.plan(s.key, placement.Input{
		Demand:  placement.DemandOf(s.hub),
		Policy:  policy,
		Members: members,
		Current: previous,
		Held:    heldBy(s),
		Refused: refusedForPlanning(s),
	}, reportTimes(s.memberClusters), r.clock.Now())
	s.placed = d.Clusters
	result, reason, status := resultPlaced, fleetv1alpha1.ReasonClustersChosen, metav1.ConditionTrue
	switch {
	case len(d.Clusters) == 0:
		result, reason, status = resultNone, fleetv1alpha1.ReasonNoClusterFits, metav1.ConditionFalse
	case !d.Placed:
		result, reason, status = resultPartial, fleetv1alpha1.ReasonInsufficientClusters, metav1.ConditionFalse
	}
	msg := d.Message
	if len(tol.notes) > 0 {
		msg += "; " + strings.Join(tol.notes, "; ")
	}
	s.placedCond = metav1.Condition{Type: fleetv1alpha1.ConditionPlaced, Status: status, Reason: reason, Message: msg}
	if placedChanged(s) {
		r.metrics.decision(result)
	}
	if !slices.Equal(previous, d.Clusters) && len(d.Clusters) > 0 {
		r.recorder.Eventf(s.hub, nil, corev1.EventTypeNormal, "Placed", "Place",
			"placed on %s", strings.Join(d.Clusters, ", "))
	}
	return nil
}

// keepPlacement records a decision that leaves the clusters as they were.
func (r *Reconciler) keepPlacement(s *scope, result, reason, msg string) {
	s.placedCond = metav1.Condition{Type: fleetv1alpha1.ConditionPlaced, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	if placedChanged(s) {
		r.metrics.decision(result)
		r.recorder.Eventf(s.hub, nil, corev1.EventTypeWarning, reason, "Place", "%s", msg)
	}
}

// placedChanged reports whether this reconcile's Placed condition differs from the one the
// binding records: a resync that decides what was already decided is not a new decision, so it
// neither counts in rayfleet_placement_decisions_total nor repeats a Warning event.
func placedChanged(s *scope) bool {
	if s.binding == nil {
		return true
	}
	prev := meta.FindStatusCondition(s.binding.Status.Conditions, fleetv1alpha1.ConditionPlaced)
	return prev == nil || prev.Status != s.placedCond.Status || prev.Reason != s.placedCond.Reason ||
		prev.Message != s.placedCond.Message
}

// heldBy is what the RayService's copies already hold on their current clusters: a copy whose
// member reported an active RayCluster runs there, and the member's free capacity no longer
// counts its Pods. Without this, a copy filling its member would be moved on the next plan.
func heldBy(s *scope) map[string]corev1.ResourceList {
	if s.binding == nil {
		return nil
	}
	demand := placement.DemandOf(s.hub)
	held := map[string]corev1.ResourceList{}
	for i := range s.binding.Status.Clusters {
		cs := &s.binding.Status.Clusters[i]
		if cs.ActiveRayCluster != "" || cs.PendingRayCluster != "" {
			held[cs.Name] = demand
		}
	}
	return held
}

// membersOf maps the MemberClusters to the planner's members, sorted by name.
func membersOf(mcs map[string]*fleetv1alpha1.MemberCluster) []placement.Member {
	out := make([]placement.Member, 0, len(mcs))
	for _, name := range slices.Sorted(maps.Keys(mcs)) {
		out = append(out, memberOf(mcs[name]))
	}
	return out
}

// reportTimes are the members' last mirrored heartbeats: the time their free capacity was
// measured.
func reportTimes(mcs map[string]*fleetv1alpha1.MemberCluster) map[string]time.Time {
	out := make(map[string]time.Time, len(mcs))
	for name, mc := range mcs {
		if mc.Status.LastHeartbeatTime != nil {
			out[name] = mc.Status.LastHeartbeatTime.Time
		}
	}
	return out
}

// memberOf is what the planner needs of a MemberCluster: its Ready condition (kept up by the
// membership code from Joined, Reachable and AgentReady), labels, taints and free capacity.
// A member being deleted is not ready: it is leaving the fleet.
func memberOf(mc *fleetv1alpha1.MemberCluster) placement.Member {
	m := placement.Member{
		Name:   mc.Name,
		Labels: maps.Clone(mc.Labels),
		Taints: slices.Clone(mc.Spec.Taints),
	}
	if mc.Status.Capacity != nil {
		m.Free = mc.Status.Capacity.Free.DeepCopy()
	}
	ready := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionReady)
	switch {
	case !mc.DeletionTimestamp.IsZero():
		m.NotReadyReason = "being removed from the fleet"
	case ready == nil:
		m.NotReadyReason = "no Ready condition yet"
	case ready.Status != metav1.ConditionTrue:
		m.NotReadyReason = "not ready"
		if ready.Message != "" {
			m.NotReadyReason = "not ready: " + ready.Message
		} else if ready.Reason != "" {
			m.NotReadyReason = "not ready: " + ready.Reason
		}
	default:
		m.Ready = true
	}
	return m
}

// policyError is a PlacementPolicy failing policy.Check, the check behind its Accepted
// condition.
type policyError struct{ err error }

// Error names the policy and its problem.
func (e *policyError) Error() string { return e.err.Error() }

// Unwrap returns the error naming the policy.
func (e *policyError) Unwrap() error { return e.err }

// invalidReason is the condition reason of s.invalid.
func (s *scope) invalidReason() string {
	if _, ok := errors.AsType[*policyError](s.invalid); ok {
		return fleetv1alpha1.ReasonPolicyInvalid
	}
	return fleetv1alpha1.ReasonValidationFailed
}

// policyOf maps a PlacementPolicy to the planner's policy after policy.Check, the check behind
// the policy's Accepted condition, so that the hub places with no policy its author was told
// is not accepted; the error is then a *policyError.
func policyOf(pp *fleetv1alpha1.PlacementPolicy) (placement.Policy, error) {
	if err := policy.Check(pp); err != nil {
		return placement.Policy{}, &policyError{fmt.Errorf("PlacementPolicy %s/%s: %w", pp.Namespace, pp.Name, err)}
	}
	p := placement.Policy{
		Names:       slices.Clone(pp.Spec.ClusterNames),
		Tolerations: slices.Clone(pp.Spec.Tolerations),
		Clusters:    int(fleetv1alpha1.DefaultClusters),
		SpreadBy:    pp.Spec.SpreadBy,
	}
	if pp.Spec.Clusters != nil {
		p.Clusters = int(*pp.Spec.Clusters)
	}
	if pp.Spec.ClusterSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pp.Spec.ClusterSelector)
		if err != nil { // policy.Check parsed it already
			return placement.Policy{}, &policyError{fmt.Errorf("PlacementPolicy %s/%s: %w", pp.Namespace, pp.Name, err)}
		}
		p.Selector = sel
	}
	return p, nil
}
