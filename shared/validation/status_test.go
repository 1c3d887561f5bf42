package validation

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRayClusterStatus(t *testing.T) {
	cond := func(t rayv1.RayClusterConditionType, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: string(t), Status: s, Reason: "Test"}
	}
	tests := []struct {
		name       string
		conditions []metav1.Condition
		want       string
	}{
		{name: "no conditions"},
		{name: "only suspending", conditions: []metav1.Condition{cond(rayv1.RayClusterSuspending, metav1.ConditionTrue)}},
		{name: "only suspended", conditions: []metav1.Condition{cond(rayv1.RayClusterSuspended, metav1.ConditionTrue)}},
		{
			name: "suspending true, suspended false",
			conditions: []metav1.Condition{
				cond(rayv1.RayClusterSuspending, metav1.ConditionTrue), cond(rayv1.RayClusterSuspended, metav1.ConditionFalse),
			},
		},
		{
			name: "both false",
			conditions: []metav1.Condition{
				cond(rayv1.RayClusterSuspending, metav1.ConditionFalse), cond(rayv1.RayClusterSuspended, metav1.ConditionFalse),
			},
		},
		{
			name: "both true",
			conditions: []metav1.Condition{
				cond(rayv1.RayClusterSuspending, metav1.ConditionTrue), cond(rayv1.RayClusterSuspended, metav1.ConditionTrue),
			},
			want: "status.conditions: Forbidden: RayClusterSuspending and RayClusterSuspended must not both be True",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, RayClusterStatus(&rayv1.RayClusterStatus{Conditions: tt.conditions}), tt.want)
		})
	}
}
