package membership

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/serveaddress"
)

// Hysteresis of Reachable: one slow or failed call must not flap a member (and with it every
// placement on it), so a True Reachable turns False only after this many consecutive failed
// probes or once failures have lasted this long, whichever comes first. It turns True at once.
const (
	unreachableAfterFailures = 3
	unreachableAfterDuration = 30 * time.Second
)

// JoinState is whether the hub engaged the member, with the reason and message for Joined.
type JoinState struct {
	// Joined is true when the Secret is valid and the provider engaged the member.
	Joined bool
	// Reason and Message explain Joined=False; they are ignored when Joined is true.
	Reason, Message string
	// Bootstrap is what the credential of the Secret's kubeconfig says of itself; nil when
	// the Secret gives no kubeconfig the hub accepts.
	Bootstrap *Bootstrap
}

// FailureStreak counts the consecutive failed probes of a member and when the first failed.
type FailureStreak struct {
	// Count is the number of consecutive failed probes; zero after a success.
	Count int
	// Since is when the first probe of the streak failed.
	Since time.Time
}

// Record returns the streak after a probe that ended with err at now.
func (s FailureStreak) Record(err error, now time.Time) FailureStreak {
	if err == nil {
		return FailureStreak{}
	}
	if s.Count == 0 {
		return FailureStreak{Count: 1, Since: now}
	}
	return FailureStreak{Count: s.Count + 1, Since: s.Since}
}

// exhausted reports whether the streak is long enough to turn Reachable False.
func (s FailureStreak) exhausted(now time.Time) bool {
	return s.Count >= unreachableAfterFailures || (s.Count > 0 && now.Sub(s.Since) >= unreachableAfterDuration)
}

// Observation is everything the reconciler saw of one member in one reconcile; Status turns it
// into the MemberCluster status without making any calls.
type Observation struct {
	// Generation of the MemberCluster, recorded as observedGeneration.
	Generation int64
	// Now is the reconciler's clock.
	Now time.Time
	// HeartbeatTimeout is how old the ClusterReport heartbeat may be for AgentReady.
	HeartbeatTimeout time.Duration
	// Join is the Joined input.
	Join JoinState
	// ProbeErr is the error of this reconcile's probe of the member, nil when it succeeded;
	// ignored when the member is not joined (no probe is made then).
	ProbeErr error
	// Streak is the failure streak including this reconcile's probe.
	Streak FailureStreak
	// Report is the member's ClusterReport read by the probe; nil when the probe failed or
	// the member has none.
	Report *fleetv1alpha1.ClusterReport
	// ReportMissing is true when the probe succeeded and the member has no ClusterReport.
	ReportMissing bool
	// ServeAddresses is the MemberCluster's spec.serveAddresses.
	ServeAddresses *fleetv1alpha1.ServeAddressRanges
	// CapacityLimits is the MemberCluster's spec.capacityLimits.
	CapacityLimits corev1.ResourceList
	// Namespaces is what became of the namespaces holding the hub's copies; nil when they
	// were not looked at (the member not reporting), which keeps what the status said.
	Namespaces *NamespaceEnforcement
	// Seen is the heartbeat this hub process last saw of the member and when; nil when it
	// has seen none since it started or began to lead.
	Seen *HeartbeatSeen
	// MintFailure is the member's refusal of the hub's last TokenRequest; nil when it granted
	// it or none was made. Ignored when the member is not joined.
	MintFailure *MintFailure
	// CredentialExpiryWarning is how long before the bootstrap token expires CredentialsValid
	// turns False.
	CredentialExpiryWarning time.Duration
}

// HeartbeatSeen is a heartbeat value the hub read and when it first read it, on its own clock:
// as Kubernetes' node lifecycle controller judges a Lease, the member's clock only tells one
// heartbeat from the next.
type HeartbeatSeen struct {
	Heartbeat time.Time
	At        time.Time
}

// heartbeatObserved is when the hub observed heartbeat: when it was seen before, then; else
// now, which after a restart gives the member a full timeout from the first observation.
// Second precision, as the status stores it, so that an unchanged heartbeat writes nothing.
func heartbeatObserved(seen *HeartbeatSeen, heartbeat *metav1.Time, now time.Time) *metav1.Time {
	if heartbeat == nil {
		return nil
	}
	at := metav1.NewTime(now).Rfc3339Copy()
	if seen != nil && seen.Heartbeat.Equal(heartbeat.Time) {
		at = metav1.NewTime(seen.At)
	}
	return &at
}

