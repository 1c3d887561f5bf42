package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultPlacementPolicyName is the policy a namespace's RayServices use when they name none.
const DefaultPlacementPolicyName = "default"

// Defaults of the optional PlacementPolicy fields. The CRD applies them when the enclosing
// object is present; code reading a policy built in Go (or the hub's built-in default policy)
// uses these constants for nil fields.
const (
	// DefaultClusters is how many clusters a RayService runs on.
	DefaultClusters int32 = 1
	// DefaultMaxUnavailableClusters is how many clusters a Rolling rollout updates at once.
	DefaultMaxUnavailableClusters int32 = 1
	// DefaultSoakSeconds is how long an updated cluster must stay done before the next ones.
	DefaultSoakSeconds int32 = 60
	// DefaultProgressDeadlineSeconds is how long one cluster may take before the rollout stalls.
	DefaultProgressDeadlineSeconds int32 = 600
	// DefaultFailoverTolerationSeconds is how long a member may be not Ready before its
	// RayServices are moved; long enough to ride out an API server restart.
	DefaultFailoverTolerationSeconds int64 = 300
)

// RolloutType is how a spec change reaches the placed clusters.
// +kubebuilder:validation:Enum=Rolling;None;BlueGreen
type RolloutType string

const (
	// RolloutRolling updates the placed clusters stage by stage, a few at a time, each one only
	// after the ones before it are done (Ready, every Serve application RUNNING, for soakSeconds).
	RolloutRolling RolloutType = "Rolling"
	// RolloutNone applies a change to every placed cluster at once.
	RolloutNone RolloutType = "None"
	// RolloutBlueGreen places a new revision on a fresh set of clusters (green) while the
	// current ones (blue) keep serving, moves traffic from blue to green step by step, then
	// retires blue.
	RolloutBlueGreen RolloutType = "BlueGreen"
)

// Defaults of a BlueGreen rollout.
const (
	// DefaultBlueGreenStepPercent is how much traffic one step moves from blue to green.
	DefaultBlueGreenStepPercent int32 = 20
	// DefaultBlueGreenIntervalSeconds is the time between two steps.
	DefaultBlueGreenIntervalSeconds int32 = 30
	// DefaultBlueGreenRetireAfterSeconds is how long green holds all traffic before blue goes.
	DefaultBlueGreenRetireAfterSeconds int32 = 300
	// DefaultBlueGreenSurgePercent is how far above one full set a capacity-following
	// BlueGreen rollout may hold the fleet.
	DefaultBlueGreenSurgePercent int32 = 25
)

// MaxRouteBackends is how many backendRefs one HTTPRoute rule may have (Gateway API's limit):
// with traffic managed, a Rolling or None policy places at most this many clusters, and a
// BlueGreen policy (blue and green at once) at most half of it.
const MaxRouteBackends = 16

// DefaultRevisionHistoryLimit is how many ControllerRevisions of a RayService are kept.
const DefaultRevisionHistoryLimit int32 = 10

// ImplicitStageName names the last stage of a Rolling rollout, made of the clusters no stage
// selects (all of them when there are no stages).
const ImplicitStageName = "rest"

