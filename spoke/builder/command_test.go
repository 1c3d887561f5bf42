package builder

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestRenderParams(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{name: "empty", params: map[string]string{}, want: ""},
		{
			name:   "sorted key=value flags",
			params: map[string]string{"port": "6379", "num-cpus": "2", "address": "h:1"},
			want:   " --address=h:1  --num-cpus=2  --port=6379 ",
		},
		{
			name:   "true is a bare switch, false drops the flag, any case",
			params: map[string]string{"block": "true", "disable-usage-stats": "False", "no-monitor": "TRUE"},
			want:   " --block  --no-monitor ",
		},
		{
			name:   "log-color and include-dashboard keep true/false as values",
			params: map[string]string{"log-color": "true", "include-dashboard": "false"},
			want:   " --include-dashboard=false  --log-color=true ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renderParams(tt.params); got != tt.want {
				t.Errorf("renderParams() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGeneratedStartCommand(t *testing.T) {
	const headBase = "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0  "
	const workerAddr = "ray start  --address=rc-head-svc.ns.svc.cluster.local:6379  --block  --dashboard-agent-listen-port=52365  "
	tests := []struct {
		name     string
		cluster  *rayv1.RayCluster
		nodeType rayv1.RayNodeType
		want     string
	}{
		{
			name:     "head from container resources",
			cluster:  newCluster("rc").Obj(),
			nodeType: rayv1.HeadNode,
			want:     headBase + "--memory=2147483648  --metrics-export-port=8080  --num-cpus=1 ",
		},
		{
			name:     "worker connects to the head service FQDN",
			cluster:  newCluster("rc").Obj(),
			nodeType: rayv1.WorkerNode,
			want:     workerAddr + "--memory=1073741824  --metrics-export-port=8080  --num-cpus=1 ",
		},
		{
			name: "fractional CPU limit rounds up; memory only from limits",
			cluster: newCluster("rc").WorkerContainer(func(c *corev1.Container) {
				c.Resources = resources("500m", "", nil)
				c.Resources.Limits = nil
			}).Obj(),
			nodeType: rayv1.WorkerNode,
			want:     workerAddr + "--metrics-export-port=8080  --num-cpus=1 ",
		},
		{
			name: "GPUs from limits",
			cluster: newCluster("rc").WorkerContainer(func(c *corev1.Container) {
				c.Resources = resources("4", "", map[corev1.ResourceName]string{"nvidia.com/gpu": "2"})
			}).Obj(),
			nodeType: rayv1.WorkerNode,
			want:     workerAddr + "--metrics-export-port=8080  --num-cpus=4  --num-gpus=2 ",
		},
		{
			name: "NVIDIA MIG slice counts as GPUs",
			cluster: newCluster("rc").WorkerContainer(func(c *corev1.Container) {
				c.Resources = resources("", "", map[corev1.ResourceName]string{"nvidia.com/mig-1g.10gb": "1"})
			}).Obj(),
			nodeType: rayv1.WorkerNode,
			want:     workerAddr + "--metrics-export-port=8080  --num-gpus=1 ",
		},
		{
			name: "TPU becomes a custom resource",
			cluster: newCluster("rc").WorkerContainer(func(c *corev1.Container) {
				c.Resources = resources("", "", map[corev1.ResourceName]string{"google.com/tpu": "4"})
			}).Obj(),
			nodeType: rayv1.WorkerNode,
			want:     workerAddr + "--metrics-export-port=8080  --resources='{\"TPU\":4}' ",
		},
		{
			name: "neuron cores merge into user resources, GPUs too",
			cluster: newCluster("rc").HeadParam("resources", `"{"custom":2}"`).HeadContainer(func(c *corev1.Container) {
				c.Resources = resources("", "", map[corev1.ResourceName]string{
					"aws.amazon.com/neuroncore": "4", "nvidia.com/gpu": "1",
				})
			}).Obj(),
			nodeType: rayv1.HeadNode,
			want:     headBase + "--metrics-export-port=8080  --num-gpus=1  --resources='{\"custom\":2,\"neuron_cores\":4}' ",
		},
		{
			name: "an accelerator already in resources is left alone",
			cluster: newCluster("rc").HeadParam("resources", `'{"TPU":1}'`).HeadContainer(func(c *corev1.Container) {
				c.Resources = resources("", "", map[corev1.ResourceName]string{"google.com/tpu": "4"})
			}).Obj(),
			nodeType: rayv1.HeadNode,
			want:     headBase + "--metrics-export-port=8080  --resources='{\"TPU\":1}' ",
		},
		{
			name: "invalid resources JSON skips accelerators and GPUs",
			cluster: newCluster("rc").HeadParam("resources", "{").HeadContainer(func(c *corev1.Container) {
				c.Resources = resources("", "", map[corev1.ResourceName]string{"nvidia.com/gpu": "1"})
			}).Obj(),
			nodeType: rayv1.HeadNode,
			want:     headBase + "--metrics-export-port=8080  --resources={ ",
		},
		{
			name:     "user params win over derived ones",
			cluster:  newCluster("rc").HeadParam("num-cpus", "0").HeadParam("dashboard-host", "127.0.0.1").HeadParam("metrics-export-port", "9000").Obj(),
			nodeType: rayv1.HeadNode,
			want:     "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=127.0.0.1  --memory=2147483648  --metrics-export-port=9000  --num-cpus=0 ",
		},
		{
			name: "group resources and labels override rayStartParams",
			cluster: newCluster("rc").HeadParam("resources", `'{"old":1}'`).HeadParam("labels", "x=y").Head(func(h *rayv1.HeadGroupSpec) {
				h.Resources = map[string]string{"CPU": "3", "memory": "1Gi", "nvidia.com/gpu": "2", "custom": "500m", "bad": "x"}
				h.Labels = map[string]string{"zone": "a", "accel": "none"}
			}).Obj(),
			nodeType: rayv1.HeadNode,
			want: headBase + "--labels=accel=none,zone=a  --memory=1073741824  --metrics-export-port=8080  " +
				"--num-cpus=3  --num-gpus=2  --resources='{\"custom\":0.5}' ",
		},
		{
			name:     "custom GCS port reaches the worker address",
			cluster:  newCluster("rc").HeadParam("port", "6380").Obj(),
			nodeType: rayv1.WorkerNode,
			want:     "ray start  --address=rc-head-svc.ns.svc.cluster.local:6380  --block  --dashboard-agent-listen-port=52365  --memory=1073741824  --metrics-export-port=8080  --num-cpus=1 ",
		},
		{
			name:     "autoscaling disables the monitor",
			cluster:  newCluster("rc").Autoscaling("").Obj(),
			nodeType: rayv1.HeadNode,
			want:     headBase + "--memory=2147483648  --metrics-export-port=8080  --no-monitor  --num-cpus=1 ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pod *corev1.Pod
			if tt.nodeType == rayv1.HeadNode {
				pod = mustHead(t, tt.cluster, DefaultOptions())
			} else {
				pod = mustWorker(t, tt.cluster, Replica{}, DefaultOptions())
			}
			ray := &pod.Spec.Containers[0]
			if got := envValue(ray, envGeneratedStartCmd); got != tt.want {
				t.Errorf("KUBERAY_GEN_RAY_START_CMD =\n %q\nwant\n %q", got, tt.want)
			}
			if want := []string{"ulimit -n 65536; " + tt.want}; !cmp.Equal(ray.Args, want) {
				t.Errorf("args = %q, want %q", ray.Args, want)
			}
		})
	}
}

func TestRayContainerCommand(t *testing.T) {
	const gen = "ulimit -n 65536; ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0  --memory=2147483648  --metrics-export-port=8080  --num-cpus=1 "
	tests := []struct {
		name        string
		cluster     *rayv1.RayCluster
		opts        func(*Options)
		wantCommand []string
		wantArgs    []string
	}{
		{
			name:        "generated",
			cluster:     newCluster("rc").Obj(),
			wantCommand: []string{"/bin/bash", "-c", "--"},
			wantArgs:    []string{gen},
		},
		{
			name:        "login shell",
			cluster:     newCluster("rc").Obj(),
			opts:        func(o *Options) { o.LoginShell = true },
			wantCommand: []string{"/bin/bash", "-cl", "--"},
			wantArgs:    []string{gen},
		},
		{
			name: "user command runs before ray start",
			cluster: newCluster("rc").HeadContainer(func(c *corev1.Container) {
				c.Command = []string{"echo"}
				c.Args = []string{"hello"}
			}).Obj(),
			wantCommand: []string{"/bin/bash", "-c", "--"},
			wantArgs:    []string{" echo  hello  && " + gen},
		},
		{
			name: "a user command that runs ray start itself is kept",
			cluster: newCluster("rc").HeadContainer(func(c *corev1.Container) {
				c.Command = []string{"/bin/sh", "-c"}
				c.Args = []string{"ray start --head --block"}
			}).Obj(),
			wantCommand: []string{"/bin/sh", "-c"},
			wantArgs:    []string{"ray start --head --block"},
		},
		{
			name: "overwrite annotation on the cluster",
			cluster: newCluster("rc").Annotation(labels.OverwriteContainerCmd, "True").HeadContainer(func(c *corev1.Container) {
				c.Args = []string{"$KUBERAY_GEN_RAY_START_CMD"}
			}).Obj(),
			wantArgs: []string{"$KUBERAY_GEN_RAY_START_CMD"},
		},
		{
			name: "overwrite annotation on the pod template",
			cluster: newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) {
				h.Template.Annotations = map[string]string{labels.OverwriteContainerCmd: "true"}
			}).Obj(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			ray := mustHead(t, tt.cluster, opts).Spec.Containers[0]
			if !cmp.Equal(ray.Command, tt.wantCommand) {
				t.Errorf("command = %q, want %q", ray.Command, tt.wantCommand)
			}
			if !cmp.Equal(ray.Args, tt.wantArgs) {
				t.Errorf("args = %q, want %q", ray.Args, tt.wantArgs)
			}
			if got := envValue(&ray, envGeneratedStartCmd); got == "" {
				t.Errorf("KUBERAY_GEN_RAY_START_CMD is not set")
			}
		})
	}
}

func TestIsGPUResource(t *testing.T) {
	for name, want := range map[string]bool{
		"nvidia.com/gpu": true, "amd.com/gpu": true, "nvidia.com/mig-3g.20gb": true,
		"google.com/tpu": false, "cpu": false, "nvidia.com/gpu.shared": false,
	} {
		if got := isGPUResource(name); got != want {
			t.Errorf("isGPUResource(%q) = %v, want %v", name, got, want)
		}
	}
}