// Status returns prev updated with obs: the ClusterReport mirrored when one was read (the last
// mirror kept otherwise, so that its heartbeat keeps ageing), the four conditions and
// firstReadyTime. Transition times come from obs.Now, so that tests can drive them with a fake
// clock.
func Status(prev fleetv1alpha1.MemberClusterStatus, obs Observation) fleetv1alpha1.MemberClusterStatus {
	st := *prev.DeepCopy()
	st.ObservedGeneration = obs.Generation
	if obs.Join.Joined && obs.ProbeErr == nil && obs.Report != nil {
		mirror(&st, obs.Report)
	}
	st.LastHeartbeatObservedTime = heartbeatObserved(obs.Seen, st.LastHeartbeatTime, obs.Now)
	set := func(c metav1.Condition) {
		c.ObservedGeneration = obs.Generation
		c.LastTransitionTime = metav1.NewTime(obs.Now)
		conditions.Set(&st.Conditions, c)
	}
	set(joinedCondition(obs.Join))
	set(reachableCondition(meta.FindStatusCondition(prev.Conditions, fleetv1alpha1.ConditionReachable), obs))
	set(agentReadyCondition(meta.FindStatusCondition(prev.Conditions, fleetv1alpha1.ConditionAgentReady), st.LastHeartbeatObservedTime, obs))
	set(readyCondition(st.Conditions))
	set(serveAddressesCondition(obs.ServeAddresses))
	set(capacityCondition(st.Capacity, obs.CapacityLimits))
	failure := obs.MintFailure
	if !obs.Join.Joined {
		failure = nil
	}
	set(credentialsCondition(obs.Join.Bootstrap, failure, obs.CredentialExpiryWarning, obs.Now))
	st.Credentials = credentialsStatus(obs.Join.Bootstrap)
	setPodSecurity(&st, obs.Namespaces, obs)
	setFirstReadyTime(&st)
	return st
}

// serveAddressesCondition says whether the member's serve addresses are bounded: a member
// without ranges may have any address but the never-allowed ones put behind the Gateway.
func serveAddressesCondition(grant *fleetv1alpha1.ServeAddressRanges) metav1.Condition {
	c := metav1.Condition{Type: fleetv1alpha1.ConditionServeAddressesBounded, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReasonServeAddressesGranted, Message: "the hub routes only to serve addresses in spec.serveAddresses"}
	_, err := serveaddress.PolicyOf(grant, serveaddress.Cluster{})
	switch {
	case grant == nil:
		c.Status, c.Reason = metav1.ConditionFalse, fleetv1alpha1.ReasonNoServeAddressRanges
		c.Message = "spec.serveAddresses is not set: the hub routes to any serve address the member reports but loopback, " +
			"link-local, unspecified, names inside the traffic cluster and its own ranges; set the member's CIDRs or domains"
	case err != nil:
		c.Status, c.Reason = metav1.ConditionFalse, fleetv1alpha1.ReasonInvalidServeAddressRanges
		c.Message = "the hub routes to none of the member's serve addresses: " + err.Error()
	}
	return c
}

// capacityCondition says whether the capacity the member reports (its last mirror) is within
// the admin's limits. Placement bounds it either way; the condition tells the admin that the
// member claims more than it is believed, which an honest member does only after growing past
// its limits. Without limits it is True: most fleets trust their members' reports, and a
// warning on every member would drown the ones that matter.
func capacityCondition(capacity *fleetv1alpha1.ClusterCapacity, limits corev1.ResourceList) metav1.Condition {
	c := metav1.Condition{Type: fleetv1alpha1.ConditionCapacityBounded, Status: metav1.ConditionTrue}
	if len(limits) == 0 {
		c.Reason = fleetv1alpha1.ReasonNoCapacityLimits
		c.Message = "spec.capacityLimits is not set: placement takes the capacity the member reports as it is"
		return c
	}
	var over []string
	if capacity != nil {
		for _, name := range slices.Sorted(maps.Keys(limits)) {
			limit := limits[name]
			alloc, free := capacity.Allocatable[name], capacity.Free[name]
			if reported := maxQuantity(alloc, free); reported.Cmp(limit) > 0 {
				over = append(over, fmt.Sprintf("%s %s > %s", name, reported.String(), limit.String()))
			}
		}
	}
	if len(over) == 0 {
		c.Reason = fleetv1alpha1.ReasonCapacityLimited
		c.Message = "the capacity the member reports is within spec.capacityLimits"
		return c
	}
	c.Status, c.Reason = metav1.ConditionFalse, fleetv1alpha1.ReasonCapacityOverLimit
	c.Message = "the member reports more than spec.capacityLimits (" + strings.Join(over, ", ") +
		"); placement takes the limits"
	return c
}

