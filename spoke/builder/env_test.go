package builder

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func envNames(c *corev1.Container) []string {
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	return names
}

func TestRayContainerEnv(t *testing.T) {
	common := []string{envRayClusterName, envRayClusterNamespace, envRayCloudInstanceID, envRayNodeTypeName, envGeneratedStartCmd, envRayPort}
	tests := []struct {
		name      string
		cluster   *rayv1.RayCluster
		opts      func(*Options)
		worker    bool
		wantNames []string
		wantVals  map[string]string
	}{
		{
			name:      "head",
			cluster:   newCluster("rc").Obj(),
			wantNames: append(append([]string{}, common...), envRayAddress, envUsageStatsInUse, envUsageStatsExtraTags, envDashboardK8sDiskUsage),
			wantVals: map[string]string{
				envRayPort: "6379", envRayAddress: "127.0.0.1:6379", envUsageStatsInUse: "1",
				envUsageStatsExtraTags: "kuberay_version=v1.6.2;kuberay_crd=RayCluster", envDashboardK8sDiskUsage: "1",
			},
		},
		{
			name:      "worker",
			cluster:   newCluster("rc").Obj(),
			worker:    true,
			wantNames: append(append([]string{envFQRayIP, envRayIP}, common...), envRayAddress, envUsageStatsInUse, envDashboardK8sDiskUsage),
			wantVals: map[string]string{
				envFQRayIP: "rc-head-svc.ns.svc.cluster.local", envRayIP: "rc-head-svc",
				envRayAddress: "rc-head-svc.ns.svc.cluster.local:6379",
			},
		},
		{
			name: "worker with custom head service, domain and port",
			cluster: newCluster("rc").HeadParam("port", "7000").Head(func(h *rayv1.HeadGroupSpec) {
				h.HeadService = &corev1.Service{}
				h.HeadService.Name = "my-head"
			}).Obj(),
			opts:   func(o *Options) { o.ClusterDomain = "corp.local" },
			worker: true,
			wantVals: map[string]string{
				envFQRayIP: "my-head.ns.svc.corp.local", envRayIP: "my-head", envRayPort: "7000",
				envRayAddress: "my-head.ns.svc.corp.local:7000",
			},
		},
		{
			name:    "RayService head gets shorter failure timeouts",
			cluster: newCluster("rc").Label(labels.OriginatedFromCRD, "RayService").Obj(),
			wantNames: append(append([]string{}, common...), envTaskWaitForDeathInfo, envGCSServerRequestTimeout, envServeKVTimeout,
				envRayAddress, envUsageStatsInUse, envUsageStatsExtraTags, envDashboardK8sDiskUsage),
			wantVals: map[string]string{
				envTaskWaitForDeathInfo: "0", envGCSServerRequestTimeout: "5", envServeKVTimeout: "5",
				envUsageStatsExtraTags: "kuberay_version=v1.6.2;kuberay_crd=RayService",
			},
		},
		{
			name:     "RayJob is reported in the usage tags",
			cluster:  newCluster("rc").Label(labels.OriginatedFromCRD, "RayJob").Obj(),
			wantVals: map[string]string{envUsageStatsExtraTags: "kuberay_version=v1.6.2;kuberay_crd=RayJob"},
		},
		{
			name: "user values and operator defaults",
			cluster: newCluster("rc").HeadContainer(func(c *corev1.Container) {
				c.Env = []corev1.EnvVar{{Name: envRayAddress, Value: "auto"}, {Name: "FOO", Value: "user"}}
			}).Obj(),
			opts: func(o *Options) {
				o.DefaultContainerEnvs = []corev1.EnvVar{{Name: "FOO", Value: "operator"}, {Name: "BAR", Value: "operator"}}
				o.KubeRayVersion = "v9"
			},
			wantNames: append(append([]string{envRayAddress, "FOO", "BAR"}, common...), envUsageStatsInUse, envUsageStatsExtraTags, envDashboardK8sDiskUsage),
			wantVals: map[string]string{
				envRayAddress: "auto", "FOO": "user", "BAR": "operator", envUsageStatsExtraTags: "kuberay_version=v9;kuberay_crd=RayCluster",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			var pod *corev1.Pod
			if tt.worker {
				pod = mustWorker(t, tt.cluster, Replica{}, opts)
			} else {
				pod = mustHead(t, tt.cluster, opts)
			}
			ray := &pod.Spec.Containers[0]
			if tt.wantNames != nil {
				if diff := cmp.Diff(tt.wantNames, envNames(ray)); diff != "" {
					t.Errorf("env names (-want +got):\n%s", diff)
				}
			}
			for k, v := range tt.wantVals {
				if got := envValue(ray, k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			clusterName, _ := env(ray, envRayClusterName)
			if clusterName.ValueFrom == nil || clusterName.ValueFrom.FieldRef.FieldPath != "metadata.labels['ray.io/cluster']" {
				t.Errorf("RAY_CLUSTER_NAME does not come from the ray.io/cluster label: %+v", clusterName)
			}
		})
	}
}

func TestGCSFaultTolerance(t *testing.T) {
	secretPassword := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Key: "password",
	}}
	tests := []struct {
		name            string
		cluster         *rayv1.RayCluster
		wantFT          string
		wantStorageNS   string // head annotation and env; "" = absent
		wantHeadEnv     map[string]string
		wantHeadAbsent  []string
		wantInCommand   []string
		wantWorkerRetry string
	}{
		{
			name:           "disabled",
			cluster:        newCluster("rc").Obj(),
			wantFT:         "false",
			wantHeadAbsent: []string{envExternalStorageNS, envRedisAddress, envRedisPassword},
		},
		{
			name:            "legacy annotation with inline password",
			cluster:         newCluster("rc").Annotation(labels.FTEnabled, "True").HeadParam("redis-password", "pw").Obj(),
			wantFT:          "true",
			wantStorageNS:   "uid-1",
			wantHeadEnv:     map[string]string{envRedisPassword: "pw"},
			wantHeadAbsent:  []string{envRedisAddress},
			wantInCommand:   []string{"--redis-password=pw"},
			wantWorkerRetry: "600",
		},
		{
			name:            "storage namespace annotation",
			cluster:         newCluster("rc").Annotation(labels.FTEnabled, "true").Annotation(labels.ExternalStorageNamespace, "from-annotation").Obj(),
			wantFT:          "true",
			wantStorageNS:   "from-annotation",
			wantWorkerRetry: "600",
		},
		{
			name: "options with credentials and namespace",
			cluster: newCluster("rc").Annotation(labels.ExternalStorageNamespace, "from-annotation").Spec(func(s *rayv1.RayClusterSpec) {
				s.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{
					RedisAddress:             "redis:6379",
					RedisUsername:            &rayv1.RedisCredential{Value: "user"},
					RedisPassword:            &rayv1.RedisCredential{ValueFrom: secretPassword},
					ExternalStorageNamespace: "from-options",
				}
			}).Obj(),
			wantFT:          "true",
			wantStorageNS:   "from-options",
			wantHeadEnv:     map[string]string{envRedisAddress: "redis:6379", envRedisUsername: "user"},
			wantInCommand:   []string{"--redis-password=$REDIS_PASSWORD", "--redis-username=$REDIS_USERNAME"},
			wantWorkerRetry: "600",
		},
		{
			name: "user's reconnect timeout is kept",
			cluster: newCluster("rc").Annotation(labels.FTEnabled, "true").WorkerContainer(func(c *corev1.Container) {
				c.Env = []corev1.EnvVar{{Name: envGCSReconnectTimeout, Value: "30"}}
			}).Obj(),
			wantFT:          "true",
			wantStorageNS:   "uid-1",
			wantWorkerRetry: "30",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := mustHead(t, tt.cluster, DefaultOptions())
			ray := &head.Spec.Containers[0]
			if got := head.Annotations[labels.FTEnabled]; got != tt.wantFT {
				t.Errorf("ft-enabled annotation = %q, want %q", got, tt.wantFT)
			}
			if got := head.Annotations[labels.ExternalStorageNamespace]; got != tt.wantStorageNS {
				t.Errorf("storage namespace annotation = %q, want %q", got, tt.wantStorageNS)
			}
			if got := envValue(ray, envExternalStorageNS); got != tt.wantStorageNS {
				t.Errorf("%s = %q, want %q", envExternalStorageNS, got, tt.wantStorageNS)
			}
			for k, v := range tt.wantHeadEnv {
				if got := envValue(ray, k); got != v {
					t.Errorf("head %s = %q, want %q", k, got, v)
				}
			}
			for _, k := range tt.wantHeadAbsent {
				if _, ok := env(ray, k); ok {
					t.Errorf("head has %s, want it absent", k)
				}
			}
			for _, flag := range tt.wantInCommand {
				if cmd := envValue(ray, envGeneratedStartCmd); !containsWord(cmd, flag) {
					t.Errorf("start command %q lacks %q", cmd, flag)
				}
			}
			worker := mustWorker(t, tt.cluster, Replica{}, DefaultOptions())
			if got := envValue(&worker.Spec.Containers[0], envGCSReconnectTimeout); got != tt.wantWorkerRetry {
				t.Errorf("worker %s = %q, want %q", envGCSReconnectTimeout, got, tt.wantWorkerRetry)
			}
			if _, ok := worker.Annotations[labels.FTEnabled]; ok {
				t.Errorf("worker has the ft-enabled annotation; KubeRay sets it on the head only")
			}
		})
	}
	t.Run("password from a Secret is referenced, not copied", func(t *testing.T) {
		head := mustHead(t, tests[3].cluster, DefaultOptions())
		pw, ok := env(&head.Spec.Containers[0], envRedisPassword)
		if !ok || !cmp.Equal(pw.ValueFrom, secretPassword) || pw.Value != "" {
			t.Errorf("REDIS_PASSWORD = %+v, want a reference to the redis Secret", pw)
		}
	})
}

