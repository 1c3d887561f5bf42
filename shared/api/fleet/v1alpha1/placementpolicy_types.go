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
// +kubebuilder:validation:Enum=Rolling;None
type RolloutType string

const (
	// RolloutRolling updates the placed clusters stage by stage, a few at a time, each one only
	// after the ones before it are done (Ready, every Serve application RUNNING, for soakSeconds).
	RolloutRolling RolloutType = "Rolling"
	// RolloutNone applies a change to every placed cluster at once.
	RolloutNone RolloutType = "None"
)

// DefaultRevisionHistoryLimit is how many ControllerRevisions of a RayService are kept.
const DefaultRevisionHistoryLimit int32 = 10

// ImplicitStageName names the last stage of a Rolling rollout, made of the clusters no stage
// selects (all of them when there are no stages).
const ImplicitStageName = "rest"

// PlacementPolicySpec says where a RayService runs and how changes and failures are handled.
// ClusterSelector, ClusterNames and Tolerations all restrict the candidates: a cluster must
// satisfy every one that is set.
// +kubebuilder:validation:XValidation:rule="!has(self.clusterNames) || !has(self.clusters) || self.clusters <= size(self.clusterNames)",message="clusters cannot exceed the number of clusterNames"
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
type RolloutStrategy struct {
	// Type is Rolling (stage by stage) or None (every cluster at once).
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

	// RevisionHistoryLimit is how many ControllerRevisions of each RayService are kept; the
	// target, the last good revision and any revision a member still runs are never removed.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

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
