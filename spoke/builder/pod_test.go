package builder

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestPodNames(t *testing.T) {
	long := strings.Repeat("a", 52)
	tests := []struct {
		name          string
		cluster       *rayv1.RayCluster
		deterministic bool
		wantHead      metav1.ObjectMeta
		wantWorkerGen string
	}{
		{
			name:          "generated names",
			cluster:       newCluster("rc").Obj(),
			wantHead:      metav1.ObjectMeta{GenerateName: "rc-head-"},
			wantWorkerGen: "rc-small-worker-",
		},
		{
			name:          "deterministic head name",
			cluster:       newCluster("rc").Obj(),
			deterministic: true,
			wantHead:      metav1.ObjectMeta{Name: "rc-head"},
			wantWorkerGen: "rc-small-worker-",
		},
		{
			name: "long names keep their first 50 characters and are lower-cased",
			cluster: newCluster(long).Worker(func(g *rayv1.WorkerGroupSpec) {
				g.GroupName = "GPU-Group"
			}).Obj(),
			wantHead:      metav1.ObjectMeta{GenerateName: strings.Repeat("a", 50) + "-head-"},
			wantWorkerGen: strings.Repeat("a", 50) + "-worker-",
		},
		{
			name:          "upper-case group names are lower-cased",
			cluster:       newCluster("rc").Worker(func(g *rayv1.WorkerGroupSpec) { g.GroupName = "GPU" }).Obj(),
			wantHead:      metav1.ObjectMeta{GenerateName: "rc-head-"},
			wantWorkerGen: "rc-gpu-worker-",
		},
		{
			name: "a template name is kept on the head (as KubeRay does) and dropped on workers",
			cluster: newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) { h.Template.Name = "fixed" }).
				Worker(func(g *rayv1.WorkerGroupSpec) { g.Template.Name = "fixed" }).Obj(),
			wantHead:      metav1.ObjectMeta{Name: "fixed", GenerateName: "rc-head-"},
			wantWorkerGen: "rc-small-worker-",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.DeterministicHeadPodName = tt.deterministic
			head := mustHead(t, tt.cluster, opts)
			if head.Name != tt.wantHead.Name || head.GenerateName != tt.wantHead.GenerateName {
				t.Errorf("head name=%q generateName=%q, want %q/%q", head.Name, head.GenerateName, tt.wantHead.Name, tt.wantHead.GenerateName)
			}
			worker := mustWorker(t, tt.cluster, Replica{}, opts)
			if worker.Name != "" || worker.GenerateName != tt.wantWorkerGen {
				t.Errorf("worker name=%q generateName=%q, want \"\"/%q", worker.Name, worker.GenerateName, tt.wantWorkerGen)
			}
			for _, pod := range []*corev1.Pod{head, worker} {
				if pod.Namespace != "ns" {
					t.Errorf("namespace = %q, want the cluster's", pod.Namespace)
				}
			}
		})
	}
}

