package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnyName, as a NamespaceGrant's traffic cluster, Gateway namespace or name, or hostname,
// grants every value.
const AnyName = "*"

// NamespaceGrantSpec grants the RayServices of some hub namespaces members to run on and
// traffic to use. A namespace's grants add up: a member or a traffic spec is granted when one of
// the grants selecting the namespace grants it.
// +kubebuilder:validation:XValidation:rule="has(self.namespaces) || has(self.namespaceSelector)",message="set namespaces, namespaceSelector or both"
type NamespaceGrantSpec struct {
	// Namespaces are hub namespaces granted by name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces,omitempty"`

	// NamespaceSelector grants the hub namespaces whose labels it matches; an empty selector
	// matches every namespace. A namespace is granted when it is named or selected.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Members are the MemberClusters the namespaces' RayServices may be placed on; absent
	// grants none.
	// +optional
	Members *MemberGrant `json:"members,omitempty"`

	// Traffic are the Gateways, hostnames and path prefixes the namespaces' PlacementPolicies
	// may route to; a policy's traffic must fit within one entry. Empty grants none.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Traffic []TrafficGrant `json:"traffic,omitempty"`
}

// MemberGrant names MemberClusters; a member is granted when it is named or selected.
// +kubebuilder:validation:XValidation:rule="has(self.clusterNames) || has(self.clusterSelector)",message="set clusterNames, clusterSelector or both"
type MemberGrant struct {
	// ClusterNames are MemberClusters granted by name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ClusterNames []string `json:"clusterNames,omitempty"`

	// ClusterSelector grants the MemberClusters whose labels it matches; an empty selector
	// matches every member.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// TrafficGrant is where a PlacementPolicy's traffic may go: its cluster, its parentRef, every
// one of its hostnames and its pathPrefix must each be granted by this one entry.
type TrafficGrant struct {
	// Cluster is the traffic cluster (a MemberCluster name), empty for the hub's own cluster,
	// "*" for any.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	Cluster string `json:"cluster,omitempty"`

	// Gateways the routes may attach to.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Gateways []GatewayGrant `json:"gateways"`

	// Hostnames the routes may match: a name ("a.example.com"), a wildcard that grants every
	// name under a domain and wildcards under it ("*.example.com"), or "*" for any, which alone
	// grants a policy that sets no hostnames (it takes every hostname its listener takes).
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*|(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
	Hostnames []string `json:"hostnames"`

	// PathPrefixes the routes may match: a policy's pathPrefix must be one of them or lie
	// under one, segment by segment ("/team-a" grants "/team-a/x", not "/team-ab").
	// +optional
	// +listType=set
	// +kubebuilder:default={"/"}
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:items:Pattern=`^/[^\s]*$`
	PathPrefixes []string `json:"pathPrefixes,omitempty"`
}

// GatewayGrant names Gateways in the traffic cluster.
type GatewayGrant struct {
	// Namespace of the Gateway, "*" for any.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`
	Namespace string `json:"namespace"`

	// Name of the Gateway, "*" for any in Namespace.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
	Name string `json:"name"`
}

// NamespaceGrant is the hub admin's grant of members and traffic to hub namespaces (as Open
// Cluster Management's ManagedClusterSetBinding binds a namespace to clusters). A RayService
// is placed only on members granted to its namespace, and its policy's traffic is routed only
// where granted; without any grant a namespace gets nothing. Placements and routes made before
// a grant was required are kept, with a warning condition, and never extended.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nsg,categories=rayfleet
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaces`
// +kubebuilder:printcolumn:name="Selector",type=string,JSONPath=`.spec.namespaceSelector`,priority=1
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.spec.members.clusterNames`
// +kubebuilder:printcolumn:name="Member Selector",type=string,JSONPath=`.spec.members.clusterSelector`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespaceGrant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what is granted, and to which namespaces.
	// +required
	Spec NamespaceGrantSpec `json:"spec"`
}

// NamespaceGrantList is a list of NamespaceGrants.
// +kubebuilder:object:root=true
type NamespaceGrantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the NamespaceGrants.
	Items []NamespaceGrant `json:"items"`
}
