package main

import (
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/rayfleet/rayfleet/shared/manageropts"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/reporter"
)

func TestCacheOptionsSelectOwnedObjects(t *testing.T) {
	opts, err := cacheOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.DefaultTransform == nil {
		t.Error("DefaultTransform is nil, want managedFields stripped")
	}
	if opts.DefaultNamespaces != nil {
		t.Errorf("DefaultNamespaces = %v, want all namespaces", opts.DefaultNamespaces)
	}
	selectors := map[string]cache.ByObject{}
	for obj, by := range opts.ByObject {
		switch obj.(type) {
		case *corev1.Pod:
			selectors["Pod"] = by
		case *batchv1.Job:
			selectors["Job"] = by
		case *discoveryv1.EndpointSlice:
			selectors["EndpointSlice"] = by
		default:
			t.Errorf("unexpected ByObject entry for %T", obj)
		}
	}
	rayNode := map[string]string{"ray.io/cluster": "c", "ray.io/node-type": "head"}
	createdByUser := map[string]string{"ray.io/cluster": "c", "app.kubernetes.io/created-by": "me"}
	unrelated := map[string]string{"app": "web"}
	createdByAlone := map[string]string{"app.kubernetes.io/created-by": "kuberay-operator"}
	// What the EndpointSlice controller puts on the slices of a RayService's serve Service:
	// the Service's labels plus its own.
	serveSlice := map[string]string{
		"ray.io/serve": "rs-serve", "ray.io/originated-from-cr-name": "rs",
		"kubernetes.io/service-name": "rs-serve-svc", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
	}
	headSlice := map[string]string{
		"ray.io/cluster": "c", "ray.io/node-type": "head", "kubernetes.io/service-name": "c-head-svc",
	}
	tests := []struct {
		kind   string
		name   string
		labels map[string]string
		want   bool
	}{
		{kind: "Pod", name: "ray node", labels: rayNode, want: true},
		{kind: "Pod", name: "created-by overridden by the user", labels: createdByUser, want: true},
		{kind: "Pod", name: "unrelated", labels: unrelated, want: false},
		{kind: "Pod", name: "created-by alone", labels: createdByAlone, want: false},
		{kind: "Job", name: "ray node", labels: rayNode, want: true},
		{kind: "Job", name: "unrelated", labels: unrelated, want: false},
		{kind: "EndpointSlice", name: "serve Service slice", labels: serveSlice, want: true},
		{kind: "EndpointSlice", name: "slice made by another manager, service-name alone", labels: map[string]string{
			"kubernetes.io/service-name": "rs-serve-svc",
		}, want: true},
		{kind: "EndpointSlice", name: "head Service slice", labels: headSlice, want: true},
		{kind: "EndpointSlice", name: "serve label without a Service", labels: map[string]string{"ray.io/serve": "x"}, want: false},
		{kind: "EndpointSlice", name: "unrelated", labels: unrelated, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.name, func(t *testing.T) {
			by, ok := selectors[tt.kind]
			if !ok || by.Label == nil {
				t.Fatalf("%s: no label selector", tt.kind)
			}
			if got := by.Label.Matches(k8slabels.Set(tt.labels)); got != tt.want {
				t.Errorf("%s selector %q on %s: matches = %v, want %v", tt.kind, by.Label, tt.name, got, tt.want)
			}
		})
	}
	if selectors["Pod"].Transform == nil {
		t.Error("Pods are cached untrimmed, want raycluster.TrimPod")
	}
	if selectors["EndpointSlice"].Transform == nil {
		t.Error("EndpointSlices are cached untrimmed, want rayservice.TrimEndpointSlice")
	}
}

