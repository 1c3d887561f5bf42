//go:build e2e

package fleetray

import (
	"fmt"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
)

// TestCapacityFollowsTraffic's RayService: a GPU worker group (on the fake GPU Nodes) and a
// Serve deployment of capacityServeReplicas small replicas (on the head); the capacity-following
// mode gets capacitySurge.
const (
	capacityName          = "capacity"
	gpuGroup              = "gpu"
	capacityWorkers       = 4
	capacityServeReplicas = 4
	capacitySurge         = 25
	gpuSamplePeriod       = time.Second
)

// capacityMode is one of the two blue/greens TestCapacityFollowsTraffic compares: each its own
// RayService, namespace and route.
type capacityMode struct {
	label, ns, path string
	// port is the serve Service's: a member's load balancer gives each port to one Service,
	// and both modes' copies may share a member.
	port int32
	// surge is rollout.blueGreen.capacity.surgePercent; nil runs both sets whole.
	surge *int32
}

// capacityFigures are what one mode's change held and served, from the change until blue
// retired.
type capacityFigures struct {
	mode                  capacityMode
	samples               []fleetSample
	peakGPUs, peakServe   int64
	gpuSeconds            float64
	toGreenFull, toRetire time.Duration
	sent, failed          int
	sawCapacity           bool
}

// TestCapacityFollowsTraffic runs the same change, v1 to v2 of the test app by a blue/green
// from one member to the other, twice: with whole sets (today's blue/green) and with
// rollout.blueGreen.capacity, surge 25%. Each RayService has a worker group of four 1-GPU
// workers and a Serve deployment of four replicas. Both RayServices are created at once so
// their heads come up together; the changes run one after the other, each with requests
// through the Gateway at its own path. Every second the GPUs the fleet's worker Pods request
// are summed: with capacity the peak must stay within (1+surge) × one set, 5 GPUs, where whole
// sets hold 8; no request may fail in either mode.
func TestCapacityFollowsTraffic(t *testing.T) {
	modes := []capacityMode{
		{label: "whole sets", ns: "fleetray-cap-whole", path: "/whole", port: 8000},
		{label: fmt.Sprintf("capacity, surge %d%%", capacitySurge), ns: "fleetray-cap-follow", path: "/follow", port: 8001,
			surge: ptr.To[int32](capacitySurge)},
	}
	var f *localfleet.Fleet
	created := make([]time.Time, len(modes))
	for i, m := range modes {
		f, created[i] = setUpSpec(t, m.ns, capacityName, capacityPolicy(m), func(image string) rayv1.RayServiceSpec {
			return capacityRayService(image, m.port)
		})
	}
	var figures []capacityFigures
	for i, m := range modes {
		blue, revision := firstServedAt(t, f, m.ns, capacityName, m.path, created[i])
		figures = append(figures, changeWithSamples(t, f, m, blue, revision))
	}
	t.Log("| mode | peak GPUs | GPU-seconds, change to blue retired | change to green 100% | change to blue retired | peak Serve replicas | requests, failed |")
	for _, fig := range figures {
		t.Log(fig.row())
	}

	whole, follow := figures[0], figures[1]
	for _, fig := range figures {
		// Blue holds its whole set when the change starts: less means the samples missed Pods.
		if fig.peakGPUs < capacityWorkers {
			t.Errorf("%s: peak %d GPUs requested, want at least blue's %d", fig.mode.label, fig.peakGPUs, capacityWorkers)
		}
	}
	bound := int64((100 + capacitySurge) * capacityWorkers / 100)
	if follow.peakGPUs > bound {
		t.Errorf("%s: peak %d GPUs requested, want at most %d ((100+%d)%% of %d)", follow.mode.label, follow.peakGPUs, bound, capacitySurge, capacityWorkers)
	}
	if !follow.sawCapacity {
		t.Errorf("%s: status.rollout.blueGreen.capacity never seen on the binding", follow.mode.label)
	}
	if follow.toGreenFull == 0 {
		t.Errorf("%s: green was never seen at 100%% of the traffic", follow.mode.label)
	}
	t.Logf("whole sets peaked at %d GPUs (expected %d), capacity at %d", whole.peakGPUs, 2*capacityWorkers, follow.peakGPUs)
}

