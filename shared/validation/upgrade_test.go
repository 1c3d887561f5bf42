package validation

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestRayClusterUpgradeOptions(t *testing.T) {
	base := func() *raybuilder.RayClusterWrapper { return raybuilder.MakeRayCluster("x", "ns") }
	tests := []struct {
		name    string
		cluster *rayv1.RayCluster
		want    string
	}{
		{name: "no upgrade strategy", cluster: base().Obj()},
		{name: "None", cluster: base().UpgradeStrategy(rayv1.RayClusterUpgradeNone).Obj()},
		{name: "Recreate", cluster: base().UpgradeStrategy(rayv1.RayClusterRecreate).Obj()},
		{
			name:    "Recreate on a cluster labelled as a user's own RayCluster",
			cluster: base().UpgradeStrategy(rayv1.RayClusterRecreate).Label(labels.OriginatedFromCRD, "RayCluster").Obj(),
		},
		{
			name: "strategy without a type is ignored, even on a RayService's cluster",
			cluster: func() *rayv1.RayCluster {
				rc := base().OriginatedFrom("RayService", "svc").Obj()
				rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{}
				return rc
			}(),
		},
		{
			name:    "no strategy on a RayService's cluster",
			cluster: base().OriginatedFrom("RayService", "svc").Obj(),
		},
		{
			name:    "unknown type",
			cluster: base().UpgradeStrategy("InvalidStrategy").Obj(),
			want:    `spec.upgradeStrategy.type: Unsupported value: "InvalidStrategy": supported values: "Recreate", "None"`,
		},
		{
			name:    "unknown type is reported before the owner",
			cluster: base().UpgradeStrategy("RollingUpdate").OriginatedFrom("RayJob", "job").Obj(),
			want:    `spec.upgradeStrategy.type: Unsupported value: "RollingUpdate": supported values: "Recreate", "None"`,
		},
		{
			name:    "Recreate on a RayJob's cluster",
			cluster: base().UpgradeStrategy(rayv1.RayClusterRecreate).OriginatedFrom("RayJob", "job").Obj(),
			want: `spec.upgradeStrategy.type: Invalid value: "Recreate": must not be set on a RayCluster created by a RayJob ` +
				`(label ray.io/originated-from-crd=RayJob), which upgrades by replacing the whole cluster`,
		},
		{
			name:    "None on a RayService's cluster",
			cluster: base().UpgradeStrategy(rayv1.RayClusterUpgradeNone).OriginatedFrom("RayService", "svc").Obj(),
			want: `spec.upgradeStrategy.type: Invalid value: "None": must not be set on a RayCluster created by a RayService ` +
				`(label ray.io/originated-from-crd=RayService), which upgrades by replacing the whole cluster`,
		},
		{
			name:    "an unknown creator counts as the user",
			cluster: base().UpgradeStrategy(rayv1.RayClusterRecreate).Label(labels.OriginatedFromCRD, "RayCronJob").Obj(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, RayClusterUpgradeOptions(tt.cluster), tt.want)
		})
	}
}
