package charts_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/spoke/features"
)

// The arguments every render has, unless a variant changes them.
var (
	hubDefaultArgs = []string{
		"--leader-elect", "--leader-election-namespace=" + releaseNS, "--hub-namespace=" + releaseNS,
		"--hub-name=rayfleet", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
		"--kube-api-qps=1000", "--kube-api-burst=2000", "--member-api-qps=200", "--member-api-burst=400",
		"--max-concurrent-reconciles=16", "--heartbeat-timeout=40s", "--credential-expiry-warning=720h",
		"--resync=10s", "--traffic-cluster-domain=cluster.local",
		"--zap-log-level=info", "--zap-encoder=json",
	}
	spokeDefaultArgs = []string{
		"--leader-elect", "--leader-election-namespace=" + releaseNS,
		"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
		"--kube-api-qps=1000", "--kube-api-burst=2000", "--max-concurrent-reconciles=16",
		"--report-interval=10s", "--pod-security-level=baseline", "--zap-log-level=info", "--zap-encoder=json",
	}
)

func TestDeployment(t *testing.T) {
	tests := []struct {
		name     string
		chart    string
		set      []string
		replicas int32
		wantArgs []string // in this order
		// wantPDB and wantServiceMonitor say whether those objects are rendered.
		wantPDB, wantServiceMonitor bool
		metricsPort, healthPort     int32
	}{
		{name: "defaults", chart: hubChart, replicas: 1, wantArgs: hubDefaultArgs},
		{name: "defaults", chart: spokeChart, replicas: 1, wantArgs: spokeDefaultArgs},
		{name: "no replicas", chart: hubChart, set: []string{"replicas=0"}, replicas: 0, wantArgs: hubDefaultArgs},
		{name: "no replicas", chart: spokeChart, set: []string{"replicas=0"}, replicas: 0, wantArgs: spokeDefaultArgs},
		{name: "two replicas", chart: hubChart, set: []string{"replicas=2"}, replicas: 2, wantArgs: hubDefaultArgs, wantPDB: true},
		{name: "two replicas", chart: spokeChart, set: []string{"replicas=2"}, replicas: 2, wantArgs: spokeDefaultArgs, wantPDB: true},
		{
			name: "service monitor", chart: hubChart, set: []string{"metrics.serviceMonitor.enabled=true"},
			replicas: 1, wantArgs: hubDefaultArgs, wantServiceMonitor: true,
		},
		{
			name: "service monitor", chart: spokeChart, set: []string{"metrics.serviceMonitor.enabled=true"},
			replicas: 1, wantArgs: spokeDefaultArgs, wantServiceMonitor: true,
		},
		{
			name: "no leader election", chart: hubChart, set: []string{"leaderElection.enabled=false"}, replicas: 1,
			wantArgs: withoutLeaderElection(hubDefaultArgs),
		},
		{
			name: "every flag value", chart: hubChart, replicas: 1,
			set: []string{
				"hubName=east", "watchNamespaces={team-a,team-b}", "kubeAPI.qps=50", "kubeAPI.burst=100", "memberAPI.qps=20",
				"memberAPI.burst=40", "maxConcurrentReconciles=4", "heartbeatTimeout=1m", "credentialExpiryWarning=168h", "resync=30s",
				"trafficCluster.cidrs={10.244.0.0/16,10.96.0.0/12}", "trafficCluster.domain=corp.internal",
				"logging.level=debug", "logging.format=console", "metrics.port=9090", "health.port=9091",
				"extraArgs={--zap-devel}",
			},
			wantArgs: []string{
				"--leader-elect", "--leader-election-namespace=" + releaseNS, "--hub-namespace=" + releaseNS,
				"--hub-name=east", "--metrics-bind-address=:9090", "--health-probe-bind-address=:9091",
				"--kube-api-qps=50", "--kube-api-burst=100", "--member-api-qps=20", "--member-api-burst=40",
				"--max-concurrent-reconciles=4", "--watch-namespace=team-a,team-b", "--heartbeat-timeout=1m", "--credential-expiry-warning=168h", "--resync=30s",
				"--traffic-cluster-cidrs=10.244.0.0/16,10.96.0.0/12", "--traffic-cluster-domain=corp.internal",
				"--zap-log-level=debug", "--zap-encoder=console", "--zap-devel",
			},
			metricsPort: 9090, healthPort: 9091,
		},
		{
			name: "every flag value", chart: spokeChart, replicas: 1,
			set: []string{
				"watchNamespaces={team-a}", "kubeAPI.qps=50", "kubeAPI.burst=100", "maxConcurrentReconciles=4",
				"reportInterval=0", "hubPolicy.minPodSecurityLevel=restricted", "dashboard.addressTemplate=http://127.0.0.1:9/{namespace}/{service}",
				"dashboard.proxyAddressTemplate=http://{podIP}:{port}", "logging.level=error",
				// Given out of order: the flag lists them sorted.
				"featureGates.RayServiceIncrementalUpgrade=true", "featureGates.RayClusterStatusConditions=true",
				"featureGates.RayMultiHostIndexing=true", "extraArgs={--zap-devel}",
			},
			wantArgs: []string{
				"--leader-elect", "--leader-election-namespace=" + releaseNS,
				"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
				"--kube-api-qps=50", "--kube-api-burst=100", "--max-concurrent-reconciles=4",
				"--watch-namespace=team-a", "--report-interval=0", "--pod-security-level=restricted",
				"--dashboard-address-template=http://127.0.0.1:9/{namespace}/{service}",
				"--serve-proxy-address-template=http://{podIP}:{port}",
				"--feature-gates=RayClusterStatusConditions=true,RayMultiHostIndexing=true,RayServiceIncrementalUpgrade=true",
				"--zap-log-level=error", "--zap-encoder=json", "--zap-devel",
			},
		},
		{
			name: "a gate turned off renders as asked", chart: spokeChart, replicas: 1,
			set: []string{"featureGates.RayServiceIncrementalUpgrade=false", "featureGates.RayClusterStatusConditions=true"},
			wantArgs: insertBefore(spokeDefaultArgs, "--zap-log-level=info",
				"--feature-gates=RayClusterStatusConditions=true,RayServiceIncrementalUpgrade=false"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.chart+"/"+tt.name, func(t *testing.T) {
			m := mustRender(t, tt.chart, tt.set...)
			var d appsv1.Deployment
			m.decode(t, "Deployment", tt.chart, &d)
			if d.Namespace != releaseNS {
				t.Errorf("Deployment namespace = %q, want %q", d.Namespace, releaseNS)
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != tt.replicas {
				t.Errorf("replicas = %v, want %d", d.Spec.Replicas, tt.replicas)
			}
			pod := d.Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]
			binary := "/" + strings.TrimPrefix(tt.chart, "rayfleet-")
			if !slices.Equal(c.Command, []string{binary}) {
				t.Errorf("command = %v, want [%s]", c.Command, binary)
			}
			if !slices.Equal(c.Args, tt.wantArgs) {
				t.Errorf("args =\n  %s\nwant\n  %s", strings.Join(c.Args, "\n  "), strings.Join(tt.wantArgs, "\n  "))
			}
			assertGatesAccepted(t, c.Args)
			metricsPort, healthPort := orDefault(tt.metricsPort, 8080), orDefault(tt.healthPort, 8081)
			assertPorts(t, c, metricsPort, healthPort)
			assertProbes(t, c)
			assertSecurity(t, pod, c)
			assertPodNamespaceEnv(t, c)
			if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
				t.Error("automountServiceAccountToken is not true; the binary talks to the API server")
			}
			if pod.ServiceAccountName != tt.chart {
				t.Errorf("serviceAccountName = %q, want %q", pod.ServiceAccountName, tt.chart)
			}
			if c.Image != "ghcr.io/rayfleet/rayfleet:0.1.0" {
				t.Errorf("image = %q, want the chart's appVersion", c.Image)
			}
			assertMetricsService(t, m, tt.chart, d.Spec.Selector.MatchLabels)
			assertPDB(t, m, tt.chart, tt.wantPDB, d.Spec.Selector.MatchLabels)
			if got := len(m.ofKind("ServiceMonitor")); got != map[bool]int{false: 0, true: 1}[tt.wantServiceMonitor] {
				t.Errorf("%d ServiceMonitors, want one only when enabled (%v)", got, tt.wantServiceMonitor)
			}
			assertStandardLabels(t, m)
		})
	}
}

