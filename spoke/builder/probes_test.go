package builder

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

const (
	rayletCheck = "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
	gcsCheck    = "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"
	serveCheck  = "wget --tries 1 -T 10 -q -O- http://localhost:8000/-/healthz | grep success"
)

func execHandler(cmd string) corev1.ProbeHandler {
	return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"bash", "-c", cmd}}}
}

func httpHandler(port int32) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/api/healthz", Port: intstr.FromInt32(port)}}
}

func TestProbes(t *testing.T) {
	userProbe := &corev1.Probe{ProbeHandler: execHandler("true"), PeriodSeconds: 99}
	tests := []struct {
		name          string
		cluster       *rayv1.RayCluster
		worker        bool
		disable       bool
		wantLiveness  *corev1.Probe
		wantReadiness *corev1.Probe
	}{
		{
			name:    "head checks raylet and GCS with wget before Ray 2.53",
			cluster: newCluster("rc").Obj(),
			wantLiveness: &corev1.Probe{ProbeHandler: execHandler(rayletCheck + " && " + gcsCheck),
				InitialDelaySeconds: 30, TimeoutSeconds: 5, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 120},
			wantReadiness: &corev1.Probe{ProbeHandler: execHandler(rayletCheck + " && " + gcsCheck),
				InitialDelaySeconds: 10, TimeoutSeconds: 5, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 10},
		},
		{
			name:    "worker checks only its raylet",
			cluster: newCluster("rc").Obj(),
			worker:  true,
			wantLiveness: &corev1.Probe{ProbeHandler: execHandler(rayletCheck),
				InitialDelaySeconds: 30, TimeoutSeconds: 2, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 120},
			wantReadiness: &corev1.Probe{ProbeHandler: execHandler(rayletCheck),
				InitialDelaySeconds: 10, TimeoutSeconds: 2, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 10},
		},
		{
			name:    "Ray 2.53 uses the unified HTTP endpoint",
			cluster: newCluster("rc").RayVersion("2.53.0").HeadParam("dashboard-agent-listen-port", "50000").Obj(),
			wantLiveness: &corev1.Probe{ProbeHandler: httpHandler(50000),
				InitialDelaySeconds: 30, TimeoutSeconds: 5, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 120},
			wantReadiness: &corev1.Probe{ProbeHandler: httpHandler(50000),
				InitialDelaySeconds: 10, TimeoutSeconds: 5, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 10},
		},
		{
			name:    "custom ports are probed; unknown Ray versions fall back to exec",
			cluster: newCluster("rc").RayVersion("nightly").HeadParam("dashboard-agent-listen-port", "50000").HeadParam("dashboard-port", "9999").Obj(),
			wantLiveness: &corev1.Probe{ProbeHandler: execHandler(
				"wget --tries 1 -T 2 -q -O- http://localhost:50000/api/local_raylet_healthz | grep success && " +
					"wget --tries 1 -T 10 -q -O- http://localhost:9999/api/gcs_healthz | grep success"),
				InitialDelaySeconds: 30, TimeoutSeconds: 5, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 120},
		},
		{
			name:    "RayService worker readiness includes its Serve proxy",
			cluster: newCluster("rc").Label(labels.OriginatedFromCRD, "RayService").RayVersion("2.53.0").Obj(),
			worker:  true,
			wantLiveness: &corev1.Probe{ProbeHandler: httpHandler(52365),
				InitialDelaySeconds: 30, TimeoutSeconds: 2, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 120},
			wantReadiness: &corev1.Probe{ProbeHandler: execHandler(rayletCheck + " && " + serveCheck),
				InitialDelaySeconds: 10, TimeoutSeconds: 2, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 1},
		},
		{
			name: "RayService worker probes its named serve port",
			cluster: newCluster("rc").Label(labels.OriginatedFromCRD, "RayService").WorkerContainer(func(c *corev1.Container) {
				c.Ports = []corev1.ContainerPort{{Name: "serve", ContainerPort: 9000}}
			}).Obj(),
			worker: true,
			wantReadiness: &corev1.Probe{ProbeHandler: execHandler(rayletCheck + " && wget --tries 1 -T 10 -q -O- http://localhost:9000/-/healthz | grep success"),
				InitialDelaySeconds: 10, TimeoutSeconds: 2, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 1},
		},
		{
			name:    "RayService head does not check Serve",
			cluster: newCluster("rc").Label(labels.OriginatedFromCRD, "RayService").Obj(),
			wantReadiness: &corev1.Probe{ProbeHandler: execHandler(rayletCheck + " && " + gcsCheck),
				InitialDelaySeconds: 10, TimeoutSeconds: 5, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 10},
		},
		{
			name: "user probes are kept",
			cluster: newCluster("rc").Label(labels.OriginatedFromCRD, "RayService").WorkerContainer(func(c *corev1.Container) {
				c.LivenessProbe = userProbe.DeepCopy()
				c.ReadinessProbe = userProbe.DeepCopy()
			}).Obj(),
			worker:        true,
			wantLiveness:  userProbe,
			wantReadiness: userProbe,
		},
		{name: "injection disabled", cluster: newCluster("rc").Obj(), disable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.ProbesInjection = !tt.disable
			var pod *corev1.Pod
			if tt.worker {
				pod = mustWorker(t, tt.cluster, Replica{}, opts)
			} else {
				pod = mustHead(t, tt.cluster, opts)
			}
			ray := pod.Spec.Containers[0]
			if tt.disable {
				if ray.LivenessProbe != nil || ray.ReadinessProbe != nil {
					t.Fatalf("probes injected although disabled")
				}
				return
			}
			if tt.wantLiveness != nil {
				if diff := cmp.Diff(tt.wantLiveness, ray.LivenessProbe); diff != "" {
					t.Errorf("liveness (-want +got):\n%s", diff)
				}
			}
			if tt.wantReadiness != nil {
				if diff := cmp.Diff(tt.wantReadiness, ray.ReadinessProbe); diff != "" {
					t.Errorf("readiness (-want +got):\n%s", diff)
				}
			}
		})
	}
}
