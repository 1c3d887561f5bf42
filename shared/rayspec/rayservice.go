package rayspec

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
)

// upgradeType is spec.upgradeStrategy.type, or "" when either is unset.
func upgradeType(spec *rayv1.RayServiceSpec) rayv1.RayServiceUpgradeType {
	if spec == nil || spec.UpgradeStrategy == nil || spec.UpgradeStrategy.Type == nil {
		return ""
	}
	return *spec.UpgradeStrategy.Type
}

// IncrementalUpgrade reports whether the RayService upgrades by moving traffic step by step to a
// new cluster through Gateway API (upgradeStrategy.type NewClusterWithIncrementalUpgrade).
// KubeRay also requires its alpha RayServiceIncrementalUpgrade feature gate; the spoke has no
// such gate, so the spec alone decides.
func IncrementalUpgrade(spec *rayv1.RayServiceSpec) bool {
	return upgradeType(spec) == rayv1.RayServiceNewClusterWithIncrementalUpgrade
}

// UpgradeOptions returns upgradeStrategy.clusterUpgradeOptions, or nil when unset.
func UpgradeOptions(spec *rayv1.RayServiceSpec) *rayv1.ClusterUpgradeOptions {
	if spec == nil || spec.UpgradeStrategy == nil {
		return nil
	}
	return spec.UpgradeStrategy.ClusterUpgradeOptions
}

// ZeroDowntime reports whether a changed cluster spec is rolled out on a new cluster (while the
// old one keeps serving) rather than by updating the running cluster in place. An explicit
// upgradeStrategy.type decides: NewCluster and NewClusterWithIncrementalUpgrade do, None does
// not. Without one, envDefault decides: the operator's ENABLE_ZERO_DOWNTIME, true unless it
// is "false", read by the caller.
func ZeroDowntime(spec *rayv1.RayServiceSpec, envDefault bool) bool {
	switch upgradeType(spec) {
	case "":
		return envDefault
	case rayv1.RayServiceNewCluster, rayv1.RayServiceNewClusterWithIncrementalUpgrade:
		return true
	default:
		return false
	}
}
