package v1alpha1

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RayServiceBindingSpec is the hub's durable decision for one RayService: a restarted hub
// continues from it instead of re-planning from scratch.
type RayServiceBindingSpec struct {
	// Clusters are the MemberClusters the RayService is placed on.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Clusters []string `json:"clusters,omitempty"`

	// PolicyName is the PlacementPolicy the decision followed; empty means the hub's
	// built-in default (one cluster).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PolicyName string `json:"policyName,omitempty"`

	// SpecHash is the hash of the hub RayService's spec last propagated.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SpecHash string `json:"specHash,omitempty"`
}

// RayServiceBindingStatus is the fleet-wide progress of one RayService, cluster by cluster.
type RayServiceBindingStatus struct {
	// ObservedGeneration is the binding generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Placed, Propagated and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Clusters is the state of the member RayService on each cluster it is placed on, or was
	// placed on and still runs.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	Clusters []ClusterStatus `json:"clusters,omitempty"`

	// Refusals are the members whose API server refused the hub's copy of this spec: the
	// member's hub policy guard, a namespace being deleted there, a copy larger than it
	// accepts. Nothing of the refused copy exists on the member, and placement leaves such a
	// member out for this spec until the refusal is retried (after RetryTime) or the spec
	// changes.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	// +kubebuilder:validation:MaxItems=100
	Refusals []ClusterRefusal `json:"refusals,omitempty"`

	// Rollout is the progress of the RayService's revisions across its clusters.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// RolloutPhase is where a fleet rollout stands.
// +kubebuilder:validation:Enum=Progressing;Paused;AwaitingApproval;Stalled;RollingBack;Complete
type RolloutPhase string

// Phases of a fleet rollout.
const (
	// RolloutProgressing: clusters are being updated to the target revision.
	RolloutProgressing RolloutPhase = "Progressing"
	// RolloutPaused: the hub RayService is annotated paused; no cluster starts.
	RolloutPaused RolloutPhase = "Paused"
	// RolloutAwaitingApproval: the next stage waits for `rayfleet rollout approve`.
	RolloutAwaitingApproval RolloutPhase = "AwaitingApproval"
	// RolloutStalled: a cluster was not done within progressDeadlineSeconds.
	RolloutStalled RolloutPhase = "Stalled"
	// RolloutRollingBack: the updated clusters return to the last good revision.
	RolloutRollingBack RolloutPhase = "RollingBack"
	// RolloutComplete: every placed cluster is done on the target revision (or, after a
	// rollback, on the last good one).
	RolloutComplete RolloutPhase = "Complete"
)

// ClusterRolloutPhase is where one cluster stands in a rollout.
// +kubebuilder:validation:Enum=Pending;Updating;Soaking;Done;Failed
type ClusterRolloutPhase string

// Phases of one cluster in a rollout.
const (
	// ClusterPending: not started on the target revision yet.
	ClusterPending ClusterRolloutPhase = "Pending"
	// ClusterUpdating: the revision is applied; the member is not done with it yet.
	ClusterUpdating ClusterRolloutPhase = "Updating"
	// ClusterSoaking: done, and being watched for soakSeconds.
	ClusterSoaking ClusterRolloutPhase = "Soaking"
	// ClusterDone: done for soakSeconds on the target revision.
	ClusterDone ClusterRolloutPhase = "Done"
	// ClusterFailed: not done within progressDeadlineSeconds.
	ClusterFailed ClusterRolloutPhase = "Failed"
)

// RolloutStatus is the progress of a RayService's revisions across its clusters.
type RolloutStatus struct {
	// TargetRevision is the ControllerRevision the clusters are being moved to.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TargetRevision string `json:"targetRevision,omitempty"`

	// BaselineRevision is the revision the placed clusters run, which a new target rolls out
	// from: the target of the last completed rollout, or, for a first revision, the one the
	// clusters are done on, soaked or not. Until a revision is good, it is also the one undo
	// and automatic rollback return to.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	BaselineRevision string `json:"baselineRevision,omitempty"`

	// GoodRevision is the last revision every placed cluster was done on for its soak: the one
	// undo and automatic rollback return to; new clusters get it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	GoodRevision string `json:"goodRevision,omitempty"`

	// FailedRevision is the last revision that stalled and was rolled back; it is not tried
	// again until the RayService spec or the policy's overrides change.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	FailedRevision string `json:"failedRevision,omitempty"`

	// Phase is where the rollout stands.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`

	// Stage is the name of the stage being updated (or waiting for approval).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Stage string `json:"stage,omitempty"`

	// Stages are the stages started so far for the target revision, in order.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=17
	Stages []StageStatus `json:"stages,omitempty"`

	// StartTime is when the rollout to the target revision started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when it completed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Updated is "n/m": how many of the m placed clusters are done on the target revision.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Updated string `json:"updated,omitempty"`

	// Message says what the rollout waits for, in words.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`

	// BlueGreen is the state of a BlueGreen rollout; absent when none is in flight.
	// +optional
	BlueGreen *BlueGreenStatus `json:"blueGreen,omitempty"`
}

// BlueGreenStep is where a BlueGreen rollout stands.
// +kubebuilder:validation:Enum=Deploying;Shifting;Holding
type BlueGreenStep string

// Steps of a BlueGreen rollout.
const (
	// BlueGreenDeploying: green runs the target revision and is not done yet; blue takes all
	// of the traffic.
	BlueGreenDeploying BlueGreenStep = "Deploying"
	// BlueGreenShifting: traffic moves from blue to green step by step.
	BlueGreenShifting BlueGreenStep = "Shifting"
	// BlueGreenHolding: green takes all of the traffic for retireAfterSeconds; then the blue
	// clusters leave (Retired) and the rollout is complete.
	BlueGreenHolding BlueGreenStep = "Holding"
)

// BlueGreenStatus is the state of one BlueGreen rollout: a hub restart resumes from it.
type BlueGreenStatus struct {
	// Step is where the rollout stands.
	// +required
	Step BlueGreenStep `json:"step"`

	// Blue are the clusters that ran the good revision when the rollout started (and those
	// that replaced them after a failover).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	Blue []string `json:"blue,omitempty"`

	// Green are the clusters chosen for the target revision.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	Green []string `json:"green,omitempty"`

	// GreenPercent is the share of the traffic green is given, 0 to 100.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	GreenPercent int32 `json:"greenPercent"`

	// StepTime is when the step (or the traffic share) last changed, or, while the share waits
	// for the gateway, when the gateway accepted it.
	// +optional
	StepTime *metav1.Time `json:"stepTime,omitempty"`

	// Accepted is whether the gateway accepted the route carrying GreenPercent.
	// +optional
	Accepted bool `json:"accepted,omitempty"`

	// Capacity is each colour's capacity target while the policy's capacity follows the
	// traffic (rollout.blueGreen.capacity); absent otherwise.
	// +optional
	Capacity *BlueGreenCapacityStatus `json:"capacity,omitempty"`
}

// CapacityDirection is which way a capacity-following BlueGreen rollout moves.
// +kubebuilder:validation:Enum=Forward;Undo;Revert
type CapacityDirection string

// Directions of a capacity-following BlueGreen rollout.
const (
	// CapacityForward moves the traffic and the capacity from blue to green.
	CapacityForward CapacityDirection = "Forward"
	// CapacityUndo moves them back to blue step by step: blue grows first, then takes the
	// traffic, then green shrinks.
	CapacityUndo CapacityDirection = "Undo"
	// CapacityRevert gives blue all of the traffic at once (green failed) while blue grows back
	// to its whole set; green leaves once it has.
	CapacityRevert CapacityDirection = "Revert"
)

// BlueGreenCapacityStatus is the capacity each colour was last given.
type BlueGreenCapacityStatus struct {
	// Direction is which way the rollout moves.
	// +required
	Direction CapacityDirection `json:"direction"`

	// Green is green's capacity target, in percent of its full set.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Green int32 `json:"green"`

	// Blue is blue's capacity target, in percent of its full set.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Blue int32 `json:"blue"`
}

// StageStatus is one started stage of a rollout.
type StageStatus struct {
	// Name of the stage.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Clusters are the stage's clusters in the order they are updated, recorded when the stage
	// started.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Clusters []string `json:"clusters,omitempty"`

	// StartTime is when the stage started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// Approved is whether the stage started on an approval.
	// +optional
	Approved bool `json:"approved,omitempty"`
}

// ClusterRefusal is one member's refusal of the hub's copy of a RayService.
type ClusterRefusal struct {
	// Cluster is the MemberCluster that refused.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Cluster string `json:"cluster"`

	// SpecHash is the hash of the hub RayService's spec that was refused; a new spec is tried
	// again at once.
	// +required
	// +kubebuilder:validation:MaxLength=128
	SpecHash string `json:"specHash"`

	// Rule names what refused it: `hubPolicy/<rule>` for the member's hub policy guard,
	// NamespaceTerminating, RequestTooLarge or Invalid (the member's API server rejected the
	// object itself).
	// +required
	// +kubebuilder:validation:MaxLength=128
	Rule string `json:"rule"`

	// Message is the member API server's answer, shortened.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// RetryTime is when the hub tries the member again with the same spec (the member's policy
	// or namespace may have changed by then).
	// +required
	RetryTime metav1.Time `json:"retryTime"`
}

// ClusterStatus is a member RayService's state as the hub last saw it.
type ClusterStatus struct {
	// Name of the MemberCluster.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// SpecHash is the spec hash applied on this member (its fleet.rayfleet.io/spec-hash).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SpecHash string `json:"specHash,omitempty"`

	// ObservedGeneration is the member RayService's status.observedGeneration.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are the member RayService's conditions, copied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ServiceStatus is the member RayService's status.serviceStatus.
	// +optional
	ServiceStatus rayv1.ServiceStatus `json:"serviceStatus,omitempty"`

	// ActiveRayCluster is the name of the member's active RayCluster.
	// +optional
	ActiveRayCluster string `json:"activeRayCluster,omitempty"`

	// PendingRayCluster is the name of the member's pending RayCluster during an upgrade.
	// +optional
	PendingRayCluster string `json:"pendingRayCluster,omitempty"`

	// NumServeEndpoints is the member RayService's status.numServeEndpoints.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NumServeEndpoints int32 `json:"numServeEndpoints,omitempty"`

	// Applications are the Serve applications of the member's active RayCluster.
	// +optional
	Applications map[string]rayv1.AppStatus `json:"applications,omitempty"`

	// LastSeenTime is when the hub last read the member RayService.
	// +optional
	LastSeenTime *metav1.Time `json:"lastSeenTime,omitempty"`

	// Revision is the ControllerRevision the member's copy carries.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Revision string `json:"revision,omitempty"`

	// RolloutPhase is where the cluster stands in the rollout to the target revision.
	// +optional
	RolloutPhase ClusterRolloutPhase `json:"rolloutPhase,omitempty"`

	// PhaseTime is when the cluster entered its rollout phase: the start of an update (for the
	// progress deadline) or of the soak.
	// +optional
	PhaseTime *metav1.Time `json:"phaseTime,omitempty"`

	// UpdateTime is, while the cluster soaks, when its update began: a cluster that stops being
	// done during the soak resumes its progress deadline from there.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`

	// Color is Blue or Green while a BlueGreen rollout is in flight.
	// +optional
	Color Color `json:"color,omitempty"`

	// Weight is the cluster's weight in the RayService's HTTPRoute (of 10000 over all of the
	// clusters); absent when no traffic is managed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Weight *int32 `json:"weight,omitempty"`

	// ServeAddress is where the member serves the RayService, as its spoke reports it
	// ("host:port"); empty when it reports none.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ServeAddress string `json:"serveAddress,omitempty"`

	// TrafficOffTime is when the gateway accepted a route that sends this cluster no traffic;
	// a copy that is leaving is removed only a drain delay after it.
	// +optional
	TrafficOffTime *metav1.Time `json:"trafficOffTime,omitempty"`

	// Leaving is set on a cluster the RayService is no longer placed on while its copy is
	// still there: why it left and since when. The copy is removed once the clusters that
	// replace it are done (make-before-break) and, after a failover, as the policy's purgeMode
	// says.
	// +optional
	Leaving *ClusterLeaving `json:"leaving,omitempty"`
}

// Color is a cluster's side in a BlueGreen rollout.
// +kubebuilder:validation:Enum=Blue;Green
type Color string

const (
	// ColorBlue is a cluster that runs the revision traffic moves away from.
	ColorBlue Color = "Blue"
	// ColorGreen is a cluster that runs the target revision traffic moves to.
	ColorGreen Color = "Green"
)

// LeaveReason is why a RayService left a cluster.
// +kubebuilder:validation:Enum=Moved;FailedOver;Retired;RolledBack
type LeaveReason string

const (
	// LeaveMoved means the cluster stopped qualifying (selector, labels, taints, policy, scale-down)
	// while it was Ready.
	LeaveMoved LeaveReason = "Moved"
	// LeaveFailedOver means the cluster was not Ready past the policy's toleration.
	LeaveFailedOver LeaveReason = "FailedOver"
	// LeaveRetired means a BlueGreen rollout finished and the cluster was blue.
	LeaveRetired LeaveReason = "Retired"
	// LeaveRolledBack means a BlueGreen rollout was undone (or missed its deadline) and the
	// cluster was green.
	LeaveRolledBack LeaveReason = "RolledBack"
)

// ClusterLeaving is why and since when a copy is on a cluster the RayService left.
type ClusterLeaving struct {
	// Reason is Moved or FailedOver.
	// +required
	Reason LeaveReason `json:"reason"`

	// Since is when the RayService left the cluster.
	// +required
	Since metav1.Time `json:"since"`
}

// RayServiceBinding records where the hub RayService of the same name and namespace runs and
// how each copy is doing. The hub RayService owns it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=rsb,categories=rayfleet
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.spec.clusters`
// +kubebuilder:printcolumn:name="Placed",type=string,JSONPath=`.status.conditions[?(@.type=="Placed")].status`
// +kubebuilder:printcolumn:name="Propagated",type=string,JSONPath=`.status.conditions[?(@.type=="Propagated")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.rollout.targetRevision`
// +kubebuilder:printcolumn:name="Updated",type=string,JSONPath=`.status.rollout.updated`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.rollout.phase`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policyName`,priority=1
// +kubebuilder:printcolumn:name="Spec Hash",type=string,JSONPath=`.spec.specHash`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RayServiceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the placement decision.
	// +optional
	Spec RayServiceBindingSpec `json:"spec,omitempty"`

	// Status is the per-cluster progress.
	// +optional
	Status RayServiceBindingStatus `json:"status,omitempty"`
}

// RayServiceBindingList is a list of RayServiceBindings.
// +kubebuilder:object:root=true
type RayServiceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the RayServiceBindings.
	Items []RayServiceBinding `json:"items"`
}