// PlacementPolicySpec says where a RayService runs and how changes and failures are handled.
// ClusterSelector, ClusterNames and Tolerations all restrict the candidates: a cluster must
// satisfy every one that is set.
// +kubebuilder:validation:XValidation:rule="!has(self.clusterNames) || !has(self.clusters) || self.clusters <= size(self.clusterNames)",message="clusters cannot exceed the number of clusterNames"
// +kubebuilder:validation:XValidation:rule="!has(self.traffic) || !has(self.clusters) || self.clusters <= (has(self.rollout) && has(self.rollout.type) && self.rollout.type == 'BlueGreen' ? 8 : 16)",message="with traffic, clusters is at most 16 (an HTTPRoute rule has at most 16 backends), and at most 8 with a BlueGreen rollout (blue and green are routed at once)"
// +kubebuilder:validation:XValidation:rule="has(self.traffic) || !has(self.rollout) || !has(self.rollout.blueGreen) || !has(self.rollout.blueGreen.capacity)",message="rollout.blueGreen.capacity needs traffic: without a gateway there are no weights for the capacity to follow"
type PlacementPolicySpec struct {
	// ClusterSelector selects candidate MemberClusters by label; empty or absent selects all.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// ClusterNames restricts the candidates to these MemberClusters.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ClusterNames []string `json:"clusterNames,omitempty"`

	// Tolerations let the RayService run on MemberClusters with matching taints.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Clusters is how many clusters the RayService runs on.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Clusters *int32 `json:"clusters,omitempty"`

	// SpreadBy is a MemberCluster label key (e.g. topology.kubernetes.io/region) whose values
	// the chosen clusters should differ in, as far as the candidates allow.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="spreadBy must be a label key: an optional DNS subdomain prefix and '/', then a name of at most 63 alphanumerics, '-', '_' or '.'"
	SpreadBy string `json:"spreadBy,omitempty"`

	// Overrides patch the RayService spec on the clusters they select; when several select a
	// cluster they apply in order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Overrides []ClusterOverride `json:"overrides,omitempty"`

	// Rollout is how a spec change reaches the placed clusters; absent means Rolling with the
	// defaults.
	// +optional
	Rollout *RolloutStrategy `json:"rollout,omitempty"`

	// Failover is when and how a RayService leaves a member that stays not Ready; absent means
	// the defaults.
	// +optional
	Failover *FailoverPolicy `json:"failover,omitempty"`

	// Traffic makes the hub manage one HTTPRoute per RayService in a Gateway's cluster, with a
	// weighted backend for each cluster the RayService serves on; a BlueGreen rollout shifts
	// its weights. Absent means the hub manages no traffic.
	// +optional
	Traffic *TrafficSpec `json:"traffic,omitempty"`
}

// BackendKind is what each weighted backend of the HTTPRoute points at.
// +kubebuilder:validation:Enum=Service;ServiceImport
type BackendKind string

const (
	// BackendService is a Service in the traffic cluster per member, made by the hub from the
	// address the member reports (selectorless with an EndpointSlice for an IP, ExternalName
	// for a hostname).
	BackendService BackendKind = "Service"
	// BackendServiceImport is the Multi-Cluster Services API's ServiceImport of a Service each
	// member exports under a name that carries the member (<rayservice>-serve-<member>).
	BackendServiceImport BackendKind = "ServiceImport"
)

// TrafficSpec is where the hub routes a RayService's traffic.
// +kubebuilder:validation:XValidation:rule="!has(self.cluster) || size(self.cluster) == 0 || self.cluster.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="cluster must be a MemberCluster name, or empty for the hub"
type TrafficSpec struct {
	// Cluster is the MemberCluster that runs the Gateway; empty means the hub's own cluster.
	// The hub needs its traffic Role there in the RayService's namespace (the hub chart's
	// traffic.namespaces; on a member rayfleet join --traffic-namespace, or the spoke chart's
	// hubTraffic.namespaces); without it TrafficShifting is False with reason Forbidden.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster,omitempty"`

	// ParentRef is the Gateway the HTTPRoute attaches to. The HTTPRoute and the backends are
	// made in the RayService's namespace, so the Gateway's listeners (allowedRoutes, hostname)
	// decide whether it attaches; one it does not admit gives TrafficShifting False with the
	// Gateway's reason (NotAllowedByListeners, ...).
	// +required
	ParentRef TrafficParentRef `json:"parentRef"`

	// Hostnames are the HTTPRoute's hostnames; empty matches every hostname the listener takes.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Hostnames []string `json:"hostnames,omitempty"`

	// PathPrefix is the path the HTTPRoute matches.
	// +optional
	// +kubebuilder:default="/"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\s]*$`
	PathPrefix string `json:"pathPrefix,omitempty"`

	// BackendKind is Service (default) or ServiceImport.
	// +optional
	// +kubebuilder:default=Service
	BackendKind BackendKind `json:"backendKind,omitempty"`
}

// TrafficParentRef names a Gateway (and optionally one of its listeners).
type TrafficParentRef struct {
	// Namespace of the Gateway.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	// Name of the Gateway.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// SectionName is the listener of the Gateway to attach to; empty means all of them.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SectionName string `json:"sectionName,omitempty"`
}

// ClusterOverride is a change to the RayService spec on some clusters only (a bigger GPU type in
// one region, a different image registry, ...).
type ClusterOverride struct {
	// ClusterSelector selects the MemberClusters the patch applies to; an empty selector
	// selects all of them.
	// +required
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector"`

	// Patch is a JSON merge patch (RFC 7386) applied to the RayService's spec.
	// +required
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:pruning:PreserveUnknownFields
	Patch apiextensionsv1.JSON `json:"patch"`
}

