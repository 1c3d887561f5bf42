// Package placement decides which member clusters run a RayService. It is a pure planner: it
// reads a snapshot of the members, the RayService's demand and its placement policy, and makes
// no API calls, so the hub can re-plan on every event and the rules are tested with plain
// tables. The hub maps the fleet API (MemberCluster, PlacementPolicy, RayServiceBinding) onto
// these input types; the planner knows nothing of them.
// Of the repository it imports only shared/demand: no client, nothing of spoke/ and none of
// the hub's reconcilers.
package placement

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Member is what the planner knows of a member cluster.
type Member struct {
	// Name is the member's name; names are unique within a fleet.
	Name string
	// Labels are the member's labels, matched by Policy.Selector and Policy.SpreadBy.
	Labels map[string]string
	// Taints keep RayServices off the member unless the policy tolerates them.
	Taints []corev1.Taint
	// Ready is whether the hub considers the member usable at all.
	Ready bool
	// NotReadyReason says why the member is not ready ("heartbeat 2m old"); shown in messages.
	NotReadyReason string
	// Free is the member's free capacity by resource name; a missing resource has none.
	Free corev1.ResourceList
}

// Policy is the part of a placement policy the planner applies.
type Policy struct {
	// Selector picks members by label; nil selects every member.
	Selector labels.Selector
	// Names restricts placement to these members; empty allows any.
	Names []string
	// Tolerations let the RayService onto members with matching taints.
	Tolerations []corev1.Toleration
	// Clusters is how many members to choose; values below 1 mean 1.
	Clusters int
	// SpreadBy is a label key whose values are topology domains (region, zone) to spread the
	// chosen members over; "" means no spreading.
	SpreadBy string
}

// BuiltInPolicy is the hub's policy for a RayService that names none and whose namespace has no
// default policy: one member, any member.
func BuiltInPolicy() Policy { return Policy{Clusters: 1} }

// Input is everything one planning decision depends on.
type Input struct {
	// Demand is what one copy of the RayService needs: the head and workers' requests, GPUs by
	// resource name (see DemandOf).
	Demand corev1.ResourceList
	// Policy says which members qualify and how many to choose.
	Policy Policy
	// Members is the fleet, in any order.
	Members []Member
	// Current names the members the RayService runs on now. A current member that still passes
	// every filter is kept ahead of any new one, so nothing moves without cause.
	Current []string
	// Held is, per current member, what the RayService's own copy already holds there. A
	// member's Free already excludes those Pods' requests, so without adding them back a copy
	// that fills its member would no longer "fit" on the next plan and would be moved. Entries
	// for members not in Current are ignored; nil holds nothing.
	Held map[string]corev1.ResourceList
	// Refused maps a member whose API server refused this RayService's copy to what refused
	// it ("hubPolicy/privileged: ..."). Such a member is filtered out, current or not: the hub
	// lists only members that hold no copy, so leaving one out deletes nothing.
	Refused map[string]string
}

// Decision is the planner's answer.
type Decision struct {
	// Clusters are the chosen members, sorted by name.
	Clusters []string
	// Placed is true when as many members were chosen as the policy asks for.
	Placed bool
	// Message explains the decision like the scheduler does:
	// "2/3 clusters chosen; m3: insufficient nvidia.com/gpu (need 8, free 2); m4: not ready".
	Message string
	// Rejected maps every member filtered out to the reason.
	Rejected map[string]string
}
