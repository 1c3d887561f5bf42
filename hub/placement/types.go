// Package placement decides which member clusters run a RayService. It is a pure planner: it
// reads a snapshot of the members, the RayService's demand, its placement policy and the time,
// and makes no API calls and reads no clock, so the hub can re-plan on every event and the
// rules are tested with plain tables. The hub maps the fleet API (MemberCluster,
// PlacementPolicy, RayServiceBinding) onto these input types; the planner knows nothing of them.
//
// The decision includes failover: a current member that is not Ready counts as ready for the
// policy's toleration (toleration.go), and the decision says when that ends; past it members
// fail over one at a time, and not at all while more than half of the selected members are
// down (the freeze). A member back from an outage gets no new work until it has been Ready for
// the policy's readmission delay (filter.go). Reservations
// (reservations.go) is the one piece of state: the copies placed recently, held in memory by
// the hub and subtracted from the members' free capacity until their reports include them. It
// is read as a Snapshot and written by recording a plan's Intent; PlanReserved stays pure.
// A BlueGreen rollout in flight plans each colour on its own (PlanBlueGreen), and one that
// starts chooses its green set (ChooseGreen) (bluegreen.go). Outcome maps a plan to its
// metric label and the binding's Placed condition (outcome.go).
//
// Of the repository it imports only shared/ (the demand of a RayService, the Pod Security
// levels, condition message limits, the policy annotation, the fleet API's default names,
// durations, colours and condition reasons): no client, nothing of spoke/ and none of the
// hub's reconcilers.
package placement

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
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
	// NotReadySince is when a member that is not Ready stopped being Ready (its creation when it
	// never was); zero when it is not to be tolerated at all (it is leaving the fleet). See
	// Policy.Toleration.
	NotReadySince time.Time
	// Free is the member's free capacity by resource name; a missing resource has none.
	Free corev1.ResourceList
	// ReadmittedAt is when a member back from an outage turned Ready again (zero when it has
	// not been out since it first turned Ready). Until Policy.Readmit has passed since then it
	// gets no new work: a flapping member must not pull RayServices onto itself.
	ReadmittedAt time.Time
	// PodSecurityLevel is the Pod Security level the member enforces on the namespaces the hub
	// creates there; "" does not filter.
	PodSecurityLevel string
	// ReportedAt is when the hub observed the member's last report, which measured Free, on
	// the hub's clock (reservations are on it too); zero when never. A reservation made before
	// it (see Reservations) may be missing from Free.
	ReportedAt time.Time
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
	// Toleration is how long a current member may be not Ready before the RayService leaves it;
	// until then it counts as ready, and the decision says so and when to plan again (Wake).
	Toleration time.Duration
	// Readmit is how long a member back from an outage must have been Ready (see
	// Member.ReadmittedAt) before it is chosen for the RayService when it does not hold it.
	Readmit time.Duration
}

// BuiltInPolicy is the hub's policy for a RayService that names none and whose namespace has no
// default policy: one member, any member, the default failover toleration.
func BuiltInPolicy() Policy {
	return Policy{Clusters: 1, Toleration: DefaultToleration, Readmit: DefaultReadmit}
}

// DefaultToleration is the toleration of a policy that sets none.
const DefaultToleration = time.Duration(fleetv1alpha1.DefaultFailoverTolerationSeconds) * time.Second

// DefaultReadmit is the readmission delay of a policy that sets none.
const DefaultReadmit = time.Duration(fleetv1alpha1.DefaultReadmitSeconds) * time.Second

// Input is everything one planning decision depends on.
type Input struct {
	// Demand is what one copy of the RayService needs: the head and workers' requests, GPUs by
	// resource name (see DemandOf).
	Demand corev1.ResourceList
	// DemandFor says what Demand is when it is not one whole copy, for the message of a member
	// short of it; "" for a whole copy.
	DemandFor string
	// Green is what a green copy needs now when that is not Demand: while capacity follows
	// the traffic of a blue/green, green starts at a fraction of its set and grows.
	// PlanBlueGreen and ChooseGreen plan green by it; nil plans green by Demand.
	Green *ColorDemand
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
	// PodSecurity is what the RayService's Pods need (podsecurity.NeedOf); a member enforcing a
	// stricter level gets no new copy. The zero value needs nothing.
	PodSecurity podsecurity.Need
	// Refused maps a member whose API server refused this RayService's copy to what refused
	// it ("hubPolicy/privileged: ..."). Such a member is filtered out, current or not: the hub
	// lists only members that hold no copy, so leaving one out deletes nothing.
	Refused map[string]string
	// Ungranted maps a member the RayService's namespace has no grant for to the message
	// saying so. It gets no new copy; a current member keeps it (placed before grants were
	// required, or before the grant was withdrawn), as with a NoSchedule taint.
	Ungranted map[string]string
	// Now is the time of the decision, against which tolerations end.
	Now time.Time
	// FailingOver names a member the RayService is failing over from right now (left for not
	// being Ready, its replacement not done yet); "" when none. While one failover is in
	// flight no other is started: the other members past their toleration keep the RayService.
	FailingOver string
	// Serving names the current members whose serve endpoint for this RayService answers the
	// hub's probe (hub/dataplane) now. Past its toleration such a member keeps the RayService:
	// it is the hub that lost sight of it, not the users (a partition), and failing over would
	// move working traffic. nil when the hub does not probe.
	Serving map[string]bool
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
	// Tolerated says, per current member counted as ready within its toleration, since when it
	// is not ready and until when it keeps the RayService; Message ends with these notes.
	Tolerated []string
	// Wake is the earliest end of a toleration, or of a readmission that keeps the decision
	// short of members; zero when none. The RayService must be planned again then, even if
	// nothing else happens.
	Wake time.Time
	// Frozen says why failover is frozen ("" when it is not): more than half of the members the
	// policy selects, and at least two, are not Ready. The current members past their
	// toleration then keep the RayService; a fleet-wide fault is ridden out in place rather
	// than answered with a stampede onto the few members left.
	Frozen string
}

// ColorDemand is what one copy of a colour of a blue/green needs, and what that is.
type ColorDemand struct {
	Demand corev1.ResourceList
	// For says what Demand is ("green's first step, 25% of its set").
	For string
}

// forGreen is in as green is planned by: by Green's demand, when it has one.
func (in Input) forGreen() Input {
	if in.Green != nil {
		in.Demand, in.DemandFor = in.Green.Demand, in.Green.For
	}
	in.Green = nil
	return in
}