func TestCacheOptionsWatchNamespaces(t *testing.T) {
	opts, err := cacheOptions([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(opts.DefaultNamespaces))
	for ns := range opts.DefaultNamespaces {
		got = append(got, ns)
	}
	if diff := cmp.Diff([]string{"a", "b"}, got, cmpSortStrings); diff != "" {
		t.Errorf("DefaultNamespaces (-want +got):\n%s", diff)
	}
}

var cmpSortStrings = cmp.Transformer("sort", func(in []string) map[string]bool {
	out := make(map[string]bool, len(in))
	for _, s := range in {
		out[s] = true
	}
	return out
})

// defaultFlags are the spoke's flags when none is given.
var defaultFlags = flags{
	manager: manageropts.Options{
		MetricsAddr: manageropts.DefaultMetricsAddr, ProbeAddr: manageropts.DefaultProbeAddr, PprofAddr: "0",
		LeaderElectionID: defaultLeaderElectionID, QPS: manageropts.DefaultQPS, Burst: manageropts.DefaultBurst,
		MaxConcurrentReconciles: 16,
	},
	dashboardTemplate: dashboard.DefaultDashboardTemplate, proxyTemplate: dashboard.DefaultProxyTemplate,
	reportInterval: reporter.DefaultInterval, podSecurityLevel: "baseline",
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		env         map[string]string
		want        flags
		wantWorkers int
		wantDevel   bool
		wantGates   string
		wantHelp    bool
		wantErr     bool
	}{
		{
			name:        "defaults",
			want:        defaultFlags,
			wantWorkers: 16,
		},
		{
			name: "everything set",
			args: []string{
				"--metrics-bind-address=0", "--health-probe-bind-address=:9000", "--leader-elect",
				"--leader-election-id=x", "--leader-election-namespace=sys", "--kube-api-qps=500",
				"--kube-api-burst=1000", "--max-concurrent-reconciles=4", "--watch-namespace=a,b",
				"--kubeconfig=/dev/null", "--zap-devel",
				"--dashboard-address-template=http://127.0.0.1:9/{namespace}/{service}",
				"--serve-proxy-address-template=http://127.0.0.1:9/proxy/{podIP}",
				"--report-interval=30s", "--pod-security-level=restricted",
			},
			want: flags{
				manager: manageropts.Options{
					MetricsAddr: "0", ProbeAddr: ":9000", PprofAddr: "0", LeaderElect: true, LeaderElectionID: "x",
					LeaderElectionNamespace: "sys", QPS: 500, Burst: 1000, MaxConcurrentReconciles: 4, WatchNamespaces: "a,b",
				},
				dashboardTemplate: "http://127.0.0.1:9/{namespace}/{service}",
				proxyTemplate:     "http://127.0.0.1:9/proxy/{podIP}",
				reportInterval:    30 * time.Second,
				podSecurityLevel:  "restricted",
			},
			wantWorkers: 4,
			wantDevel:   true,
		},
		{
			name:        "cluster domain from the environment reaches both reconcilers",
			env:         map[string]string{"CLUSTER_DOMAIN": "example.org"},
			want:        defaultFlags,
			wantWorkers: 16,
		},
		{name: "help", args: []string{"--help"}, wantHelp: true},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantErr: true},
		{name: "stray argument", args: []string{"extra"}, wantErr: true},
		{name: "unknown Pod Security level", args: []string{"--pod-security-level=strict"}, wantErr: true},
		{name: "bad worker count", args: []string{"--max-concurrent-reconciles=many"}, wantErr: true},
		{name: "unknown Pod Security level", args: []string{"--pod-security-level=strict"}, wantErr: true},
		{
			name:        "KubeRay feature gates the spoke honours",
			args:        []string{"--feature-gates=RayServiceIncrementalUpgrade=true,RayClusterStatusConditions=true"},
			want:        defaultFlags,
			wantWorkers: 16,
			wantGates:   "RayClusterStatusConditions=true,RayServiceIncrementalUpgrade=true",
		},
		{name: "feature the spoke always has turned off", args: []string{"--feature-gates=RayMultiHostIndexing=false"}, wantErr: true},
		{name: "RayJob feature gate", args: []string{"--feature-gates=RayJobDeletionPolicy=true"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			f, opts, help, err := parseArgs(tt.args, getenv, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseArgs error = %v, wantErr %v", err, tt.wantErr)
			}
			if help != tt.wantHelp {
				t.Errorf("help = %v, want %v", help, tt.wantHelp)
			}
			if tt.wantErr || tt.wantHelp {
				return
			}
			if f.manager.Zap.Development != tt.wantDevel {
				t.Errorf("zap Development = %v, want %v", f.manager.Zap.Development, tt.wantDevel)
			}
			f.manager.Zap = zap.Options{}
			if got := f.featureGates.String(); got != tt.wantGates {
				t.Errorf("feature gates = %q, want %q", got, tt.wantGates)
			}
			f.featureGates = nil
			if got := opts.rayCluster.PodSecurity.Level(); got != f.podSecurityLevel {
				t.Errorf("RayCluster reconciler checks Pods at %q, want --pod-security-level %q", got, f.podSecurityLevel)
			}
			if diff := cmp.Diff(tt.want, f, cmp.AllowUnexported(flags{})); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
			if opts.rayCluster.MaxConcurrentReconciles != tt.wantWorkers || opts.rayService.MaxConcurrentReconciles != tt.wantWorkers {
				t.Errorf("MaxConcurrentReconciles = %d (RayCluster), %d (RayService), want %d for both",
					opts.rayCluster.MaxConcurrentReconciles, opts.rayService.MaxConcurrentReconciles, tt.wantWorkers)
			}
			if diff := cmp.Diff(opts.rayCluster.Build, opts.rayService.Build); diff != "" {
				t.Errorf("RayService build options differ from the RayCluster's (-rc +rs):\n%s", diff)
			}
			want := tt.env["CLUSTER_DOMAIN"]
			if want == "" {
				want = "cluster.local"
			}
			if opts.rayService.Build.ClusterDomain != want {
				t.Errorf("cluster domain = %q, want %q", opts.rayService.Build.ClusterDomain, want)
			}
		})
	}
}

func TestClientOptionsNeverCacheSecrets(t *testing.T) {
	opts := clientOptions()
	if opts.Cache == nil {
		t.Fatal("no cache options")
	}
	for _, obj := range opts.Cache.DisableFor {
		if _, ok := obj.(*corev1.Secret); ok {
			return
		}
	}
	t.Errorf("Secrets are read through the cache (DisableFor = %v); that needs list/watch on every Secret", opts.Cache.DisableFor)
}
