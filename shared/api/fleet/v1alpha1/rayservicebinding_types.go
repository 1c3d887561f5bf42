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
