package rayservice

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
)

func TestRunningReplicas(t *testing.T) {
	rc := raybuilder.MakeRayCluster("svc-abcde", "ns").WorkerGroup("cpu", 2, 0, 5).WorkerGroup("gpu", 2, 0, 5).Obj()
	rc.Spec.WorkerGroupSpecs[1].NumOfHosts = 2
	worker := func(name, group string) *raybuilder.PodWrapper {
		return raybuilder.MakePod(name, "ns").WorkerOf("svc-abcde", group)
	}
	deleting := worker("cpu-d", "cpu").Ready().Obj()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	pods := []corev1.Pod{
		*worker("cpu-1", "cpu").Ready().Obj(),
		*worker("cpu-2", "cpu").Running().Obj(), // running, not ready
		*deleting,
		*worker("gpu-1a", "gpu").Ready().Obj(), // one multi-host replica: two Pods
		*worker("gpu-1b", "gpu").Ready().Obj(),
		*worker("gpu-2a", "gpu").Obj(), // pending
		*worker("old-1", "removed-group").Ready().Obj(),
		*worker("cpu-ended", "cpu").Phase(corev1.PodFailed).Obj(),
		*raybuilder.MakePod("head", "ns").HeadOf("svc-abcde").Ready().Obj(),
	}
	serve := map[string]int32{"app/Model": 3}
	tests := []struct {
		name    string
		current string
		pods    []corev1.Pod
		serve   map[string]int32
		read    bool
		want    string
	}{
		{name: "Pods counted per group of the spec; Serve as read", pods: pods, serve: serve, read: true,
			want: `{"workers":{"cpu":1,"gpu":2},"serve":{"app/Model":3},"held":{"cpu":3,"gpu":3}}`},
		{name: "no Pods yet, Serve read with no applications", read: true, serve: map[string]int32{}, want: `{}`},
		{name: "Serve not read: its recorded counts stand, the workers' move",
			current: `{"serve":{"app/Model":2}}`, pods: pods,
			want: `{"workers":{"cpu":1,"gpu":2},"serve":{"app/Model":2},"held":{"cpu":3,"gpu":3}}`},
		{name: "Serve not read, nothing recorded", pods: pods, want: `{"workers":{"cpu":1,"gpu":2},"held":{"cpu":3,"gpu":3}}`},
		{name: "Serve not read, recorded value unreadable: dropped", current: `{"serve":{"a/b":-1}}`, want: `{}`},
		{name: "a read replaces what was recorded", current: `{"serve":{"app/Model":2,"gone/D":1}}`, serve: serve, read: true,
			want: `{"serve":{"app/Model":3}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runningReplicas(tt.current, rc, tt.pods, tt.serve, tt.read)
			if err != nil || got != tt.want {
				t.Errorf("runningReplicas() = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestServeRunning(t *testing.T) {
	replicas := func(states ...string) []dashboard.ReplicaDetails {
		out := make([]dashboard.ReplicaDetails, 0, len(states))
		for _, s := range states {
			out = append(out, dashboard.ReplicaDetails{State: s})
		}
		return out
	}
	details := &dashboard.ServeDetails{Applications: map[string]dashboard.ApplicationDetails{
		"llm": {Deployments: map[string]dashboard.DeploymentDetails{
			"Model": {TargetNumReplicas: 4, Replicas: replicas(dashboard.ReplicaStateRunning, dashboard.ReplicaStateRunning,
				dashboard.ReplicaStateStarting, dashboard.ReplicaStateStopping)},
			"Router": {TargetNumReplicas: 1, Replicas: replicas(dashboard.ReplicaStateRunning)},
		}},
		"batch": {Deployments: map[string]dashboard.DeploymentDetails{
			"Worker": {TargetNumReplicas: 2, Replicas: replicas(dashboard.ReplicaStateRecovering, dashboard.ReplicaStatePendingMigration)},
			"Idle":   {},
		}},
		"empty": {},
	}}
	want := map[string]int32{"llm/Model": 2, "llm/Router": 1}
	if diff := cmp.Diff(want, serveRunning(details)); diff != "" {
		t.Errorf("serveRunning (-want +got):\n%s", diff)
	}
	if got := serveRunning(&dashboard.ServeDetails{}); len(got) != 0 {
		t.Errorf("no applications: %v", got)
	}
}