func TestPodLabels(t *testing.T) {
	base := func(nodeType, group string) map[string]string {
		return map[string]string{
			labels.IsRayNode: "yes", labels.Cluster: "rc", labels.NodeType: nodeType, labels.Group: group,
			labels.Identifier: "rc-" + nodeType, labels.AppName: "kuberay", labels.CreatedBy: "kuberay-operator",
		}
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name       string
		cluster    *rayv1.RayCluster
		replica    Replica
		noIndexing bool
		wantHead   map[string]string
		wantWorker map[string]string
	}{
		{
			name:       "defaults; single-host workers carry their replica index",
			cluster:    newCluster("rc").Obj(),
			replica:    Replica{Index: 3},
			wantHead:   base("head", "headgroup"),
			wantWorker: with(base("worker", "small"), labels.WorkerReplicaIndex, "3"),
		},
		{
			name:    "multi-host replica labels",
			cluster: newCluster("rc").Worker(func(g *rayv1.WorkerGroupSpec) { g.NumOfHosts = 4 }).Obj(),
			replica: Replica{Name: "small-abcde", Index: 1, HostIndex: 2},
			wantWorker: with(base("worker", "small"), labels.WorkerReplicaIndex, "1",
				labels.WorkerReplicaName, "small-abcde", labels.HostIndex, "2"),
		},
		{
			name:       "no replica labels without the multi-host indexing gate",
			cluster:    newCluster("rc").Worker(func(g *rayv1.WorkerGroupSpec) { g.NumOfHosts = 4 }).Obj(),
			replica:    Replica{Name: "small-abcde", Index: 1, HostIndex: 2},
			noIndexing: true,
			wantWorker: base("worker", "small"),
		},
		{
			name: "user labels override all but cluster, node type and group; group labels win over template labels",
			cluster: newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) {
				h.Template.Labels = map[string]string{
					labels.Cluster: "x", labels.NodeType: "x", labels.Group: "x",
					labels.AppName: "mine", labels.IsRayNode: "maybe", "team": "a", "zone": "template",
				}
				h.Labels = map[string]string{"zone": "group"}
			}).Obj(),
			wantHead: with(base("head", "headgroup"), labels.AppName, "mine", labels.IsRayNode, "maybe", "team", "a", "zone", "group"),
		},
		{
			name:       "RayService: the head starts out of the serve Service, workers in it",
			cluster:    newCluster("rc").Label(labels.OriginatedFromCRD, "RayService").Obj(),
			wantHead:   with(base("head", "headgroup"), labels.Serve, "false"),
			wantWorker: with(base("worker", "small"), labels.Serve, "true", labels.WorkerReplicaIndex, "0"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.MultiHostIndexing = !tt.noIndexing
			if tt.wantHead != nil {
				if diff := cmp.Diff(tt.wantHead, mustHead(t, tt.cluster, opts).Labels); diff != "" {
					t.Errorf("head labels (-want +got):\n%s", diff)
				}
			}
			if tt.wantWorker != nil {
				if diff := cmp.Diff(tt.wantWorker, mustWorker(t, tt.cluster, tt.replica, opts).Labels); diff != "" {
					t.Errorf("worker labels (-want +got):\n%s", diff)
				}
			}
		})
	}
	t.Run("long identifiers keep their last 63 characters", func(t *testing.T) {
		name := strings.Repeat("b", 62)
		if got := mustHead(t, newCluster(name).Obj(), DefaultOptions()).Labels[labels.Identifier]; got != strings.Repeat("b", 58)+"-head" {
			t.Errorf("identifier = %q", got)
		}
	})
}