func TestTokenAuth(t *testing.T) {
	token := func(secret string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "auth_token",
		}}
	}
	tests := []struct {
		name       string
		auth       *rayv1.AuthOptions
		wantMode   bool
		wantSecret string // "" = no RAY_AUTH_TOKEN
		wantK8s    bool
	}{
		{name: "off", auth: nil},
		{name: "disabled", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled}},
		{name: "token from the generated Secret", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}, wantMode: true, wantSecret: "rc"},
		{
			name:       "token from the user's Secret",
			auth:       &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("mine")},
			wantMode:   true,
			wantSecret: "mine",
		},
		{
			name:     "Kubernetes-delegated auth",
			auth:     &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)},
			wantMode: true,
			wantK8s:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newCluster("rc").Autoscaling("").Spec(func(s *rayv1.RayClusterSpec) { s.AuthOptions = tt.auth }).Obj()
			head := mustHead(t, rc, DefaultOptions())
			worker := mustWorker(t, rc, Replica{}, DefaultOptions())
			containers := map[string]*corev1.Container{
				"head ray":       &head.Spec.Containers[0],
				"autoscaler":     &head.Spec.Containers[containerIndex(head, AutoscalerContainerName)],
				"worker ray":     &worker.Spec.Containers[0],
				"wait-gcs-ready": &worker.Spec.InitContainers[0],
			}
			for where, c := range containers {
				if got := envValue(c, envAuthMode) == "token"; got != tt.wantMode {
					t.Errorf("%s: RAY_AUTH_MODE=token is %v, want %v", where, got, tt.wantMode)
				}
				tok, hasToken := env(c, envAuthToken)
				switch {
				case tt.wantSecret == "" && hasToken:
					t.Errorf("%s: unexpected RAY_AUTH_TOKEN", where)
				case tt.wantSecret != "" && !cmp.Equal(tok.ValueFrom, token(tt.wantSecret)):
					t.Errorf("%s: RAY_AUTH_TOKEN = %+v, want from Secret %q", where, tok, tt.wantSecret)
				}
				mounted := false
				for _, m := range c.VolumeMounts {
					mounted = mounted || (m.Name == rayTokenVolumeName && m.MountPath == rayTokenMountPath && m.ReadOnly)
				}
				if k8s := envValue(c, envK8sTokenAuth) == "true"; k8s != tt.wantK8s || mounted != tt.wantK8s {
					t.Errorf("%s: k8s token auth env=%v mount=%v, want %v", where, k8s, mounted, tt.wantK8s)
				}
			}
			for _, pod := range []*corev1.Pod{head, worker} {
				if got := hasVolume(&pod.Spec, rayTokenVolumeName); got != tt.wantK8s {
					t.Errorf("%s: projected token volume present = %v, want %v", pod.GenerateName, got, tt.wantK8s)
				}
			}
		})
	}
}

// containsWord reports whether flag appears in cmd as a whole space-separated word.
func containsWord(cmd, flag string) bool {
	return slices.Contains(strings.Fields(cmd), flag)
}
