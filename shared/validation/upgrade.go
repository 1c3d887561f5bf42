package validation

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Creator kinds KubeRay records in the ray.io/originated-from-crd label.
const (
	originRayService = "RayService"
	originRayJob     = "RayJob"
)

// RayClusterUpgradeOptions checks spec.upgradeStrategy: its type must be Recreate or None, and it
// may only be set on a cluster a user created directly, because a RayService or RayJob that owns a
// cluster upgrades it by replacing the whole cluster. Like KubeRay, the owner is known from the
// ray.io/originated-from-crd label alone (owner references are not consulted).
func RayClusterUpgradeOptions(rc *rayv1.RayCluster) error {
	strategy := rc.Spec.UpgradeStrategy
	if strategy == nil || strategy.Type == nil {
		return nil
	}
	path := field.NewPath("spec", "upgradeStrategy", "type")
	switch *strategy.Type {
	case rayv1.RayClusterRecreate, rayv1.RayClusterUpgradeNone:
	default:
		return field.NotSupported(path, *strategy.Type,
			[]rayv1.RayClusterUpgradeType{rayv1.RayClusterRecreate, rayv1.RayClusterUpgradeNone})
	}
	if creator := rc.Labels[labels.OriginatedFromCRD]; creator == originRayService || creator == originRayJob {
		return field.Invalid(path, *strategy.Type, "must not be set on a RayCluster created by a "+creator+
			" (label "+labels.OriginatedFromCRD+"="+creator+"), which upgrades by replacing the whole cluster")
	}
	return nil
}
