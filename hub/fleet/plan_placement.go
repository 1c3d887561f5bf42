package fleet

// Phase: plan. Placement: the policy, the members as the planner sees them, the clusters chosen.

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/policy"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
)

// membersOf maps the MemberClusters to the planner's members, sorted by name, through views
// (nil: built afresh).
func membersOf(mcs map[string]*fleetv1alpha1.MemberCluster, views *memberViews) []placement.Member {
	out := make([]placement.Member, 0, len(mcs))
	for _, name := range slices.Sorted(maps.Keys(mcs)) {
		out = append(out, views.of(mcs[name]))
	}
	return out
}

// memberViews keeps each MemberCluster's planner view by UID and resourceVersion. Every
// reconcile plans against every member, and building the views afresh (labels, taints and
// capacity copied) was a tenth of a reconcile that only mirrors a status at 100 members. The
// views are shared between reconciles: read only (the planner copies what it changes).
type memberViews struct {
	mu     sync.Mutex
	byName map[string]memberView
}

type memberView struct {
	uid             types.UID
	resourceVersion string
	member          placement.Member
}

// of is mc's view, built when mc changed since it was last asked for.
func (v *memberViews) of(mc *fleetv1alpha1.MemberCluster) placement.Member {
	if v == nil || mc.ResourceVersion == "" {
		return memberOf(mc)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if got, ok := v.byName[mc.Name]; ok && got.uid == mc.UID && got.resourceVersion == mc.ResourceVersion {
		return got.member
	}
	if v.byName == nil {
		v.byName = map[string]memberView{}
	}
	m := memberOf(mc)
	v.byName[mc.Name] = memberView{uid: mc.UID, resourceVersion: mc.ResourceVersion, member: m}
	return m
}

// forget drops the view of a MemberCluster that is gone.
func (v *memberViews) forget(name string) {
	if v == nil {
		return
	}
	v.mu.Lock()
	delete(v.byName, name)
	v.mu.Unlock()
}

// memberOf is what the planner needs of a MemberCluster: its Ready condition (kept up by the
// membership code from Joined, Reachable and AgentReady) and since when it is not True, labels,
// taints, and free capacity (bounded by spec.capacityLimits) with the time of the report that measured it. A member being
// deleted is not ready and not tolerated (no NotReadySince): it is leaving the fleet.
func memberOf(mc *fleetv1alpha1.MemberCluster) placement.Member {
	m := placement.Member{
		Name:             mc.Name,
		Labels:           maps.Clone(mc.Labels),
		Taints:           slices.Clone(mc.Spec.Taints),
		PodSecurityLevel: podSecurityLevel(mc),
	}
	if mc.Status.Capacity != nil {
		// The member reports its own capacity; the admin's limits bound what placement believes.
		m.Free = placement.BoundCapacity(mc.Status.Capacity.Free, mc.Spec.CapacityLimits)
	}
	// The hub's clock, as the reservations it is compared with: a member's clock may be off.
	if mc.Status.LastHeartbeatObservedTime != nil {
		m.ReportedAt = mc.Status.LastHeartbeatObservedTime.Time
	}
	ready := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionReady)
	switch {
	case !mc.DeletionTimestamp.IsZero():
		m.NotReadyReason = "being removed from the fleet"
	case ready == nil:
		m.NotReadyReason = "no Ready condition yet"
		m.NotReadySince = mc.CreationTimestamp.Time
	case ready.Status != metav1.ConditionTrue:
		m.NotReadyReason = "not ready"
		if ready.Message != "" {
			m.NotReadyReason = "not ready: " + ready.Message
		} else if ready.Reason != "" {
			m.NotReadyReason = "not ready: " + ready.Reason
		}
		m.NotReadySince = ready.LastTransitionTime.Time
	default:
		m.Ready = true
		// A Ready condition that turned True after the member first was Ready marks a return
		// from an outage.
		if first := mc.Status.FirstReadyTime; first != nil && ready.LastTransitionTime.After(first.Time) {
			m.ReadmittedAt = ready.LastTransitionTime.Time
		}
	}
	return m
}

// podSecurityLevel is the Pod Security level mc enforces on the namespaces the hub creates there:
// the one its spoke reports, else podsecurity.Default, the level of the guard a spoke without
// the report's field was installed with by default.
func podSecurityLevel(mc *fleetv1alpha1.MemberCluster) string {
	if mc == nil || mc.Status.PodSecurityLevel == "" {
		return podsecurity.Default
	}
	return mc.Status.PodSecurityLevel
}

// policyOf maps a PlacementPolicy to the planner's policy after policy.Check, the check behind
// the policy's Accepted condition, so that the hub places with no policy its author was told
// is not accepted; the error names the policy.
func policyOf(pp *fleetv1alpha1.PlacementPolicy) (placement.Policy, error) {
	if err := policy.Check(pp); err != nil {
		return placement.Policy{}, fmt.Errorf("PlacementPolicy %s/%s: %w", pp.Namespace, pp.Name, err)
	}
	p := placement.Policy{
		Names:       slices.Clone(pp.Spec.ClusterNames),
		Tolerations: slices.Clone(pp.Spec.Tolerations),
		Clusters:    int(fleetv1alpha1.DefaultClusters),
		SpreadBy:    pp.Spec.SpreadBy,
		Toleration:  placement.DefaultToleration,
		Readmit:     placement.DefaultReadmit,
	}
	if pp.Spec.Clusters != nil {
		p.Clusters = int(*pp.Spec.Clusters)
	}
	if pp.Spec.Failover != nil && pp.Spec.Failover.TolerationSeconds != nil {
		p.Toleration = time.Duration(max(*pp.Spec.Failover.TolerationSeconds, 0)) * time.Second
	}
	if pp.Spec.Failover != nil && pp.Spec.Failover.ReadmitSeconds != nil {
		p.Readmit = time.Duration(max(*pp.Spec.Failover.ReadmitSeconds, 0)) * time.Second
	}
	if pp.Spec.ClusterSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pp.Spec.ClusterSelector)
		if err != nil { // policy.Check parsed it already
			return placement.Policy{}, fmt.Errorf("PlacementPolicy %s/%s: %w", pp.Namespace, pp.Name, err)
		}
		p.Selector = sel
	}
	return p, nil
}

// refusalText is how a refusal reads in messages: the rule and the member's words.
func refusalText(r fleetv1alpha1.ClusterRefusal) string {
	if r.Message == "" {
		return r.Rule
	}
	return r.Rule + ": " + r.Message
}