func TestPodAnnotationsAndOwner(t *testing.T) {
	rc := newCluster("rc").Annotation(labels.OverwriteContainerCmd, "true").Head(func(h *rayv1.HeadGroupSpec) {
		h.Template.Annotations = map[string]string{"user": "kept"}
	}).Obj()
	hash, err := RecreateHash(&rc.Spec)
	if err != nil {
		t.Fatal(err)
	}
	head := mustHead(t, rc, DefaultOptions())
	want := map[string]string{
		"user": "kept", labels.OverwriteContainerCmd: "true", labels.FTEnabled: "false",
		labels.UpgradeStrategyRecreateHash: hash, labels.KubeRayVersion: "v1.6.2",
	}
	if diff := cmp.Diff(want, head.Annotations); diff != "" {
		t.Errorf("head annotations (-want +got):\n%s", diff)
	}
	worker := mustWorker(t, rc, Replica{}, DefaultOptions())
	if diff := cmp.Diff(map[string]string{labels.OverwriteContainerCmd: "true"}, worker.Annotations); diff != "" {
		t.Errorf("worker annotations (-want +got):\n%s", diff)
	}
	wantOwner := []metav1.OwnerReference{{
		APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "rc", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	for _, pod := range []*corev1.Pod{head, worker} {
		if diff := cmp.Diff(wantOwner, pod.OwnerReferences); diff != "" {
			t.Errorf("%s owner references (-want +got):\n%s", pod.GenerateName, diff)
		}
		if pod.Kind != "Pod" || pod.APIVersion != "v1" {
			t.Errorf("type meta = %+v", pod.TypeMeta)
		}
	}
}

func TestAutoscaler(t *testing.T) {
	defaultContainer := corev1.Container{
		Name:            "autoscaler",
		Image:           "rayproject/ray:2.52.0",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{
			fieldEnv("RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']"),
			fieldEnv("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
			fieldEnv("RAY_HEAD_POD_NAME", "metadata.name"),
			{Name: "KUBERAY_CRD_VER", Value: "v1"},
		},
		Command:      []string{"/bin/bash", "-c", "--"},
		Args:         []string{"ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"},
		Resources:    fixedResources("500m", "512Mi"),
		VolumeMounts: []corev1.VolumeMount{{Name: "ray-logs", MountPath: "/tmp/ray"}},
	}
	overridden := defaultContainer.DeepCopy()
	overridden.Image = "custom:1"
	overridden.ImagePullPolicy = corev1.PullAlways
	overridden.Resources = fixedResources("1", "1Gi")
	overridden.Env = append(overridden.Env, corev1.EnvVar{Name: "X", Value: "1"})
	overridden.EnvFrom = []corev1.EnvFromSource{{Prefix: "P"}}
	overridden.VolumeMounts = []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}, {Name: "ray-logs", MountPath: "/tmp/ray"}}
	overridden.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}

	tests := []struct {
		name          string
		cluster       *rayv1.RayCluster
		wantContainer corev1.Container
		wantSA        string
		wantV2        bool
	}{
		{name: "v1", cluster: newCluster("rc").Autoscaling("").Obj(), wantContainer: defaultContainer, wantSA: "rc"},
		{name: "explicit v1", cluster: newCluster("rc").Autoscaling(rayv1.AutoscalerVersionV1).Obj(), wantContainer: defaultContainer, wantSA: "rc"},
		{name: "v2", cluster: newCluster("rc").Autoscaling(rayv1.AutoscalerVersionV2).Obj(), wantContainer: defaultContainer, wantSA: "rc", wantV2: true},
		{
			name: "user ServiceAccount, shortened like KubeRay",
			cluster: newCluster("rc").Autoscaling("").Head(func(h *rayv1.HeadGroupSpec) {
				h.Template.Spec.ServiceAccountName = strings.Repeat("s", 55)
			}).Obj(),
			wantContainer: defaultContainer,
			wantSA:        strings.Repeat("s", 50),
		},
		{
			name: "autoscalerOptions overrides",
			cluster: newCluster("rc").Autoscaling("").Spec(func(s *rayv1.RayClusterSpec) {
				r := fixedResources("1", "1Gi")
				s.AutoscalerOptions = &rayv1.AutoscalerOptions{
					Image: ptr.To("custom:1"), ImagePullPolicy: ptr.To(corev1.PullAlways), Resources: &r,
					Env: []corev1.EnvVar{{Name: "X", Value: "1"}}, EnvFrom: []corev1.EnvFromSource{{Prefix: "P"}},
					VolumeMounts:    []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}},
					SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
				}
			}).Obj(),
			wantContainer: *overridden,
			wantSA:        "rc",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.HeadSidecars = []corev1.Container{{Name: "sidecar", Image: "busybox"}}
			head := mustHead(t, tt.cluster, opts)
			names := []string{}
			for _, c := range head.Spec.Containers {
				names = append(names, c.Name)
			}
			if diff := cmp.Diff([]string{"ray-head", "autoscaler", "sidecar"}, names); diff != "" {
				t.Fatalf("containers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantContainer, head.Spec.Containers[1]); diff != "" {
				t.Errorf("autoscaler container (-want +got):\n%s", diff)
			}
			if head.Spec.ServiceAccountName != tt.wantSA {
				t.Errorf("serviceAccountName = %q, want %q", head.Spec.ServiceAccountName, tt.wantSA)
			}
			ray := &head.Spec.Containers[0]
			if !hasVolume(&head.Spec, rayLogsVolume) || !cmp.Equal(ray.VolumeMounts[len(ray.VolumeMounts)-1], corev1.VolumeMount{Name: "ray-logs", MountPath: "/tmp/ray"}) {
				t.Errorf("the head's Ray container does not share the ray-logs volume: %+v", ray.VolumeMounts)
			}
			worker := mustWorker(t, tt.cluster, Replica{}, opts)
			wantPolicy := corev1.RestartPolicy("")
			if tt.wantV2 {
				wantPolicy = corev1.RestartPolicyNever
			}
			if head.Spec.RestartPolicy != wantPolicy || worker.Spec.RestartPolicy != wantPolicy {
				t.Errorf("restartPolicy head=%q worker=%q, want %q", head.Spec.RestartPolicy, worker.Spec.RestartPolicy, wantPolicy)
			}
			if got := envValue(ray, envAutoscalerV2) == "true"; got != tt.wantV2 {
				t.Errorf("RAY_enable_autoscaler_v2 set = %v, want %v", got, tt.wantV2)
			}
		})
	}
	t.Run("no autoscaler without enableInTreeAutoscaling", func(t *testing.T) {
		head := mustHead(t, newCluster("rc").Obj(), DefaultOptions())
		if len(head.Spec.Containers) != 1 || head.Spec.ServiceAccountName != "" || hasVolume(&head.Spec, rayLogsVolume) {
			t.Errorf("unexpected autoscaler artefacts: %d containers, SA %q", len(head.Spec.Containers), head.Spec.ServiceAccountName)
		}
	})
}

