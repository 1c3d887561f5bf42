package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The join contract between `rayfleet join` and the hub: the hub's kubeconfig provider engages
// every Secret in the hub namespace labelled KubeconfigSecretLabel=true, names the member after
// the Secret and reads the kubeconfig from DefaultKubeconfigKey.
const (
	// DefaultKubeconfigKey is the Secret key read when KubeconfigSecretRef.Key is empty; it is
	// the only key the hub reads.
	DefaultKubeconfigKey = "kubeconfig"
	// KubeconfigSecretLabel, with the value "true", marks a Secret in the hub namespace as a
	// member's kubeconfig. The value is the multicluster-runtime kubeconfig provider's default
	// label, so Secrets written for that provider elsewhere are recognised too.
	KubeconfigSecretLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig"
)

// MemberClusterSpec says how the hub reaches a member and what may run there.
type MemberClusterSpec struct {
	// KubeconfigSecretRef names the Secret, in the hub's namespace, holding the kubeconfig the
	// hub uses to reach the member.
	// +required
	KubeconfigSecretRef KubeconfigSecretRef `json:"kubeconfigSecretRef"`

	// Taints keep RayServices off the member unless their PlacementPolicy tolerates them, with
	// the same matching rules as Node taints.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be NoSchedule, PreferNoSchedule or NoExecute"
	Taints []corev1.Taint `json:"taints,omitempty"`

	// ServeAddresses are the serve addresses the member may report for the hub to route to.
	// Without them, any address is taken but those never allowed (loopback, link-local,
	// unspecified, names resolving inside the traffic cluster, its own Pod and Service ranges),
	// and the MemberCluster carries a warning condition.
	// +optional
	ServeAddresses *ServeAddressRanges `json:"serveAddresses,omitempty"`

	// CapacityLimits is the most the hub believes of the member's capacity, per resource name
	// (cpu, memory, nvidia.com/gpu, ...). The member's spoke reports its own capacity, so a
	// compromised member could claim thousands of free GPUs and draw new RayServices away from
	// the others; placement reads its reported free capacity as at most these. A resource not
	// named is taken as reported; at most 16 are named, none negative. The status keeps what the
	// member reported, and the CapacityBounded condition says when that exceeds these limits.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="capacity limits must not be negative"
	CapacityLimits corev1.ResourceList `json:"capacityLimits,omitempty"`
}

// ServeAddressRanges bounds a member's serve addresses; an address must fall in one entry.
type ServeAddressRanges struct {
	// CIDRs its IP addresses must fall in (e.g. the member's load balancer range).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	CIDRs []string `json:"cidrs,omitempty"`

	// Domains its DNS names must be, or be under (e.g. us.example.com).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	Domains []string `json:"domains,omitempty"`
}

// KubeconfigSecretRef names a key of a Secret in the hub's namespace (rayfleet-system unless the
// hub is told otherwise); a namespace is deliberately absent so that a MemberCluster cannot
// point the hub at credentials elsewhere.
type KubeconfigSecretRef struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key of the kubeconfig in the Secret's data.
	// +optional
	// +kubebuilder:default=kubeconfig
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// MemberClusterStatus is the hub's view of a member: its own conditions plus a mirror of the
// member's ClusterReport.
type MemberClusterStatus struct {
	// ObservedGeneration is the generation the conditions were computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Joined, Reachable, AgentReady and Ready; PodSecurityEnforced,
	// ServeAddressesBounded, CapacityBounded and CredentialsValid, which do not count towards Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Capacity is the member's allocatable and free resources, from its ClusterReport.
	// +optional
	Capacity *ClusterCapacity `json:"capacity,omitempty"`

	// Nodes counts the member's Nodes, from its ClusterReport.
	// +optional
	Nodes *NodeCounts `json:"nodes,omitempty"`

	// Workloads counts the member's Ray objects, from its ClusterReport.
	// +optional
	Workloads *WorkloadCounts `json:"workloads,omitempty"`

	// AgentVersion is the version of the member's spoke agent.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`

	// KubernetesVersion is the member API server's version.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// PodSecurityLevel is the Pod Security level the member enforces on the namespaces the hub
	// creates there, from its ClusterReport; empty when its spoke reports none, which the hub
	// takes for baseline.
	// +optional
	// +kubebuilder:validation:Enum=privileged;baseline;restricted
	PodSecurityLevel string `json:"podSecurityLevel,omitempty"`

	// UnenforcedNamespaces are the namespaces holding the hub's copies that carry no
	// pod-security.kubernetes.io/enforce label, because the hub made them before it labelled
	// every namespace it creates, and that the hub cannot label: Pods running there would break
	// the member's level. Nothing in them is moved or deleted; the PodSecurityEnforced condition
	// says so.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	UnenforcedNamespaces []UnenforcedNamespace `json:"unenforcedNamespaces,omitempty"`

	// LastHeartbeatTime is the heartbeat of the member's ClusterReport last mirrored, on the
	// member's clock.
	// +optional
	LastHeartbeatTime *metav1.Time `json:"lastHeartbeatTime,omitempty"`

	// LastHeartbeatObservedTime is when the hub saw lastHeartbeatTime change, on the hub's
	// clock. Freshness (AgentReady, placement's reservations, the heartbeat-age metric) is
	// judged by it, so that a member whose clock is off is judged like any other; a hub that
	// restarts or takes over the lead counts from its first observation.
	// +optional
	LastHeartbeatObservedTime *metav1.Time `json:"lastHeartbeatObservedTime,omitempty"`

	// FirstReadyTime is when the member was first Ready. A Ready condition that turned True
	// after it marks a member back from an outage, which waits for its placement policies'
	// failover.readmitSeconds before it gets new work.
	// +optional
	FirstReadyTime *metav1.Time `json:"firstReadyTime,omitempty"`

	// Credentials describes the bootstrap credential of the member's kubeconfig Secret.
	// +optional
	Credentials *MemberCredentials `json:"credentials,omitempty"`
}

