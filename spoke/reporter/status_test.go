package reporter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestBuildStatus(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(10 * time.Second))
	previous := fleetv1alpha1.ClusterReportStatus{
		HeartbeatTime:     then,
		AgentVersion:      "v0.1.0",
		KubernetesVersion: "v1.35.0",
		Capacity: fleetv1alpha1.ClusterCapacity{
			Allocatable: rl("cpu", "8", "nvidia.com/gpu", "4"),
			Free:        rl("cpu", "2", "nvidia.com/gpu", "1"),
		},
		Nodes:     fleetv1alpha1.NodeCounts{Total: 2, Ready: 2},
		Workloads: fleetv1alpha1.WorkloadCounts{RayClusters: 3, RayServices: 2, RayServicesReady: 1},
		Conditions: []metav1.Condition{{
			Type: fleetv1alpha1.ConditionAgentReady, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonAgentRunning,
			Message: "the spoke agent reads the cluster and reports", LastTransitionTime: then, ObservedGeneration: 1,
		}},
	}
	summary := &Summary{Allocatable: rl("cpu", "4"), Free: rl("cpu", "3"), TotalNodes: 1, ReadyNodes: 1}
	workloads := &fleetv1alpha1.WorkloadCounts{RayClusters: 1}
	in := reportInput{now: now, generation: 1, agentVersion: "v0.2.0", kubernetesVersion: "v1.36.1", podSecurityLevel: "baseline"}

	tests := []struct {
		name string
		prev fleetv1alpha1.ClusterReportStatus
		in   reportInput
		obs  observation
		want func(*fleetv1alpha1.ClusterReportStatus)
	}{
		{
			name: "a first report fills everything in",
			in:   in,
			obs:  observation{summary: summary, workloads: workloads},
			want: func(s *fleetv1alpha1.ClusterReportStatus) {
				*s = fleetv1alpha1.ClusterReportStatus{
					ObservedGeneration: 1, HeartbeatTime: now, AgentVersion: "v0.2.0", KubernetesVersion: "v1.36.1",
					PodSecurityLevel: "baseline",
					Capacity:         fleetv1alpha1.ClusterCapacity{Allocatable: rl("cpu", "4"), Free: rl("cpu", "3")},
					Nodes:            fleetv1alpha1.NodeCounts{Total: 1, Ready: 1},
					Workloads:        fleetv1alpha1.WorkloadCounts{RayClusters: 1},
					Conditions: []metav1.Condition{{
						Type: fleetv1alpha1.ConditionAgentReady, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonAgentRunning,
						Message: "the spoke agent reads the cluster and reports", LastTransitionTime: now, ObservedGeneration: 1,
					}},
				}
			},
		},
		{
			name: "a healthy tick replaces the capacity and moves the heartbeat, not the transition time",
			prev: previous,
			in:   in,
			obs:  observation{summary: summary, workloads: workloads},
			want: func(s *fleetv1alpha1.ClusterReportStatus) {
				s.HeartbeatTime, s.AgentVersion, s.KubernetesVersion, s.ObservedGeneration = now, "v0.2.0", "v1.36.1", 1
				s.PodSecurityLevel = "baseline"
				s.Capacity = fleetv1alpha1.ClusterCapacity{Allocatable: rl("cpu", "4"), Free: rl("cpu", "3")}
				s.Nodes = fleetv1alpha1.NodeCounts{Total: 1, Ready: 1}
				s.Workloads = fleetv1alpha1.WorkloadCounts{RayClusters: 1}
			},
		},
		{
			name: "an unknown Kubernetes version keeps the last one",
			prev: previous,
			in:   reportInput{now: now, generation: 1, agentVersion: "v0.1.0"},
			obs:  observation{summary: summary, workloads: workloads},
			want: func(s *fleetv1alpha1.ClusterReportStatus) {
				s.HeartbeatTime, s.ObservedGeneration = now, 1
				s.Capacity = fleetv1alpha1.ClusterCapacity{Allocatable: rl("cpu", "4"), Free: rl("cpu", "3")}
				s.Nodes = fleetv1alpha1.NodeCounts{Total: 1, Ready: 1}
				s.Workloads = fleetv1alpha1.WorkloadCounts{RayClusters: 1}
			},
		},
		{
			name: "parts not read keep their values, and the agent is not ready with the reasons",
			prev: previous,
			in:   in,
			obs:  observation{problems: []string{"the Node and Pod informers have not synced yet", "listing RayServices: no matches"}},
			want: func(s *fleetv1alpha1.ClusterReportStatus) {
				s.HeartbeatTime, s.AgentVersion, s.KubernetesVersion, s.ObservedGeneration = now, "v0.2.0", "v1.36.1", 1
				s.PodSecurityLevel = "baseline"
				s.Conditions = []metav1.Condition{{
					Type: fleetv1alpha1.ConditionAgentReady, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonAgentNotReady,
					Message:            "the Node and Pod informers have not synced yet; listing RayServices: no matches",
					LastTransitionTime: now, ObservedGeneration: 1,
				}}
			},
		},
		{
			name: "another controller active: the capacity is still reported, AgentReady says who with its reason",
			prev: previous,
			in:   in,
			obs: observation{summary: summary, workloads: workloads, reason: fleetv1alpha1.ReasonAnotherOperatorActive,
				problems: []string{"KubeRay's operator is active on this cluster"}},
			want: func(s *fleetv1alpha1.ClusterReportStatus) {
				s.HeartbeatTime, s.AgentVersion, s.KubernetesVersion, s.ObservedGeneration = now, "v0.2.0", "v1.36.1", 1
				s.PodSecurityLevel = "baseline"
				s.Capacity = fleetv1alpha1.ClusterCapacity{Allocatable: rl("cpu", "4"), Free: rl("cpu", "3")}
				s.Nodes = fleetv1alpha1.NodeCounts{Total: 1, Ready: 1}
				s.Workloads = fleetv1alpha1.WorkloadCounts{RayClusters: 1}
				s.Conditions = []metav1.Condition{{
					Type: fleetv1alpha1.ConditionAgentReady, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonAnotherOperatorActive,
					Message: "KubeRay's operator is active on this cluster", LastTransitionTime: now, ObservedGeneration: 1,
				}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := tt.prev.DeepCopy()
			want := tt.prev.DeepCopy()
			tt.want(want)
			got := buildStatus(prev, tt.in, tt.obs)
			if diff := cmp.Diff(*want, got, quantityEqual); diff != "" {
				t.Errorf("buildStatus (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.prev, *prev, quantityEqual); diff != "" {
				t.Errorf("buildStatus changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestCountWorkloads(t *testing.T) {
	service := func(ready metav1.ConditionStatus) rayv1.RayService {
		s := rayv1.RayService{}
		if ready != "" {
			s.Status.Conditions = []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: ready}}
		}
		return s
	}
	tests := []struct {
		name     string
		clusters int
		services []rayv1.RayService
		want     fleetv1alpha1.WorkloadCounts
	}{
		{name: "nothing", want: fleetv1alpha1.WorkloadCounts{}},
		{
			name:     "only Ready=True counts as ready",
			clusters: 3,
			services: []rayv1.RayService{service(metav1.ConditionTrue), service(metav1.ConditionFalse), service(""), service(metav1.ConditionTrue)},
			want:     fleetv1alpha1.WorkloadCounts{RayClusters: 3, RayServices: 4, RayServicesReady: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := countWorkloads(make([]rayv1.RayCluster, tt.clusters), tt.services)
			if got != tt.want {
				t.Errorf("countWorkloads = %+v, want %+v", got, tt.want)
			}
		})
	}
}
