package rollout

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Condition types Plan sets on the hub RayService.
const (
	// ConditionProgressing is True while a rollout moves or is complete, False when it stalled
	// or was rolled back, Unknown while it is held (paused, awaiting approval) or has no cluster.
	ConditionProgressing = "RolloutProgressing"
	// ConditionPaused is True while the rollout is paused or awaits an approval.
	ConditionPaused = "RolloutPaused"
)

// Reasons of the RolloutProgressing condition.
const (
	// ReasonProgressing (True): clusters are being moved to the target revision.
	ReasonProgressing = "Progressing"
	// ReasonRolloutComplete (True): every placed cluster is done on the target revision.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonProgressDeadlineExceeded (False): a cluster was not done within the progress
	// deadline; the message names it and quotes the member.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonUpgradeBlocked (False): a cluster can never run the target revision's RayCluster
	// spec (its upgradeStrategy.type is None); the message names it.
	ReasonUpgradeBlocked = "UpgradeBlocked"
	// ReasonRollingBack (False): the target revision stalled and the clusters return to the
	// last good revision.
	ReasonRollingBack = "RollingBack"
	// ReasonRevisionFailed (False): the target revision was rolled back and is not tried again
	// until the RayService spec or the policy's overrides change.
	ReasonRevisionFailed = "RevisionFailed"
	// ReasonNotPlaced (Unknown): the RayService is placed on no cluster, so nothing rolls out.
	ReasonNotPlaced = "NotPlaced"
)

// Reasons of the RolloutPaused condition (ReasonAwaitingApproval also of RolloutProgressing,
// Unknown).
const (
	// ReasonPaused (True; RolloutProgressing Unknown): the hub RayService is annotated paused.
	ReasonPaused = "Paused"
	// ReasonAwaitingApproval (True; RolloutProgressing Unknown): the next stage waits for an
	// approval of the target revision.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonNotPaused (False): nothing holds the rollout.
	ReasonNotPaused = "NotPaused"
)

// Event types, as Kubernetes Events spell them.
const (
	// EventNormal is an Event about expected progress.
	EventNormal = "Normal"
	// EventWarning is an Event about a rollout that needs attention.
	EventWarning = "Warning"
)

// Reasons of the Events Plan asks the hub to record; each is reported once, on the transition.
const (
	// EventStageStarted: a stage started, with its clusters in the order they are updated.
	EventStageStarted = "StageStarted"
	// EventClusterDone: a cluster was done on the target revision for the stage's soak.
	EventClusterDone = "ClusterDone"
	// EventRolloutStalled (Warning): a cluster missed the progress deadline or is blocked.
	EventRolloutStalled = "RolloutStalled"
	// EventRollingBack (Warning): a stalled revision is being rolled back.
	EventRollingBack = "RollingBack"
	// EventRolledBack (Warning): every cluster is done on the last good revision again.
	EventRolledBack = "RolloutRolledBack"
	// EventRolloutComplete: every placed cluster is done on the target revision.
	EventRolloutComplete = "RolloutComplete"
	// EventAwaitingApproval: a stage waits for an approval of the target revision.
	EventAwaitingApproval = "AwaitingApproval"
)

// Cluster is what the planner knows of one placed cluster.
type Cluster struct {
	// Name of the MemberCluster.
	Name string
	// Labels of the MemberCluster, matched by the stages' selectors and the sorting key.
	Labels map[string]string
	// Ready is whether the MemberCluster is Ready and reachable; a cluster that is not counts
	// against its stage's concurrency and is not started.
	Ready bool
	// Revision is the revision its copy carries now; "" means it has no copy yet.
	Revision string
	// Done is the Ray-aware "done" for Revision right now, the soak not included.
	Done bool
	// NotDone is, when not Done, the member's own reason and message, quoted in messages.
	NotDone string
	// Blocked is set when Revision's RayCluster spec can never reach the running cluster (the
	// member's upgradeStrategy.type is None): the rollout says so at once instead of waiting
	// for the deadline.
	Blocked bool
	// Endpoints is the member's serve endpoint count; fewer go first without a sorting key.
	Endpoints int32
}

// ClusterPhase is one cluster's place in the rollout to the target revision.
type ClusterPhase struct {
	// Phase is Pending, Updating, Soaking, Done or Failed; "" reads as Pending.
	Phase fleetv1alpha1.ClusterRolloutPhase
	// Since is when the cluster entered Phase: the update's start while Updating, the soak's
	// start while Soaking. A Pending cluster with a Since is still finishing the revision it
	// runs (an older target it was updating to when the target changed, or the good revision
	// a newly placed cluster was given): it counts as in flight and gets the target only once
	// it is done, blocked, or Since is a progress deadline old.
	Since time.Time
	// Started is, while Soaking, when the update began, so that a cluster that stops being
	// done resumes its progress deadline from there (the binding keeps it as updateTime). Zero
	// resumes it from the soak's start.
	Started time.Time
}

