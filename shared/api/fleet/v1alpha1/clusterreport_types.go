package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterReportName is the name of the one ClusterReport per member: the spoke writes only
// this object and the hub reads only it, so neither has to list.
const ClusterReportName = "local"

// ClusterReportStatus is the member's health and capacity as its spoke agent last saw them.
type ClusterReportStatus struct {
	// ObservedGeneration is the generation the report was written for; a ClusterReport has no
	// spec, so it only shows the report was written at all.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: AgentReady, with reasons saying what the agent is waiting for.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// HeartbeatTime is when the spoke last wrote the report; the hub's AgentReady goes False
	// when it grows older than the hub's heartbeat timeout.
	// +required
	HeartbeatTime metav1.Time `json:"heartbeatTime"`

	// AgentVersion is the spoke agent's version.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`

	// KubernetesVersion is the member API server's version (its git version, e.g. v1.36.1).
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// PodSecurityLevel is the Pod Security level the member enforces on the namespaces the hub
	// creates there (the spoke's --pod-security-level, the spoke chart's
	// hubPolicy.minPodSecurityLevel). The hub places a RayService only where its Pods pass it.
	// +optional
	// +kubebuilder:validation:Enum=privileged;baseline;restricted
	PodSecurityLevel string `json:"podSecurityLevel,omitempty"`

	// Capacity is the member's allocatable and free resources.
	// +optional
	Capacity ClusterCapacity `json:"capacity,omitempty"`

	// Nodes counts the member's Nodes.
	// +optional
	Nodes NodeCounts `json:"nodes,omitempty"`

	// Workloads counts the member's Ray objects.
	// +optional
	Workloads WorkloadCounts `json:"workloads,omitempty"`
}

// ClusterReport is the spoke agent's report of its member cluster, read by the hub. It lives on
// the member, is cluster-scoped, is named ClusterReportName and holds everything in its status.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=crep,categories=rayfleet
// +kubebuilder:printcolumn:name="Heartbeat",type=date,JSONPath=`.status.heartbeatTime`
// +kubebuilder:printcolumn:name="Nodes Ready",type=integer,JSONPath=`.status.nodes.ready`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes.total`,priority=1
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.status.agentVersion`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'local'",message="the ClusterReport must be named 'local'"
type ClusterReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status is the report.
	// +optional
	Status ClusterReportStatus `json:"status,omitempty"`
}

// ClusterReportList is a list of ClusterReports.
// +kubebuilder:object:root=true
type ClusterReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ClusterReports.
	Items []ClusterReport `json:"items"`
}
