// Package v1alpha1 holds the fleet.rayfleet.io/v1alpha1 API: MemberCluster, PlacementPolicy,
// RayServiceBinding and NamespaceGrant on the hub, ClusterReport on every member. The CRDs in
// the charts are generated from these types by `make manifests`, the deep copies by `make generate`.
// It imports no other RayFleet package: hub/, spoke/ and cmd/ import it, never the reverse.
// +kubebuilder:object:generate=true
// +groupName=fleet.rayfleet.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is fleet.rayfleet.io/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "fleet.rayfleet.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this group-version. It is apimachinery's rather than
	// controller-runtime's so that importing the API pulls in no controller machinery.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds every kind of fleet.rayfleet.io/v1alpha1 to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds and their lists, plus the meta types (ListOptions,
// DeleteOptions, ...) clients send with requests for this group-version.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&MemberCluster{}, &MemberClusterList{},
		&ClusterReport{}, &ClusterReportList{},
		&PlacementPolicy{}, &PlacementPolicyList{},
		&RayServiceBinding{}, &RayServiceBindingList{},
		&NamespaceGrant{}, &NamespaceGrantList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
