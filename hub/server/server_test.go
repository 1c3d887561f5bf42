package server

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/rayfleet/rayfleet/hub/fleet"
	"github.com/rayfleet/rayfleet/hub/membership"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/manageropts"
)

func TestFlagDefaults(t *testing.T) {
	var f flags
	fs := flag.NewFlagSet("hub", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindFlags(fs, &f)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.hubNamespace != "rayfleet-system" || f.heartbeatTimeout != 40*time.Second || f.resync != 10*time.Second {
		t.Errorf("defaults: hub namespace %q, heartbeat timeout %s, resync %s", f.hubNamespace, f.heartbeatTimeout, f.resync)
	}
	if err := fs.Parse([]string{"--hub-namespace=fleet", "--heartbeat-timeout=1m", "--resync=30s"}); err != nil {
		t.Fatal(err)
	}
	if f.hubNamespace != "fleet" || f.heartbeatTimeout != time.Minute || f.resync != 30*time.Second {
		t.Errorf("parsed: hub namespace %q, heartbeat timeout %s, resync %s", f.hubNamespace, f.heartbeatTimeout, f.resync)
	}
}

func TestRateLimitFlags(t *testing.T) {
	tests := []struct {
		args                  []string
		qps, memberQPS        float64
		burst, memberBurstArg int
	}{
		{nil, manageropts.DefaultQPS, defaultMemberQPS, manageropts.DefaultBurst, defaultMemberBurst},
		{[]string{"--kube-api-qps=50", "--kube-api-burst=60", "--member-api-qps=-1", "--member-api-burst=7"}, 50, -1, 60, 7},
	}
	for _, tt := range tests {
		var f flags
		fs := flag.NewFlagSet("hub", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		bindFlags(fs, &f)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if f.manager.QPS != tt.qps || f.manager.Burst != tt.burst || f.memberQPS != tt.memberQPS || f.memberBurst != tt.memberBurstArg {
			t.Errorf("%v: qps %v burst %d member qps %v burst %d", tt.args, f.manager.QPS, f.manager.Burst, f.memberQPS, f.memberBurst)
		}
	}
}

func TestCacheOptions(t *testing.T) {
	tests := []struct {
		name           string
		watch          []string
		wantNamespaces []string
	}{
		{name: "all namespaces"},
		{name: "some namespaces", watch: []string{"a", "b"}, wantNamespaces: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := cacheOptions(tt.watch, "fleet", fleet.NewHubSpecs())
			if len(opts.DefaultNamespaces) != len(tt.wantNamespaces) {
				t.Errorf("namespaces = %v, want %v", opts.DefaultNamespaces, tt.wantNamespaces)
			}
			for _, ns := range tt.wantNamespaces {
				if _, ok := opts.DefaultNamespaces[ns]; !ok {
					t.Errorf("namespace %s not cached", ns)
				}
			}
			var secretOpts []string
			for obj, by := range opts.ByObject {
				if _, ok := obj.(*corev1.Secret); ok {
					for ns := range by.Namespaces {
						secretOpts = append(secretOpts, ns)
					}
				}
			}
			if len(secretOpts) != 1 || secretOpts[0] != "fleet" {
				t.Errorf("Secrets cached in %v, want only the hub namespace", secretOpts)
			}
			for obj, by := range opts.ByObject {
				if _, ok := obj.(*appsv1.ControllerRevision); !ok {
					continue
				}
				if by.Label == nil || !by.Label.Matches(k8slabels.Set{labels.OriginName: "svc"}) ||
					by.Label.Matches(k8slabels.Set{"controller-revision-hash": "abc"}) {
					t.Errorf("ControllerRevisions cached by %v, want the hub's only", by.Label)
				}
			}
		})
	}
}

func TestTrimHubObject(t *testing.T) {
	tests := []struct {
		name            string
		in              any
		wantAnnotations map[string]string
	}{
		{
			name: "kubectl's last-applied configuration and managedFields are dropped, the rest kept",
			in: &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{
				Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"RayService"}`, "team": "search"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			}},
			wantAnnotations: map[string]string{"team": "search"},
		},
		{name: "no annotations", in: &corev1.Secret{}},
		{name: "a tombstone passes", in: toolscache.DeletedFinalStateUnknown{Key: "ns/name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := trimHubObject(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			o, ok := out.(metav1.Object)
			if !ok {
				if diff := cmp.Diff(tt.in, out); diff != "" {
					t.Errorf("a non-object changed (-in +out):\n%s", diff)
				}
				return
			}
			if len(o.GetManagedFields()) != 0 {
				t.Errorf("managedFields kept: %v", o.GetManagedFields())
			}
			if diff := cmp.Diff(tt.wantAnnotations, o.GetAnnotations(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
	opts := cacheOptions(nil, "fleet", fleet.NewHubSpecs())
	if opts.DefaultTransform == nil {
		t.Error("the hub cache has no transform")
	}
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*rayv1.RayService); !ok {
			continue
		}
		rs := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{
			Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: "{}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		}, Spec: rayv1.RayServiceSpec{ServeConfigV2: "applications: []"}}
		out, err := by.Transform(rs)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*rayv1.RayService)
		if got.Spec.ServeConfigV2 != "" || len(got.ManagedFields) != 0 || len(got.Annotations) != 0 {
			t.Errorf("a hub RayService is cached as %+v, want no spec, managedFields or last-applied configuration", got)
		}
		return
	}
	t.Error("the hub cache keeps RayServices' specs")
}

// TestManagerOptions checks what the hub adds to the shared manager options: the Lease lives
// in the hub namespace unless --leader-election-namespace says otherwise, and the worker count
// reaches the controllers.
func TestManagerOptions(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		wantNamespace string
		wantWorkers   int
	}{
		{name: "defaults", wantNamespace: "rayfleet-system", wantWorkers: 16},
		{name: "another hub namespace", args: []string{"--hub-namespace=fleet"}, wantNamespace: "fleet", wantWorkers: 16},
		{
			name: "an explicit lease namespace", args: []string{"--leader-election-namespace=sys", "--max-concurrent-reconciles=3"},
			wantNamespace: "sys", wantWorkers: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f flags
			fs := flag.NewFlagSet("hub", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			bindFlags(fs, &f)
			if err := fs.Parse(append([]string{"--leader-elect"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			opts := managerOptions(f, nil, nil, nil)
			if !opts.LeaderElection || opts.LeaderElectionID != "rayfleet-hub.rayfleet.io" || opts.LeaderElectionNamespace != tt.wantNamespace {
				t.Errorf("leader election %v, Lease %s/%s; want true, %s/rayfleet-hub.rayfleet.io",
					opts.LeaderElection, opts.LeaderElectionNamespace, opts.LeaderElectionID, tt.wantNamespace)
			}
			if opts.Controller.MaxConcurrentReconciles != tt.wantWorkers {
				t.Errorf("MaxConcurrentReconciles = %d, want %d", opts.Controller.MaxConcurrentReconciles, tt.wantWorkers)
			}
		})
	}
}

// TestFlagNamesAndDefaults pins bin/hub's command line: the charts and `rayfleet dev` pass
// these flags by name, so moving the wiring must keep every name and default.
func TestFlagNamesAndDefaults(t *testing.T) {
	want := map[string]string{
		"health-probe-bind-address": ":8081",
		"credential-expiry-warning": "720h0m0s",
		"heartbeat-timeout":         "40s",
		"hub-name":                  "rayfleet",
		"hub-namespace":             "rayfleet-system",
		"kube-api-burst":            "2000",
		"kube-api-qps":              "1000",
		"kubeconfig":                "",
		"leader-elect":              "false",
		"leader-election-id":        "rayfleet-hub.rayfleet.io",
		"leader-election-namespace": "",
		"max-concurrent-reconciles": "16",
		"member-api-burst":          "400",
		"member-api-qps":            "200",
		"metrics-bind-address":      ":8080",
		"pprof-bind-address":        "0",
		"resync":                    "10s",
		"serve-probe-interval":      "2s",
		"serve-probe-timeout":       "1s",
		"traffic-cluster-cidrs":     "",
		"traffic-cluster-domain":    "cluster.local",
		"watch-namespace":           "",
		"zap-devel":                 "false",
		"zap-encoder":               "",
		"zap-log-level":             "",
		"zap-stacktrace-level":      "",
		"zap-time-encoding":         "",
	}
	var f flags
	fs := flag.NewFlagSet("hub", flag.ContinueOnError)
	bindFlags(fs, &f)
	got := map[string]string{}
	fs.VisitAll(func(fl *flag.Flag) { got[fl.Name] = fl.DefValue })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flags and defaults (-want +got):\n%s", diff)
	}
}

// TestRunOptions checks what Run hands a replacement provider and that a caller's own flags are
// parsed with the hub's.
func TestRunOptions(t *testing.T) {
	var extra string
	var settings ProviderSettings
	errStop := errors.New("stop here")
	err := Run(context.Background(), []string{
		"--kubeconfig=" + writeKubeconfig(t), "--member-api-qps=7", "--member-api-burst=9",
		"--hub-namespace=fleet", "--sim-extra=yes",
	}, Options{
		Version:   "v9",
		BindFlags: func(fs *flag.FlagSet) { fs.StringVar(&extra, "sim-extra", "", "a caller's flag") },
		NewProvider: func(s ProviderSettings) (multicluster.Provider, error) {
			settings = s
			return nil, errStop
		},
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Run = %v, want the provider's error", err)
	}
	if extra != "yes" {
		t.Errorf("caller's flag = %q, want yes", extra)
	}
	if settings.HubNamespace != "fleet" || len(settings.ClusterOptions) != 1 || len(settings.RESTOptions) != 1 {
		t.Fatalf("settings = %+v", settings)
	}
	var cfg rest.Config
	if err := settings.RESTOptions[0](&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != 7 || cfg.Burst != 9 || cfg.UserAgent != "rayfleet-hub/v9" {
		t.Errorf("member REST config: qps %v burst %d user agent %q", cfg.QPS, cfg.Burst, cfg.UserAgent)
	}
	var co cluster.Options
	settings.ClusterOptions[0](&co)
	if co.Scheme == nil || !co.Scheme.IsGroupRegistered("fleet.rayfleet.io") {
		t.Error("member clusters do not get the hub's scheme")
	}
	if co.MapperProvider == nil || reflect.ValueOf(co.MapperProvider).Pointer() != reflect.ValueOf(membership.NewMapper).Pointer() {
		t.Error("member clusters do not get the member mapper (they would keep every kind a member serves)")
	}
}

// writeKubeconfig writes a kubeconfig that loads (nothing dials it before the provider is made).
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTrafficClusterFlags(t *testing.T) {
	tc, err := flags{trafficCIDRs: "10.244.0.0/16, 10.96.0.0/12", trafficDomain: "corp.internal"}.trafficCluster()
	if err != nil || len(tc.Ranges) != 2 || tc.Ranges[1].String() != "10.96.0.0/12" || tc.Domain != "corp.internal" {
		t.Errorf("trafficCluster = %+v, %v", tc, err)
	}
	if _, err := (flags{trafficCIDRs: "10.244.0.0/16,10.96.0.1"}).trafficCluster(); err == nil || !strings.Contains(err.Error(), "--traffic-cluster-cidrs") {
		t.Errorf("a range that is no CIDR: %v", err)
	}
}
