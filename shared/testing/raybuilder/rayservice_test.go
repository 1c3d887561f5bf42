package raybuilder_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestMakeRayServiceDefaults(t *testing.T) {
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	if rs.Name != "svc" || rs.Namespace != "ns" || rs.Kind != "RayService" || rs.APIVersion != "ray.io/v1" ||
		rs.UID == "" || rs.Generation != 1 {
		t.Errorf("metadata = %+v %+v", rs.TypeMeta, rs.ObjectMeta)
	}
	if rs.Spec.ServeConfigV2 != raybuilder.RayServiceServeConfig || rs.Spec.UpgradeStrategy != nil {
		t.Errorf("spec = %+v", rs.Spec)
	}
	// The cluster is MakeRayCluster's with one worker group, so both builders agree on images,
	// versions and sizes.
	want := raybuilder.MakeRayCluster("svc", "ns").WorkerGroup(raybuilder.RayServiceWorkerGroup, 1, 0, 5).Obj().Spec
	if d := cmp.Diff(want, rs.Spec.RayClusterSpec); d != "" {
		t.Errorf("rayClusterConfig (-want +got):\n%s", d)
	}
}

func TestRayServiceOptions(t *testing.T) {
	const image = "rayproject/ray:2.53.0"
	w := raybuilder.MakeRayService("svc", "ns").
		WorkerGroup("big", 3).Replicas(0, 2).ReplicaBounds(0, 1, 4).Image(image).
		Suspend(true).Incremental(50, 20, 10).ServeConfig("applications: []").DeletionDelay(7).
		Annotation("k", "v").Active("svc-a").Pending("svc-p").Upgrading()
	rs := w.Obj()

	spec := rs.Spec.RayClusterSpec
	small, big := spec.WorkerGroupSpecs[0], spec.WorkerGroupSpecs[1]
	opts := rs.Spec.UpgradeStrategy.ClusterUpgradeOptions
	upgrading := meta.FindStatusCondition(rs.Status.Conditions, string(rayv1.UpgradeInProgress))
	checks := []struct {
		name      string
		got, want any
	}{
		{"groups", []string{small.GroupName, big.GroupName}, []string{"small", "big"}},
		{"small bounds", []int32{*small.Replicas, *small.MinReplicas, *small.MaxReplicas}, []int32{2, 1, 4}},
		{"big copies small", []int32{*big.Replicas, *big.MinReplicas, *big.MaxReplicas}, []int32{3, 0, 5}},
		{"head image", spec.HeadGroupSpec.Template.Spec.Containers[0].Image, image},
		{"worker images", []string{small.Template.Spec.Containers[0].Image, big.Template.Spec.Containers[0].Image}, []string{image, image}},
		{"suspend", ptr.Deref(spec.Suspend, false), true},
		{"autoscaling", ptr.Deref(spec.EnableInTreeAutoscaling, false), true},
		{"strategy", *rs.Spec.UpgradeStrategy.Type, rayv1.RayServiceNewClusterWithIncrementalUpgrade},
		{"upgrade options", []int32{*opts.MaxSurgePercent, *opts.StepSizePercent, *opts.IntervalSeconds}, []int32{50, 20, 10}},
		{"gateway class", opts.GatewayClassName, raybuilder.RayServiceGatewayClass},
		{"serve config", rs.Spec.ServeConfigV2, "applications: []"},
		{"deletion delay", ptr.Deref(rs.Spec.RayClusterDeletionDelaySeconds, 0), int32(7)},
		{"annotation", rs.Annotations["k"], "v"},
		{"clusters", []string{rs.Status.ActiveServiceStatus.RayClusterName, rs.Status.PendingServiceStatus.RayClusterName}, []string{"svc-a", "svc-p"}},
		{"upgrading", upgrading != nil && upgrading.Status == metav1.ConditionTrue && upgrading.Reason == string(rayv1.BothActivePendingClustersExist), true},
	}
	for _, c := range checks {
		if d := cmp.Diff(c.want, c.got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}

	// Later changes to the wrapper do not leak into objects already returned.
	w.GatewayClass("other").Strategy(rayv1.RayServiceUpgradeNone)
	if opts.GatewayClassName != raybuilder.RayServiceGatewayClass || *rs.Spec.UpgradeStrategy.Type != rayv1.RayServiceNewClusterWithIncrementalUpgrade {
		t.Errorf("Obj() shares memory with the wrapper")
	}
	if got := w.Obj().Spec.UpgradeStrategy.ClusterUpgradeOptions.GatewayClassName; got != "other" {
		t.Errorf("GatewayClass: gatewayClassName = %q, want other", got)
	}
}
