package rayspec

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"
)

// serviceSpec is a RayService spec with the given upgrade strategy; a nil strategy type leaves
// the strategy present but its type unset.
func serviceSpec(strategy bool, typ *rayv1.RayServiceUpgradeType, opts *rayv1.ClusterUpgradeOptions) *rayv1.RayServiceSpec {
	spec := &rayv1.RayServiceSpec{}
	if strategy {
		spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: typ, ClusterUpgradeOptions: opts}
	}
	return spec
}

func TestRayServiceUpgradePredicates(t *testing.T) {
	incremental := ptr.To(rayv1.RayServiceNewClusterWithIncrementalUpgrade)
	newCluster := ptr.To(rayv1.RayServiceNewCluster)
	none := ptr.To(rayv1.RayServiceUpgradeNone)
	unknown := ptr.To(rayv1.RayServiceUpgradeType("Blue"))
	tests := []struct {
		name                 string
		spec                 *rayv1.RayServiceSpec
		incremental          bool
		zeroDowntimeEnvOn    bool // ZeroDowntime with ENABLE_ZERO_DOWNTIME unset or true
		zeroDowntimeEnvFalse bool // ZeroDowntime with ENABLE_ZERO_DOWNTIME=false
	}{
		{name: "nil spec", spec: nil, zeroDowntimeEnvOn: true},
		{name: "no strategy", spec: serviceSpec(false, nil, nil), zeroDowntimeEnvOn: true},
		// KubeRay dereferences the type without a nil check here; an unset type is "no choice".
		{name: "strategy without type", spec: serviceSpec(true, nil, nil), zeroDowntimeEnvOn: true},
		{name: "NewCluster overrides the env", spec: serviceSpec(true, newCluster, nil), zeroDowntimeEnvOn: true, zeroDowntimeEnvFalse: true},
		{name: "incremental", spec: serviceSpec(true, incremental, nil), incremental: true, zeroDowntimeEnvOn: true, zeroDowntimeEnvFalse: true},
		{name: "None overrides the env", spec: serviceSpec(true, none, nil)},
		{name: "unknown type is not zero-downtime", spec: serviceSpec(true, unknown, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IncrementalUpgrade(tt.spec); got != tt.incremental {
				t.Errorf("IncrementalUpgrade = %v, want %v", got, tt.incremental)
			}
			if got := ZeroDowntime(tt.spec, true); got != tt.zeroDowntimeEnvOn {
				t.Errorf("ZeroDowntime(env on) = %v, want %v", got, tt.zeroDowntimeEnvOn)
			}
			if got := ZeroDowntime(tt.spec, false); got != tt.zeroDowntimeEnvFalse {
				t.Errorf("ZeroDowntime(env false) = %v, want %v", got, tt.zeroDowntimeEnvFalse)
			}
		})
	}
}

func TestUpgradeOptions(t *testing.T) {
	opts := &rayv1.ClusterUpgradeOptions{GatewayClassName: "gw"}
	tests := []struct {
		name string
		spec *rayv1.RayServiceSpec
		want *rayv1.ClusterUpgradeOptions
	}{
		{name: "nil spec", spec: nil},
		{name: "no strategy", spec: serviceSpec(false, nil, nil)},
		{name: "strategy without options", spec: serviceSpec(true, ptr.To(rayv1.RayServiceNewClusterWithIncrementalUpgrade), nil)},
		{name: "options, whatever the type", spec: serviceSpec(true, nil, opts), want: opts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UpgradeOptions(tt.spec); got != tt.want {
				t.Errorf("UpgradeOptions = %v, want %v", got, tt.want)
			}
		})
	}
}