func TestServiceMonitor(t *testing.T) {
	for _, chart := range []string{hubChart, spokeChart} {
		t.Run(chart, func(t *testing.T) {
			m := mustRender(t, chart, "metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.interval=15s",
				"metrics.serviceMonitor.labels.release=prom")
			sms := m.ofKind("ServiceMonitor")
			if len(sms) != 1 {
				t.Fatalf("%d ServiceMonitors, want 1", len(sms))
			}
			var sm struct {
				APIVersion string `json:"apiVersion"`
				Spec       struct {
					Selector struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"selector"`
					Endpoints []struct {
						Port, Path, Interval string
					} `json:"endpoints"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(sms[0].YAML, &sm); err != nil {
				t.Fatal(err)
			}
			if sm.APIVersion != "monitoring.coreos.com/v1" {
				t.Errorf("apiVersion = %q", sm.APIVersion)
			}
			if sms[0].Labels["release"] != "prom" {
				t.Errorf("labels = %v, want the extra label release=prom", sms[0].Labels)
			}
			if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Interval != "15s" ||
				sm.Spec.Endpoints[0].Path != "/metrics" {
				t.Errorf("endpoints = %+v, want the metrics port every 15s", sm.Spec.Endpoints)
			}
			var svc corev1.Service
			m.decode(t, "Service", chart+"-metrics", &svc)
			for k, v := range sm.Spec.Selector.MatchLabels {
				if svc.Labels[k] != v {
					t.Errorf("ServiceMonitor selects %s=%s, which the metrics Service does not carry", k, v)
				}
			}
		})
	}
}

// assertGatesAccepted checks that a rendered --feature-gates parses as the spoke parses it,
// unless it turns a gate off (which the spoke rejects by design).
func assertGatesAccepted(t *testing.T, args []string) {
	t.Helper()
	for _, a := range args {
		value, ok := strings.CutPrefix(a, "--feature-gates=")
		if !ok || strings.Contains(value, "=false") {
			continue
		}
		if err := features.New().Set(value); err != nil {
			t.Errorf("the spoke rejects the rendered %s: %v", a, err)
		}
	}
}

func assertPorts(t *testing.T, c corev1.Container, metrics, health int32) {
	t.Helper()
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["metrics"] != metrics || ports["health"] != health {
		t.Errorf("container ports = %v, want metrics %d and health %d", ports, metrics, health)
	}
}

func assertProbes(t *testing.T, c corev1.Container) {
	t.Helper()
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s probe = %+v, want an HTTP GET", p.name, p.probe)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != intstr.FromString("health") {
			t.Errorf("%s probe gets %s on %s, want %s on the health port", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
		}
	}
}

func assertSecurity(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 65532 || psc.RunAsGroup == nil || *psc.RunAsGroup != 65532 {
		t.Error("pod securityContext does not run as 65532:65532, the image's nonroot user")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod seccompProfile is not RuntimeDefault")
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("container allows privilege escalation")
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("container root filesystem is not read-only")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Error("container does not drop ALL capabilities (and add none)")
	}
	if sc != nil && sc.Privileged != nil && *sc.Privileged {
		t.Error("container is privileged")
	}
	requests, limits := c.Resources.Requests, c.Resources.Limits
	if requests.Cpu().String() != "100m" || requests.Memory().String() != "128Mi" || limits.Memory().String() != "512Mi" {
		t.Errorf("resources = %+v, want requests 100m/128Mi and a 512Mi memory limit", c.Resources)
	}
}

func assertPodNamespaceEnv(t *testing.T, c corev1.Container) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == "POD_NAMESPACE" {
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("POD_NAMESPACE = %+v, want the downward API's metadata.namespace", e)
			}
			return
		}
	}
	t.Error("no POD_NAMESPACE environment variable")
}

