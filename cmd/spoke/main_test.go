package main

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/rayfleet/rayfleet/spoke/raycluster"
)

func TestParseNamespaces(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "  ", want: nil},
		{in: "ray", want: []string{"ray"}},
		{in: "a, b ,c", want: []string{"a", "b", "c"}},
		{in: "a,,b", wantErr: true},
		{in: "a,", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseNamespaces(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseNamespaces(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseNamespaces(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestCacheOptionsSelectOwnedObjects(t *testing.T) {
	opts, err := cacheOptions("")
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
		case *corev1.Secret:
			selectors["Secret"] = by
		default:
			t.Errorf("unexpected ByObject entry for %T", obj)
		}
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{name: "ray node", labels: map[string]string{"ray.io/cluster": "c", "ray.io/node-type": "head"}, want: true},
		{name: "created-by overridden by the user", labels: map[string]string{"ray.io/cluster": "c", "app.kubernetes.io/created-by": "me"}, want: true},
		{name: "unrelated", labels: map[string]string{"app": "web"}, want: false},
		{name: "created-by alone", labels: map[string]string{"app.kubernetes.io/created-by": "kuberay-operator"}, want: false},
	}
	for _, kind := range []string{"Pod", "Job", "Secret"} {
		by, ok := selectors[kind]
		if !ok || by.Label == nil {
			t.Errorf("%s: no label selector", kind)
			continue
		}
		for _, tt := range tests {
			if got := by.Label.Matches(k8slabels.Set(tt.labels)); got != tt.want {
				t.Errorf("%s selector %q on %s: matches = %v, want %v", kind, by.Label, tt.name, got, tt.want)
			}
		}
	}
}

func TestCacheOptionsWatchNamespaces(t *testing.T) {
	opts, err := cacheOptions("a,b")
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
	if _, err := cacheOptions("a,,b"); err == nil {
		t.Error("cacheOptions(\"a,,b\") succeeded, want an error")
	}
}

var cmpSortStrings = cmp.Transformer("sort", func(in []string) map[string]bool {
	out := make(map[string]bool, len(in))
	for _, s := range in {
		out[s] = true
	}
	return out
})

func TestFlags(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		want        flags
		wantWorkers int
		wantDevel   bool
	}{
		{
			name: "defaults",
			want: flags{
				metricsAddr: ":8080", probeAddr: ":8081", leaderElectionID: defaultLeaderElectionID,
				qps: defaultQPS, burst: defaultBurst,
			},
			wantWorkers: 16,
		},
		{
			name: "everything set",
			args: []string{
				"--metrics-bind-address=0", "--health-probe-bind-address=:9000", "--leader-elect",
				"--leader-election-id=x", "--leader-election-namespace=sys", "--kube-api-qps=500",
				"--kube-api-burst=1000", "--max-concurrent-reconciles=4", "--watch-namespace=a,b",
				"--kubeconfig=/dev/null", "--zap-devel",
			},
			want: flags{
				metricsAddr: "0", probeAddr: ":9000", leaderElect: true, leaderElectionID: "x",
				leaderElectionNamespace: "sys", qps: 500, burst: 1000, watchNamespaces: "a,b",
			},
			wantWorkers: 4,
			wantDevel:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f flags
			rc := raycluster.OptionsFromEnv(func(string) string { return "" })
			fs := flag.NewFlagSet("spoke", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			bindFlags(fs, &f, &rc)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if f.zap.Development != tt.wantDevel {
				t.Errorf("zap Development = %v, want %v", f.zap.Development, tt.wantDevel)
			}
			f.zap = zap.Options{}
			if diff := cmp.Diff(tt.want, f, cmp.AllowUnexported(flags{})); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
			if rc.MaxConcurrentReconciles != tt.wantWorkers {
				t.Errorf("MaxConcurrentReconciles = %d, want %d", rc.MaxConcurrentReconciles, tt.wantWorkers)
			}
		})
	}
}
