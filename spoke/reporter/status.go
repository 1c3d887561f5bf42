package reporter

import (
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// observation is what one tick managed to read. A part that could not be read is nil and
// keeps its last reported value, with the reason among the problems: a report that is late in
// one part is more useful to the hub than no heartbeat at all.
type observation struct {
	summary   *Summary
	workloads *fleetv1alpha1.WorkloadCounts
	// problems say why the agent is not ready; none means AgentReady=True.
	problems []string
	// reason is AgentReady's reason when there are problems; "" means AgentNotReady.
	reason string
}

// reportInput is everything besides the observation that goes into a report.
type reportInput struct {
	now               metav1.Time
	generation        int64
	agentVersion      string
	kubernetesVersion string
	// podSecurityLevel is the level the member enforces on the hub's namespaces.
	podSecurityLevel string
}

// buildStatus returns the report status that follows prev after a tick that observed obs. It
// makes no API calls.
func buildStatus(prev *fleetv1alpha1.ClusterReportStatus, in reportInput, obs observation) fleetv1alpha1.ClusterReportStatus {
	s := *prev.DeepCopy()
	s.ObservedGeneration = in.generation
	s.HeartbeatTime = in.now
	s.AgentVersion = in.agentVersion
	s.PodSecurityLevel = in.podSecurityLevel
	// Discovery may not have answered yet; the last known version is still the right one.
	if in.kubernetesVersion != "" {
		s.KubernetesVersion = in.kubernetesVersion
	}
	if obs.summary != nil {
		s.Capacity = fleetv1alpha1.ClusterCapacity{Allocatable: obs.summary.Allocatable, Free: obs.summary.Free}
		s.Nodes = fleetv1alpha1.NodeCounts{Total: obs.summary.TotalNodes, Ready: obs.summary.ReadyNodes}
	}
	if obs.workloads != nil {
		s.Workloads = *obs.workloads
	}
	cond := metav1.Condition{
		Type:               fleetv1alpha1.ConditionAgentReady,
		Status:             metav1.ConditionTrue,
		Reason:             fleetv1alpha1.ReasonAgentRunning,
		Message:            "the spoke agent reads the cluster and reports",
		ObservedGeneration: in.generation,
		// Used only when the status changes; the injected clock, not metav1.Now.
		LastTransitionTime: in.now,
	}
	if len(obs.problems) > 0 {
		cond.Status = metav1.ConditionFalse
		cond.Reason = fleetv1alpha1.ReasonAgentNotReady
		if obs.reason != "" {
			cond.Reason = obs.reason
		}
		cond.Message = strings.Join(obs.problems, "; ")
	}
	meta.SetStatusCondition(&s.Conditions, cond)
	return s
}

// countWorkloads counts the Ray objects the spoke runs; a RayService counts as ready when its
// Ready condition is True (what KubeRay's serviceStatus "Running" also says).
func countWorkloads(clusters []rayv1.RayCluster, services []rayv1.RayService) fleetv1alpha1.WorkloadCounts {
	w := fleetv1alpha1.WorkloadCounts{
		RayClusters: int32(len(clusters)),
		RayServices: int32(len(services)),
	}
	for i := range services {
		if meta.IsStatusConditionTrue(services[i].Status.Conditions, string(rayv1.RayServiceReady)) {
			w.RayServicesReady++
		}
	}
	return w
}