// changeWithSamples changes m's RayService to v2 with requests through the Gateway at m.path,
// sampling the fleet's GPUs, waits until blue retired and checks the requests and green's
// shares.
func changeWithSamples(t *testing.T, f *localfleet.Fleet, m capacityMode, blue, revision string) capacityFigures {
	t.Helper()
	reqs := startRequests(t, f.GatewayURL+m.path)
	shares := recordShares(t, f, m.ns, capacityName)
	sampler := sampleFleet(t, f, m.ns)
	changed := time.Now()
	setServeConfig(t, f, m.ns, capacityName, capacityServeConfig("v2"))
	green := waitGreen(t, f, m.ns, capacityName, blue)
	waitRetired(t, f, m.ns, capacityName, green, revision)
	retired := time.Now()
	fig := capacityFigures{mode: m, samples: sampler.stop(), toRetire: retired.Sub(changed)}
	reqs.Close()
	checkShares(t, shares.stop(), reqs, green)

	fig.summarize(changed, retired)
	for _, a := range reqs.Between(time.Time{}, time.Now()) {
		fig.sent++
		switch {
		case a.Failed():
			fig.failed++
			if fig.failed <= 20 {
				t.Errorf("%s: failed: %s", m.label, a)
			}
		case a.Value != served{"v1", blue} && a.Value != served{"v2", green}:
			t.Errorf("%s: answer not v1 from %s nor v2 from %s: %s", m.label, blue, green, a)
		}
	}
	return fig
}

// capacityPolicy is policySpec routed at m.path, with m's capacity.
func capacityPolicy(m capacityMode) fleetv1alpha1.PlacementPolicySpec {
	spec := policySpec()
	spec.Traffic.PathPrefix = m.path
	if m.surge != nil {
		spec.Rollout.BlueGreen.Capacity = &fleetv1alpha1.BlueGreenCapacity{SurgePercent: m.surge}
	}
	return spec
}

// capacityRayService is the test app's RayService with the GPU worker group on the fake GPU
// Nodes. The fake workers are Ready and labelled ray.io/serve=true like real ones, but serve
// nothing: the serve Service targets the port by name, which only the head declares, so that
// the workers stay out of its endpoints' ports and kube-proxy sends requests to the head alone.
// Declaring the head's ports replaces Ray's standard set, so all of it is declared.
func capacityRayService(image string, port int32) rayv1.RayServiceSpec {
	cluster := rayapp.ClusterSpec(image)
	cluster.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
		{Name: "gcs-server", ContainerPort: 6379},
		{Name: "dashboard", ContainerPort: 8265},
		{Name: "client", ContainerPort: 10001},
		{Name: "serve", ContainerPort: 8000},
	}
	oneGPU := resource.MustParse("1")
	cluster.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{{
		GroupName:   gpuGroup,
		Replicas:    ptr.To[int32](capacityWorkers),
		MinReplicas: ptr.To[int32](capacityWorkers),
		MaxReplicas: ptr.To[int32](capacityWorkers),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector: map[string]string{gpuNodeKey: "true"},
			Tolerations:  []corev1.Toleration{{Key: gpuNodeKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{
				Name: "ray-worker", Image: image, ImagePullPolicy: corev1.PullNever,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi"), localcluster.GPUResource: oneGPU,
					},
					Limits: corev1.ResourceList{localcluster.GPUResource: oneGPU},
				},
			}},
		}},
	}}
	return rayv1.RayServiceSpec{
		ServeConfigV2:  capacityServeConfig("v1"),
		RayClusterSpec: cluster,
		ServeService: &corev1.Service{Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "serve", Port: port, TargetPort: intstr.FromString("serve")}},
		}},
	}
}

// capacityServeConfig is rayapp.ServeConfig with capacityServeReplicas replicas of its
// deployment, small enough for all of them to run on the head.
func capacityServeConfig(version string) string {
	return rayapp.ServeConfig(version) + fmt.Sprintf(`  deployments:
  - name: Version
    num_replicas: %d
    ray_actor_options:
      num_cpus: 0.05
`, capacityServeReplicas)
}