// RolloutStrategy is how a spec change reaches the placed clusters.
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadlineSeconds) || !has(self.soakSeconds) || self.progressDeadlineSeconds > self.soakSeconds",message="progressDeadlineSeconds must be greater than soakSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || self.type == 'BlueGreen'",message="blueGreen is only used with type BlueGreen"
// +kubebuilder:validation:XValidation:rule="self.type != 'BlueGreen' || !has(self.stages)",message="stages are not used with type BlueGreen: green is one set of clusters, updated at once"
type RolloutStrategy struct {
	// Type is Rolling (stage by stage), None (every cluster at once) or BlueGreen (a new
	// revision on other clusters, traffic shifted step by step).
	// +optional
	// +kubebuilder:default=Rolling
	Type RolloutType `json:"type,omitempty"`

	// MaxUnavailableClusters is how many clusters of a stage are updated at once: a number, or
	// a percentage of the placed clusters (rounded down, at least 1). Clusters that are not
	// Ready count against it. Default 1. A value below 1 or a malformed percentage makes the
	// policy not Accepted (checked by the hub: a CEL rule on it exceeds the API server's cost
	// budget inside the stages list).
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxUnavailableClusters *intstr.IntOrString `json:"maxUnavailableClusters,omitempty"`

	// SoakSeconds is how long an updated cluster must stay done (Ready, every Serve application
	// RUNNING, on the new spec) before the next clusters start.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=0
	SoakSeconds *int32 `json:"soakSeconds,omitempty"`

	// ProgressDeadlineSeconds is how long one cluster may take to be done (soak not counted)
	// before the rollout stalls. Time paused or awaiting approval does not count.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// AutoRollback returns the clusters already updated to the last good revision when the
	// rollout stalls, and marks the revision failed: it is not tried again until the RayService
	// spec or the policy's overrides change.
	// +optional
	AutoRollback bool `json:"autoRollback,omitempty"`

	// Stages are updated in order; the clusters no stage selects form a last stage named
	// "rest". Without stages all clusters are one stage.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Stages []RolloutStage `json:"stages,omitempty"`

	// SortingLabelKey orders the clusters within a stage by this MemberCluster label's value
	// (then by name); without it, the clusters with the fewest serve endpoints go first.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	SortingLabelKey string `json:"sortingLabelKey,omitempty"`

	// BlueGreen tunes a BlueGreen rollout; absent means the defaults.
	// +optional
	BlueGreen *BlueGreenStrategy `json:"blueGreen,omitempty"`

	// RevisionHistoryLimit is how many ControllerRevisions of each RayService are kept; the
	// target, the last good revision and any revision a member still runs are never removed.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// BlueGreenStrategy tunes a BlueGreen rollout.
type BlueGreenStrategy struct {
	// StepPercent is how much of the traffic one step moves from blue to green.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	StepPercent *int32 `json:"stepPercent,omitempty"`

	// IntervalSeconds is the time between two steps, counted from when the gateway accepted
	// the previous one.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`

	// RetireAfterSeconds is how long green holds all of the traffic before the blue copies are
	// removed; until then an undo returns the traffic to blue at once.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	RetireAfterSeconds *int32 `json:"retireAfterSeconds,omitempty"`

	// Approval makes the rollout wait for `rayfleet rollout approve` twice: before the first
	// step (stage "shift") and before green takes all of the traffic (stage "promote").
	// +optional
	Approval bool `json:"approval,omitempty"`

	// Fallback is what happens when no green set can be chosen (too few other members fit):
	// None (default) waits, with a condition naming why each member is not eligible; Rolling
	// updates the blue clusters in place as a Rolling rollout with the defaults.
	// +optional
	// +kubebuilder:default=None
	Fallback BlueGreenFallback `json:"fallback,omitempty"`

	// Capacity makes each colour's capacity follow its share of the traffic: green starts at
	// surgePercent of its full set and grows one step ahead of its weight, blue shrinks behind
	// its weight, and a weight moves only onto replicas that run. Capacity moves through
	// fields the member applies to its running RayCluster in place (worker replicas and their
	// bounds, Serve's target_capacity). Absent, each colour runs its whole set. Needs spec.traffic.
	// +optional
	Capacity *BlueGreenCapacity `json:"capacity,omitempty"`
}

// BlueGreenCapacity tunes a BlueGreen rollout whose capacity follows its traffic.
type BlueGreenCapacity struct {
	// SurgePercent bounds the fleet while the traffic moves: blue and green together hold at
	// most (100+surgePercent)% of one set, per resource, one set being the larger of the two
	// colours' full sets. It is also green's capacity before it takes any traffic, and the
	// most one step moves (a smaller stepPercent moves less).
	// +optional
	// +kubebuilder:default=25
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SurgePercent *int32 `json:"surgePercent,omitempty"`
}

// BlueGreenFallback is what a BlueGreen rollout does without a green set.
// +kubebuilder:validation:Enum=None;Rolling
type BlueGreenFallback string

const (
	// FallbackNone waits for members to become eligible.
	FallbackNone BlueGreenFallback = "None"
	// FallbackRolling updates the blue clusters in place.
	FallbackRolling BlueGreenFallback = "Rolling"
)

// Names of the approvals a BlueGreen rollout with approval waits for.
const (
	// BlueGreenShiftStage is approved before the first traffic step.
	BlueGreenShiftStage = "shift"
	// BlueGreenPromoteStage is approved before green takes all of the traffic.
	BlueGreenPromoteStage = "promote"
)

// RolloutStage is a group of clusters updated together in a Rolling rollout.
type RolloutStage struct {
	// Name identifies the stage in the status and in approvals.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// ClusterSelector picks the stage's clusters among the placed ones; the first stage that
	// selects a cluster owns it. An empty selector selects every cluster not yet owned.
	// +required
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector"`

	// MaxConcurrency is how many of the stage's clusters are updated at once (a number or a
	// percentage of the stage's clusters); default the rollout's maxUnavailableClusters.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`

	// SoakSeconds overrides the rollout's soakSeconds for this stage's clusters.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SoakSeconds *int32 `json:"soakSeconds,omitempty"`

	// Approval makes the stage wait, before it starts, for `rayfleet rollout approve`, which
	// names the revision and the stage.
	// +optional
	Approval bool `json:"approval,omitempty"`
}

// FailoverPolicy is when and how a RayService leaves a member that stays not Ready.
type FailoverPolicy struct {
	// TolerationSeconds is how long a member may be not Ready before its RayServices are
	// placed elsewhere.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`

	// PurgeMode is what happens to the copy on a member the RayService failed over from, once
	// the replacement is done: Graceful (default) deletes it when its member is Ready again,
	// Immediately deletes it at once (retried while the member cannot be reached), Never keeps
	// it (the binding's CopiesRetained condition lists it) for the user to delete.
	// +optional
	// +kubebuilder:default=Graceful
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// ReadmitSeconds is how long a member that was not Ready must stay Ready again before it is
	// given new work (a placement it does not hold already). A member that flaps does not pull
	// RayServices onto itself between two outages.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=0
	ReadmitSeconds *int64 `json:"readmitSeconds,omitempty"`
}

// PurgeMode is when the copy left on a member after a failover is deleted.
// +kubebuilder:validation:Enum=Graceful;Never;Immediately
type PurgeMode string

const (
	// PurgeGraceful deletes the copy once its member is Ready again and the replacement is done.
	PurgeGraceful PurgeMode = "Graceful"
	// PurgeNever keeps the copy; the user deletes it.
	PurgeNever PurgeMode = "Never"
	// PurgeImmediately deletes the copy as soon as the replacement is done, retrying while its
	// member cannot be reached.
	PurgeImmediately PurgeMode = "Immediately"
)

// DefaultReadmitSeconds is the readmission delay of a policy that sets none.
const DefaultReadmitSeconds int64 = 60

// PlacementPolicyStatus says whether the hub can use the policy.
type PlacementPolicyStatus struct {
	// ObservedGeneration is the generation the conditions were computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Accepted.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// PlacementPolicy says where the RayServices of its namespace that name it run (annotation
// fleet.rayfleet.io/placement-policy), or all of them when it is named DefaultPlacementPolicyName.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=pp,categories=rayfleet
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.spec.clusters`
// +kubebuilder:printcolumn:name="Spread By",type=string,JSONPath=`.spec.spreadBy`
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.spec.rollout.type`,priority=1
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PlacementPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy; an empty spec places on one Ready cluster that fits.
	// +optional
	Spec PlacementPolicySpec `json:"spec,omitempty"`

	// Status says whether the hub can use the policy.
	// +optional
	Status PlacementPolicyStatus `json:"status,omitempty"`
}

// PlacementPolicyList is a list of PlacementPolicies.
// +kubebuilder:object:root=true
type PlacementPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the PlacementPolicies.
	Items []PlacementPolicy `json:"items"`
}