func TestWaitGCSInitContainer(t *testing.T) {
	userEnv := []corev1.EnvVar{{Name: "RAY_USE_TLS", Value: "1"}}
	userMounts := []corev1.VolumeMount{{Name: "certs", MountPath: "/certs"}}
	sc := &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
	rc := newCluster("rc").WorkerContainer(func(c *corev1.Container) {
		c.Env = userEnv
		c.VolumeMounts = userMounts
		c.SecurityContext = sc
		c.ImagePullPolicy = corev1.PullAlways
		c.Resources = resources("8", "32Gi", map[corev1.ResourceName]string{"nvidia.com/gpu": "1"})
	}).Worker(func(g *rayv1.WorkerGroupSpec) {
		g.Template.Spec.InitContainers = []corev1.Container{{Name: "user-init", Image: "busybox"}}
	}).Head(func(h *rayv1.HeadGroupSpec) {
		h.Template.Spec.InitContainers = []corev1.Container{{Name: "tls-init", Image: "busybox"}}
	}).Obj()
	fqdnEnv := []corev1.EnvVar{{Name: "FQ_RAY_IP", Value: "rc-head-svc.ns.svc.cluster.local"}, {Name: "RAY_IP", Value: "rc-head-svc"}}

	worker := mustWorker(t, rc, Replica{}, DefaultOptions())
	if len(worker.Spec.InitContainers) != 2 {
		t.Fatalf("init containers = %d, want the user's and wait-gcs-ready", len(worker.Spec.InitContainers))
	}
	if diff := cmp.Diff(fqdnEnv, worker.Spec.InitContainers[0].Env); diff != "" {
		t.Errorf("user init container env (-want +got):\n%s", diff)
	}
	wait := worker.Spec.InitContainers[1]
	want := corev1.Container{
		Name: "wait-gcs-ready", Image: "rayproject/ray:2.52.0", ImagePullPolicy: corev1.PullAlways,
		Command: []string{"/bin/bash", "-c", "--"}, Args: wait.Args, SecurityContext: sc,
		Env: append(append([]corev1.EnvVar{}, userEnv...), fqdnEnv...), VolumeMounts: userMounts,
		Resources: fixedResources("200m", "256Mi"),
	}
	if diff := cmp.Diff(want, wait); diff != "" {
		t.Errorf("wait-gcs-ready (-want +got):\n%s", diff)
	}
	if len(wait.Args) != 1 || strings.Count(wait.Args[0], "ray health-check --address rc-head-svc.ns.svc.cluster.local:6379") != 2 {
		t.Errorf("wait-gcs-ready does not poll the head's GCS: %q", wait.Args)
	}

	opts := DefaultOptions()
	opts.InitContainerInjection = false
	worker = mustWorker(t, rc, Replica{}, opts)
	if len(worker.Spec.InitContainers) != 1 || worker.Spec.InitContainers[0].Name != "user-init" {
		t.Errorf("init containers with injection disabled = %+v", worker.Spec.InitContainers)
	}
	head := mustHead(t, rc, DefaultOptions())
	if diff := cmp.Diff(fqdnEnv, head.Spec.InitContainers[0].Env); diff != "" {
		t.Errorf("head init container env (-want +got):\n%s", diff)
	}
}

