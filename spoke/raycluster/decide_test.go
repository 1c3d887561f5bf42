package raycluster

import (
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func rayPod(name string, phase corev1.PodPhase, policy corev1.RestartPolicy, term *corev1.ContainerStateTerminated) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{{Name: "ray"}, {Name: "sidecar"}}},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "sidecar"}, // statuses are not ordered like containers
			{Name: "ray", State: corev1.ContainerState{Terminated: term}},
		}},
	}
}

func TestShouldDeletePod(t *testing.T) {
	exited := &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
	tests := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"failed", rayPod("p", corev1.PodFailed, corev1.RestartPolicyAlways, nil), true},
		{"succeeded", rayPod("p", corev1.PodSucceeded, corev1.RestartPolicyAlways, nil), true},
		{"running and healthy", rayPod("p", corev1.PodRunning, corev1.RestartPolicyNever, nil), false},
		{"pending", rayPod("p", corev1.PodPending, corev1.RestartPolicyNever, nil), false},
		{"ray exited, never restarts", rayPod("p", corev1.PodRunning, corev1.RestartPolicyNever, exited), true},
		{"ray exited, restarts always", rayPod("p", corev1.PodRunning, corev1.RestartPolicyAlways, exited), false},
		{"ray exited, restarts on failure", rayPod("p", corev1.PodRunning, corev1.RestartPolicyOnFailure, exited), false},
		{"no container statuses yet", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray"}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := shouldDeletePod(&tt.pod, rayv1.WorkerNode)
			if got != tt.want {
				t.Fatalf("shouldDeletePod = %v (%q), want %v", got, why, tt.want)
			}
			if got && why == "" {
				t.Fatal("a deletion needs a reason for the event")
			}
		})
	}
}

func withIndex(name string, idx string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labels.WorkerReplicaIndex: idx}}}
}

func TestFreeIndices(t *testing.T) {
	tests := []struct {
		name string
		pods []corev1.Pod
		n    int
		want []int
	}{
		{"empty group", nil, 3, []int{0, 1, 2}},
		{"fills the hole first", []corev1.Pod{withIndex("a", "0"), withIndex("b", "2")}, 2, []int{1, 3}},
		{"ignores bad labels", []corev1.Pod{withIndex("a", "x"), withIndex("b", "0")}, 1, []int{1}},
		{"none wanted", []corev1.Pod{withIndex("a", "0")}, 0, []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := freeIndices(tt.pods, tt.n)
			if len(got) != len(tt.want) {
				t.Fatalf("freeIndices = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("freeIndices = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestScaleDownAllowed(t *testing.T) {
	tests := []struct {
		name       string
		autoscaler *bool
		random     bool
		want       bool
	}{
		{"no autoscaler", nil, false, true},
		{"autoscaler off", ptr.To(false), false, true},
		{"autoscaler decides", ptr.To(true), false, false},
		{"autoscaler with random delete", ptr.To(true), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &rayv1.RayCluster{Spec: rayv1.RayClusterSpec{EnableInTreeAutoscaling: tt.autoscaler}}
			if got := scaleDownAllowed(rc, tt.random); got != tt.want {
				t.Fatalf("scaleDownAllowed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPickForScaleDownPrefersNotReadyThenNewest(t *testing.T) {
	t0 := time.Unix(1000, 0)
	mk := func(name string, age time.Duration, ready bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age))}}
		p.Status.Phase = corev1.PodRunning
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		return p
	}
	pods := []corev1.Pod{mk("old-ready", time.Hour, true), mk("new-ready", time.Minute, true), mk("pending", 2*time.Hour, false)}
	got := pickForScaleDown(pods, 2)
	if len(got) != 2 || got[0].Name != "pending" || got[1].Name != "new-ready" {
		t.Fatalf("picked %s, %s; want pending, new-ready", got[0].Name, got[1].Name)
	}
	if all := pickForScaleDown(pods, 5); len(all) != 3 {
		t.Fatalf("asking for more than exist returns all, got %d", len(all))
	}
}

func TestHighestReplicas(t *testing.T) {
	groups := map[string][]corev1.Pod{
		"g-a": {withIndex("a0", "0"), withIndex("a1", "0")},
		"g-b": {withIndex("b0", "2"), withIndex("b1", "2")},
		"g-c": {withIndex("c0", "1"), withIndex("c1", "1")},
	}
	got := highestReplicas(groups, 1)
	if len(got) != 2 || got[0].Name != "b0" || got[1].Name != "b1" {
		t.Fatalf("want both hosts of the highest replica, got %v", got)
	}
}