// Input is everything one rollout decision depends on.
type Input struct {
	// Now is the time of the decision.
	Now time.Time
	// Strategy is the PlacementPolicy's rollout (StrategyOf).
	Strategy Strategy
	// Target is the newest revision: the hub RayService's spec and the overrides now.
	Target string
	// Previous is the binding's rollout status; nil the first time.
	Previous *fleetv1alpha1.RolloutStatus
	// Clusters are the placed clusters, in any order.
	Clusters []Cluster
	// ClusterPhases are the binding's per-cluster rollout phases, by cluster name.
	ClusterPhases map[string]ClusterPhase
	// Paused is the hub RayService's paused annotation: no cluster starts.
	Paused bool
	// Approval is the binding's approved-stage annotation, "<revision>/<stage>".
	Approval string
	// BlueGreen is what a BlueGreen rollout needs beyond the rest (Strategy.Type BlueGreen).
	BlueGreen BlueGreenInput
}

// BlueGreenInput is the blue/green part of an Input.
type BlueGreenInput struct {
	// Blue and Green are the clusters of each colour: for a rollout that starts now
	// (NeedsGreen) the placed clusters and the green set the hub chose for the target (none
	// when it could not choose one); for a rollout in flight the sets of Previous.BlueGreen as
	// placement keeps them (a member that failed over is replaced within its colour).
	Blue, Green []string
	// NoGreen says why no green set could be chosen ("" when one was, or none was needed).
	NoGreen string
	// Traffic is whether the policy manages traffic. Without it there are no steps: green
	// comes up, then blue leaves.
	Traffic bool
	// Accepted is whether the gateway has accepted the route carrying the previous decision's
	// green share.
	Accepted bool
	// GreenRunning and BlueRunning are, for a rollout whose capacity follows the traffic
	// (Strategy.BlueGreen.Capacity), the share of its full set each colour runs now, in percent:
	// the least over the colour's members of RunningShareOf their reports.
	GreenRunning, BlueRunning int32
}

// Event is an Event the hub records on the hub RayService.
type Event struct {
	// Type is EventNormal or EventWarning.
	Type string
	// Reason is one of the Event* reasons.
	Reason string
	// Message says what happened.
	Message string
	// Cluster is the member the event is about, "" for the rollout as a whole. The events API
	// folds events with the same object, reason and related object into one series and keeps
	// the first message: the hub names the member as the related object, so that one
	// cluster's event does not hide another's.
	Cluster string
}

// Decision is the planner's answer.
type Decision struct {
	// Apply is the revision to apply on each placed cluster (every one has an entry).
	Apply map[string]string
	// Status is the binding's new rollout status.
	Status fleetv1alpha1.RolloutStatus
	// Phases are the placed clusters' new rollout phases, by name.
	Phases map[string]ClusterPhase
	// Events are the transitions of this decision, in the order they happened.
	Events []Event
	// Progressing is the hub RayService's RolloutProgressing condition (no times, no
	// generation: the hub stamps those).
	Progressing metav1.Condition
	// Paused is the hub RayService's RolloutPaused condition.
	Paused metav1.Condition
	// RequeueAfter is when time alone changes the decision (a soak ends, a deadline passes);
	// 0 when nothing is timed.
	RequeueAfter time.Duration
	// Colors are the placed clusters' colours while a BlueGreen rollout is in flight.
	Colors map[string]fleetv1alpha1.Color
	// Leave are the clusters a BlueGreen rollout gives up now: blue ones when it completes
	// (LeaveRetired), green ones when it is undone or missed its deadline (LeaveRolledBack).
	Leave map[string]fleetv1alpha1.LeaveReason
	// TrafficShifting is the hub RayService's TrafficShifting condition for a BlueGreen
	// rollout (no times, no generation); nil for other rollouts.
	TrafficShifting *metav1.Condition
	// Capacity is each colour's capacity target while a BlueGreen rollout's capacity follows
	// its traffic: the copies are overlaid with it. Nil otherwise: every copy runs its whole
	// set.
	Capacity *CapacityTargets
}

// CapacityTargets is the capacity each colour of a BlueGreen rollout is given, in percent of
// its full set.
type CapacityTargets struct {
	// Direction is which way the rollout moves; Replicas reads it to know which colour grows.
	Direction   CapacityDirection
	Green, Blue int32
}

// Step is t as the CapacityStep that Replicas takes.
func (t CapacityTargets) Step() CapacityStep {
	return CapacityStep{Direction: t.Direction, Green: t.Green, Blue: t.Blue}
}