func TestSharedMemoryAndPorts(t *testing.T) {
	tests := []struct {
		name      string
		container func(c *corev1.Container)
		param     string
		wantShm   *resource.Quantity // nil with wantNoShm = no volume
		wantNoShm bool
		wantPorts []corev1.ContainerPort
	}{
		{
			name:      "memory limit caps /dev/shm; metrics port added",
			wantShm:   ptr.To(resource.MustParse("1Gi")),
			wantPorts: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}},
		},
		{
			name: "memory request when there is no limit; existing metrics port kept",
			container: func(c *corev1.Container) {
				c.Resources.Limits = nil
				c.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}
			},
			wantShm:   ptr.To(resource.MustParse("1Gi")),
			wantPorts: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}},
		},
		{
			name:      "explicit plasma directory",
			param:     "/plasma",
			wantNoShm: true,
			wantPorts: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}},
		},
		{
			name: "user's own /dev/shm mount",
			container: func(c *corev1.Container) {
				c.VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: "/dev/shm"}}
			},
			wantNoShm: true,
			wantPorts: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newCluster("rc")
			if tt.container != nil {
				w.WorkerContainer(tt.container)
			}
			if tt.param != "" {
				w.WorkerParam("plasma-directory", tt.param)
			}
			pod := mustWorker(t, w.Obj(), Replica{}, DefaultOptions())
			var shm *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == sharedMemoryVolume {
					shm = &pod.Spec.Volumes[i]
				}
			}
			if tt.wantNoShm != (shm == nil) {
				t.Fatalf("shared-mem volume present = %v, want %v", shm != nil, !tt.wantNoShm)
			}
			if shm != nil {
				if shm.EmptyDir.Medium != corev1.StorageMediumMemory || shm.EmptyDir.SizeLimit.Cmp(*tt.wantShm) != 0 {
					t.Errorf("shared-mem = %+v, want Memory capped at %s", shm.EmptyDir, tt.wantShm)
				}
			}
			if diff := cmp.Diff(tt.wantPorts, pod.Spec.Containers[0].Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildersDoNotMutateInput(t *testing.T) {
	rc := newCluster("rc").Autoscaling(rayv1.AutoscalerVersionV2).Annotation(labels.FTEnabled, "true").
		HeadParam("redis-password", "pw").Spec(func(s *rayv1.RayClusterSpec) {
		s.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
		s.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "r:1", RedisPassword: &rayv1.RedisCredential{Value: "x"}}
	}).Head(func(h *rayv1.HeadGroupSpec) {
		h.Resources = map[string]string{"cpu": "2"}
		h.Labels = map[string]string{"a": "b"}
	}).Obj()
	before := rc.DeepCopy()
	opts := DefaultOptions()
	opts.HeadSidecars = []corev1.Container{{Name: "s"}}
	opts.DefaultContainerEnvs = []corev1.EnvVar{{Name: "D", Value: "1"}}
	optsBefore := append([]corev1.EnvVar{}, opts.DefaultContainerEnvs...)
	mustHead(t, rc, opts)
	mustWorker(t, rc, Replica{}, opts)
	if _, err := RedisCleanupJob(rc, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := HeadService(rc, opts); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, rc); diff != "" {
		t.Errorf("the RayCluster was modified (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(optsBefore, opts.DefaultContainerEnvs); diff != "" {
		t.Errorf("the options were modified (-before +after):\n%s", diff)
	}
}

func TestPodErrors(t *testing.T) {
	noHead := newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) { h.Template.Spec.Containers = nil }).Obj()
	if _, err := HeadPod(noHead, DefaultOptions()); err == nil {
		t.Errorf("HeadPod without containers: no error")
	}
	noWorker := newCluster("rc").Worker(func(g *rayv1.WorkerGroupSpec) { g.Template.Spec.Containers = nil }).Obj()
	if _, err := WorkerPod(noWorker, &noWorker.Spec.WorkerGroupSpecs[0], Replica{}, DefaultOptions()); err == nil {
		t.Errorf("WorkerPod without containers: no error")
	}
	if _, err := WorkerPod(noWorker, nil, Replica{}, DefaultOptions()); err == nil {
		t.Errorf("WorkerPod without group: no error")
	}
}
