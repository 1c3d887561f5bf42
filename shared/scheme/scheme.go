// Package scheme builds the runtime.Scheme every RayFleet binary and test uses: the built-in
// Kubernetes kinds, KubeRay's ray.io/v1, Gateway API's gateway.networking.k8s.io/v1 (the
// Gateway and HTTPRoute of incremental RayService upgrades), Multi-Cluster Services'
// multicluster.x-k8s.io/v1alpha1 (the ServiceExport of a member's serve Service) and
// RayFleet's own fleet.rayfleet.io/v1alpha1. Hub and spoke share one scheme: each uses part of it (the spoke
// writes ClusterReports, the hub reads them), and one scheme keeps their clients alike.
// Of the repository it imports only the fleet API; like all of shared/, never hub/, spoke/ or
// cmd/.
package scheme

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// New returns a new scheme with the built-in kinds, ray.io/v1, gateway.networking.k8s.io/v1,
// multicluster.x-k8s.io/v1alpha1 and fleet.rayfleet.io/v1alpha1.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding client-go types to the scheme: %w", err)
	}
	if err := rayv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding ray.io/v1 to the scheme: %w", err)
	}
	if err := gwv1.Install(s); err != nil {
		return nil, fmt.Errorf("adding gateway.networking.k8s.io/v1 to the scheme: %w", err)
	}
	if err := mcsv1alpha1.Install(s); err != nil {
		return nil, fmt.Errorf("adding %s to the scheme: %w", mcsv1alpha1.GroupVersion, err)
	}
	if err := fleetv1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding %s to the scheme: %w", fleetv1alpha1.GroupVersion, err)
	}
	return s, nil
}