// MemberCredentials is what the hub reads of a member's bootstrap credential, for display; the
// member's API server remains the judge of it.
type MemberCredentials struct {
	// BootstrapExpiry is when the bootstrap token expires (its JWT exp claim, unverified),
	// compared with the hub's clock; absent when the credential carries no expiry. Re-run
	// `rayfleet join` before then.
	// +optional
	BootstrapExpiry *metav1.Time `json:"bootstrapExpiry,omitempty"`
}

// UnenforcedNamespace is a namespace on a member that the hub cannot label with the member's
// Pod Security level.
type UnenforcedNamespace struct {
	// Name of the namespace.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Violations are Pod Security admission's answers to labelling the namespace: each names a
	// Pod (and how many others break the same checks) and the checks it fails, e.g.
	// `head-x (and 2 other pods): privileged, host namespaces`.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=1024
	Violations []string `json:"violations,omitempty"`
}

// ClusterCapacity is what a member can run, by resource name: cpu, memory and every extended
// resource (nvidia.com/gpu, google.com/tpu, ...) its Nodes advertise.
type ClusterCapacity struct {
	// Allocatable sums the allocatable resources of the schedulable, Ready Nodes.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// Free is Allocatable minus the requests of the non-terminal Pods bound to those Nodes.
	// +optional
	Free corev1.ResourceList `json:"free,omitempty"`
}

// NodeCounts counts a member's Nodes.
type NodeCounts struct {
	// Total is the number of Nodes.
	// +kubebuilder:validation:Minimum=0
	Total int32 `json:"total"`

	// Ready is the number of Nodes whose Ready condition is True.
	// +kubebuilder:validation:Minimum=0
	Ready int32 `json:"ready"`
}

// WorkloadCounts counts the Ray objects on a member.
type WorkloadCounts struct {
	// RayClusters is the number of RayClusters, those of RayServices included.
	// +kubebuilder:validation:Minimum=0
	RayClusters int32 `json:"rayClusters"`

	// RayServices is the number of RayServices.
	// +kubebuilder:validation:Minimum=0
	RayServices int32 `json:"rayServices"`

	// RayServicesReady is the number of RayServices whose Ready condition is True.
	// +kubebuilder:validation:Minimum=0
	RayServicesReady int32 `json:"rayServicesReady"`
}

// MemberCluster is a cluster the hub may place RayServices on. Its name identifies the member
// everywhere (bindings, policies, the CLI), hence a DNS label.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mc,categories=rayfleet
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reachable",type=string,JSONPath=`.status.conditions[?(@.type=="Reachable")].status`
// +kubebuilder:printcolumn:name="AgentReady",type=string,JSONPath=`.status.conditions[?(@.type=="AgentReady")].status`
// +kubebuilder:printcolumn:name="Heartbeat",type=date,JSONPath=`.status.lastHeartbeatObservedTime`
// +kubebuilder:printcolumn:name="Kubernetes",type=string,JSONPath=`.status.kubernetesVersion`,priority=1
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.status.agentVersion`,priority=1
// +kubebuilder:printcolumn:name="Credentials",type=string,JSONPath=`.status.conditions[?(@.type=="CredentialsValid")].reason`,priority=1
// +kubebuilder:printcolumn:name="PodSecurity",type=string,JSONPath=`.status.podSecurityLevel`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a MemberCluster name must be a DNS label: at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit"
type MemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is how the hub reaches the member and what may run there.
	// +required
	Spec MemberClusterSpec `json:"spec"`

	// Status is the member's state as the hub sees it.
	// +optional
	Status MemberClusterStatus `json:"status,omitempty"`
}

// MemberClusterList is a list of MemberClusters.
// +kubebuilder:object:root=true
type MemberClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MemberClusters.
	Items []MemberCluster `json:"items"`
}