// maxQuantity is the larger of a and b.
func maxQuantity(a, b resource.Quantity) resource.Quantity {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

// setFirstReadyTime records when the member was first Ready, once. The Ready condition's own
// transition time is used rather than now, so that a member already Ready when a hub without
// the field upgrades keeps the time it really turned Ready, not the upgrade's.
func setFirstReadyTime(st *fleetv1alpha1.MemberClusterStatus) {
	if st.FirstReadyTime != nil {
		return
	}
	ready := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		return
	}
	since := ready.LastTransitionTime
	st.FirstReadyTime = &since
}

// readmission reports whether next, the status computed from prev, is the member's return to
// Ready after an outage, and how long it was not Ready. The first Ready of a member is not a
// readmission: prev must already carry firstReadyTime. Both times are the Ready condition's
// transitions, so the result depends on the statuses alone.
func readmission(prev, next *fleetv1alpha1.MemberClusterStatus) (notReadyFor time.Duration, ok bool) {
	if prev.FirstReadyTime == nil {
		return 0, false
	}
	before := meta.FindStatusCondition(prev.Conditions, fleetv1alpha1.ConditionReady)
	after := meta.FindStatusCondition(next.Conditions, fleetv1alpha1.ConditionReady)
	if before == nil || before.Status == metav1.ConditionTrue || after == nil || after.Status != metav1.ConditionTrue {
		return 0, false
	}
	return max(after.LastTransitionTime.Sub(before.LastTransitionTime.Time), 0), true
}

// readmittedMessage is the note of the Readmitted event. The hub's placement, not this
// package, holds new work back; the note says for how long so that the event alone explains
// why a Ready member gets nothing yet.
func readmittedMessage(notReadyFor time.Duration) string {
	return fmt.Sprintf("Ready again after %s; RayServices may be placed here again once it has been "+
		"Ready for their policies' failover.readmitSeconds (default %ds)",
		notReadyFor.Round(time.Second), fleetv1alpha1.DefaultReadmitSeconds)
}

// mirror copies the member's report into the status.
func mirror(st *fleetv1alpha1.MemberClusterStatus, report *fleetv1alpha1.ClusterReport) {
	r := report.Status.DeepCopy()
	st.Capacity = &r.Capacity
	st.Nodes = &r.Nodes
	st.Workloads = &r.Workloads
	st.AgentVersion = r.AgentVersion
	st.KubernetesVersion = r.KubernetesVersion
	st.PodSecurityLevel = r.PodSecurityLevel
	if !r.HeartbeatTime.IsZero() {
		hb := r.HeartbeatTime
		st.LastHeartbeatTime = &hb
	}
}

func joinedCondition(j JoinState) metav1.Condition {
	if j.Joined {
		return metav1.Condition{Type: fleetv1alpha1.ConditionJoined, Status: metav1.ConditionTrue,
			Reason: fleetv1alpha1.ReasonEngaged, Message: "the hub engaged the member from its kubeconfig Secret"}
	}
	return metav1.Condition{Type: fleetv1alpha1.ConditionJoined, Status: metav1.ConditionFalse,
		Reason: j.Reason, Message: j.Message}
}