func assertMetricsService(t *testing.T, m manifests, chart string, podLabels map[string]string) {
	t.Helper()
	var svc corev1.Service
	m.decode(t, "Service", chart+"-metrics", &svc)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort != intstr.FromString("metrics") {
		t.Errorf("metrics Service ports = %+v, want one named metrics to the container's metrics port", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if podLabels[k] != v {
			t.Errorf("metrics Service selects %s=%s, which the Pods do not carry", k, v)
		}
	}
}

func assertPDB(t *testing.T, m manifests, chart string, want bool, podLabels map[string]string) {
	t.Helper()
	pdbs := m.ofKind("PodDisruptionBudget")
	if !want {
		if len(pdbs) != 0 {
			t.Errorf("%d PodDisruptionBudgets, want none with one replica or fewer", len(pdbs))
		}
		return
	}
	var pdb policyv1.PodDisruptionBudget
	m.decode(t, "PodDisruptionBudget", chart, &pdb)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable = %v, want 1", pdb.Spec.MaxUnavailable)
	}
	for k, v := range pdb.Spec.Selector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("PDB selects %s=%s, which the Pods do not carry", k, v)
		}
	}
}

// assertStandardLabels checks the recommended labels on every rendered object.
func assertStandardLabels(t *testing.T, m manifests) {
	t.Helper()
	for _, o := range m {
		for _, key := range []string{
			"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
			"app.kubernetes.io/component", "helm.sh/chart",
		} {
			if o.Labels[key] == "" {
				t.Errorf("%s %s has no %s label", o.Kind, o.Name, key)
			}
		}
		if o.Labels["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s %s: app.kubernetes.io/managed-by = %q, want Helm", o.Kind, o.Name, o.Labels["app.kubernetes.io/managed-by"])
		}
	}
}

func withoutLeaderElection(args []string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, "--leader-elect") })
}

func insertBefore(args []string, before string, add ...string) []string {
	i := slices.Index(args, before)
	return slices.Insert(slices.Clone(args), i, add...)
}

func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}
