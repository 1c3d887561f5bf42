package raystatus

import (
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var now = metav1.NewTime(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))

func TestRayServiceChanged(t *testing.T) {
	base := func() *rayv1.RayServiceStatuses {
		st := &rayv1.RayServiceStatuses{
			ObservedGeneration: 1,
			LastUpdateTime:     ptr.To(metav1.NewTime(now.Add(-time.Hour))),
			ActiveServiceStatus: rayv1.RayServiceStatus{RayClusterName: "a", TrafficRoutedPercent: ptr.To[int32](100),
				Applications:     map[string]rayv1.AppStatus{"app": {Status: "RUNNING"}},
				RayClusterStatus: rayv1.RayClusterStatus{State: rayv1.Ready, LastUpdateTime: ptr.To(metav1.NewTime(now.Add(-time.Hour)))}},
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: now})
		return st
	}
	tests := []struct {
		name   string
		mutate func(st *rayv1.RayServiceStatuses)
		want   bool
	}{
		{"identical", func(*rayv1.RayServiceStatuses) {}, false},
		{"lastUpdateTime only", func(st *rayv1.RayServiceStatuses) { st.LastUpdateTime = ptr.To(now) }, false},
		{"embedded cluster lastUpdateTime only", func(st *rayv1.RayServiceStatuses) {
			st.ActiveServiceStatus.RayClusterStatus.LastUpdateTime = ptr.To(now)
		}, false},
		// KubeRay compares the pointers, so an equal value counts as a change.
		{"same traffic, another pointer", func(st *rayv1.RayServiceStatuses) {
			st.ActiveServiceStatus.TrafficRoutedPercent = ptr.To[int32](100)
		}, false},
		{"empty and missing deployments", func(st *rayv1.RayServiceStatuses) {
			st.ActiveServiceStatus.Applications["app"] = rayv1.AppStatus{Status: "RUNNING", Deployments: map[string]rayv1.ServeDeploymentStatus{}}
		}, false},
		{"traffic moved", func(st *rayv1.RayServiceStatuses) { st.ActiveServiceStatus.TrafficRoutedPercent = ptr.To[int32](90) }, true},
		{"observedGeneration", func(st *rayv1.RayServiceStatuses) { st.ObservedGeneration = 2 }, true},
		{"endpoints", func(st *rayv1.RayServiceStatuses) { st.NumServeEndpoints = 3 }, true},
		{"application status", func(st *rayv1.RayServiceStatuses) {
			st.ActiveServiceStatus.Applications["app"] = rayv1.AppStatus{Status: "DEPLOYING"}
		}, true},
		{"embedded cluster state", func(st *rayv1.RayServiceStatuses) { st.ActiveServiceStatus.RayClusterStatus.State = rayv1.Suspended }, true},
		{"condition message", func(st *rayv1.RayServiceStatuses) { st.Conditions[0].Message = "x" }, true},
		{"pending cluster named", func(st *rayv1.RayServiceStatuses) { st.PendingServiceStatus.RayClusterName = "p" }, true},
		{"serviceStatus", func(st *rayv1.RayServiceStatuses) { st.ServiceStatus = rayv1.Running }, true},
		{"target capacity", func(st *rayv1.RayServiceStatuses) { st.PendingServiceStatus.TargetCapacity = ptr.To[int32](0) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev, next := base(), base()
			tt.mutate(next)
			if got := RayServiceChanged(prev, next); got != tt.want {
				t.Fatalf("RayServiceChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRayServiceChangedNil(t *testing.T) {
	st := &rayv1.RayServiceStatuses{}
	if RayServiceChanged(nil, nil) || !RayServiceChanged(nil, st) || !RayServiceChanged(st, nil) {
		t.Error("RayServiceChanged mishandles nil")
	}
}