func reachableCondition(prev *metav1.Condition, obs Observation) metav1.Condition {
	c := metav1.Condition{Type: fleetv1alpha1.ConditionReachable}
	switch {
	case !obs.Join.Joined:
		c.Status, c.Reason = metav1.ConditionFalse, fleetv1alpha1.ReasonAPIServerUnreachable
		c.Message = "not probed: the member is not joined"
	case obs.ProbeErr == nil:
		c.Status, c.Reason = metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable
		c.Message = "the member's API server answers"
	case prev != nil && prev.Status == metav1.ConditionTrue && !obs.Streak.exhausted(obs.Now):
		// Within the hysteresis window the condition stays as it was, message included, so
		// that a single failure writes nothing.
		return *prev.DeepCopy()
	default:
		c.Status, c.Reason = metav1.ConditionFalse, fleetv1alpha1.ReasonAPIServerUnreachable
		c.Message = obs.ProbeErr.Error()
	}
	return c
}

// agentReadyCondition is True while the heartbeat is fresh, judged by when the hub observed it
// change (observed), unless the spoke itself says that another controller (KubeRay's operator,
// a second spoke) keeps it from reconciling: a member where the spoke touches nothing must not
// be given new RayServices. A probe that read no report keeps that verdict of the previous one
// while the heartbeat stays fresh.
func agentReadyCondition(prev *metav1.Condition, observed *metav1.Time, obs Observation) metav1.Condition {
	c := metav1.Condition{Type: fleetv1alpha1.ConditionAgentReady, Status: metav1.ConditionFalse}
	if observed == nil {
		if obs.Join.Joined && obs.ProbeErr == nil && obs.ReportMissing {
			c.Reason = fleetv1alpha1.ReasonClusterReportNotFound
			c.Message = fmt.Sprintf("the member has no ClusterReport %q: is the spoke agent installed?",
				fleetv1alpha1.ClusterReportName)
			return c
		}
		c.Reason, c.Message = fleetv1alpha1.ReasonHeartbeatStale, "no heartbeat seen yet"
		return c
	}
	age := obs.Now.Sub(observed.Time)
	if age > obs.HeartbeatTimeout {
		// The message names the time rather than the age so that a stale member's status
		// does not change (and get written) on every resync.
		c.Reason = fleetv1alpha1.ReasonHeartbeatStale
		c.Message = fmt.Sprintf("no new heartbeat since %s (the hub's clock), more than %s ago",
			observed.UTC().Format(time.RFC3339), obs.HeartbeatTimeout)
		return c
	}
	if blocked := anotherOperatorActive(prev, obs.Report); blocked != nil {
		return *blocked
	}
	c.Status, c.Reason = metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh
	c.Message = fmt.Sprintf("last heartbeat %s ago (timeout %s)", age.Truncate(time.Second), obs.HeartbeatTimeout)
	return c
}

// anotherOperatorActive returns AgentReady=False/AnotherOperatorActive when the report read
// (or, with none read, the previous condition) says another controller is active; nil otherwise.
func anotherOperatorActive(prev *metav1.Condition, report *fleetv1alpha1.ClusterReport) *metav1.Condition {
	src := prev
	if report != nil {
		src = meta.FindStatusCondition(report.Status.Conditions, fleetv1alpha1.ConditionAgentReady)
	}
	if src == nil || src.Status != metav1.ConditionFalse || src.Reason != fleetv1alpha1.ReasonAnotherOperatorActive {
		return nil
	}
	return &metav1.Condition{Type: fleetv1alpha1.ConditionAgentReady, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonAnotherOperatorActive, Message: src.Message}
}

// readySummary words Ready: True or False (placement reads a member as usable or not), and
// when False its message names the conditions that are not True, with their messages.
var readySummary = conditions.Summary{
	Type:        fleetv1alpha1.ConditionReady,
	TrueReason:  fleetv1alpha1.ReasonMemberReady,
	FalseReason: fleetv1alpha1.ReasonMemberNotReady,
	TrueMessage: "joined, reachable and the agent reports",
}

// readyCondition is True when Joined, Reachable and AgentReady are.
func readyCondition(conds []metav1.Condition) metav1.Condition {
	types := []string{fleetv1alpha1.ConditionJoined, fleetv1alpha1.ConditionReachable, fleetv1alpha1.ConditionAgentReady}
	inputs := make([]metav1.Condition, 0, len(types))
	for _, t := range types {
		c := meta.FindStatusCondition(conds, t)
		if c == nil {
			c = &metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Message: "unknown"}
		}
		inputs = append(inputs, *c)
	}
	return conditions.Summarize(readySummary, inputs)
}
