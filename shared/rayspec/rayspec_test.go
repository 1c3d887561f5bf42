package rayspec

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestPredicates(t *testing.T) {
	v2 := rayv1.AutoscalerVersionV2
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"autoscaling unset", Autoscaling(&rayv1.RayClusterSpec{}), false},
		{"autoscaling on", Autoscaling(&rayv1.RayClusterSpec{EnableInTreeAutoscaling: ptr.To(true)}), true},
		{"autoscaling nil spec", Autoscaling(nil), false},
		{"autoscaler v2 by version", AutoscalerV2(&rayv1.RayClusterSpec{AutoscalerOptions: &rayv1.AutoscalerOptions{Version: &v2}}), true},
		{"autoscaler v1 by default", AutoscalerV2(&rayv1.RayClusterSpec{AutoscalerOptions: &rayv1.AutoscalerOptions{}}), false},
		{"gcs ft by options", GCSFaultTolerance(&rayv1.RayClusterSpec{GcsFaultToleranceOptions: &rayv1.GcsFaultToleranceOptions{}}, nil), true},
		{"gcs ft by legacy annotation", GCSFaultTolerance(&rayv1.RayClusterSpec{}, map[string]string{labels.FTEnabled: "TRUE"}), true},
		{"gcs ft annotation false", GCSFaultTolerance(&rayv1.RayClusterSpec{}, map[string]string{labels.FTEnabled: "false"}), false},
		{"token auth", TokenAuth(&rayv1.RayClusterSpec{AuthOptions: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}}), true},
		{"auth disabled", TokenAuth(&rayv1.RayClusterSpec{AuthOptions: &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled}}), false},
		{"k8s token auth", K8sTokenAuth(&rayv1.AuthOptions{EnableK8sTokenAuth: ptr.To(true)}), true},
		{"k8s token auth unset", K8sTokenAuth(nil), false},
		{"single host", MultiHost(&rayv1.RayClusterSpec{WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{NumOfHosts: 1}}}), false},
		{"multi host", MultiHost(&rayv1.RayClusterSpec{WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{NumOfHosts: 1}, {NumOfHosts: 4}}}), true},
		{"managed by us", ManagedByOther(ptr.To(labels.ControllerName)), false},
		{"managed by nobody", ManagedByOther(nil), false},
		{"managed by MultiKueue", ManagedByOther(ptr.To("kueue.x-k8s.io/multikueue")), true},
		{"suspended", Suspended(&rayv1.RayClusterSpec{Suspend: ptr.To(true)}), true},
		{"not suspended", Suspended(&rayv1.RayClusterSpec{}), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}
