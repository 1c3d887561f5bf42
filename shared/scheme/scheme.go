// Package scheme builds the runtime.Scheme every RayFleet binary and test uses: the built-in
// Kubernetes kinds, KubeRay's ray.io/v1 and Gateway API's gateway.networking.k8s.io/v1 (the
// Gateway and HTTPRoute of incremental RayService upgrades); the fleet API joins it with the
// hub issue.
package scheme

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// New returns a new scheme with the built-in kinds, ray.io/v1 and gateway.networking.k8s.io/v1.
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
	return s, nil
}
