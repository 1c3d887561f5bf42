package manageropts

import (
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

var spoke = Defaults{Binary: "spoke", LeaderElectionID: "rayfleet-spoke.rayfleet.io"}

// parse binds the shared flags with d on a new flag set and parses args.
func parse(t *testing.T, d Defaults, args ...string) (Options, error) {
	t.Helper()
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Bind(fs, d)
	err := fs.Parse(args)
	return o, err
}

func TestBind(t *testing.T) {
	defaults := Options{
		MetricsAddr: ":8080", ProbeAddr: ":8081", PprofAddr: "0", LeaderElectionID: "rayfleet-spoke.rayfleet.io",
		QPS: 1000, Burst: 2000, MaxConcurrentReconciles: 16,
	}
	tests := []struct {
		name      string
		defaults  Defaults
		args      []string
		want      Options
		wantDevel bool
		wantErr   bool
	}{
		{name: "defaults", defaults: spoke, want: defaults},
		{
			name: "the binary's own defaults", defaults: Defaults{Binary: "hub", LeaderElectionID: "hub-lease", MaxConcurrentReconciles: 4},
			want: func() Options {
				o := defaults
				o.LeaderElectionID, o.MaxConcurrentReconciles = "hub-lease", 4
				return o
			}(),
		},
		{
			name: "every flag set", defaults: spoke,
			// The names the Helm charts pass, and the rest.
			args: []string{
				"--metrics-bind-address=0", "--health-probe-bind-address=:9000", "--pprof-bind-address=127.0.0.1:6060", "--leader-elect",
				"--leader-election-id=x", "--leader-election-namespace=sys", "--kube-api-qps=-1",
				"--kube-api-burst=10", "--max-concurrent-reconciles=4", "--watch-namespace=a,b",
				"--kubeconfig=/dev/null", "--zap-devel", "--zap-log-level=debug", "--zap-encoder=console",
			},
			want: Options{
				MetricsAddr: "0", ProbeAddr: ":9000", PprofAddr: "127.0.0.1:6060", LeaderElect: true, LeaderElectionID: "x",
				LeaderElectionNamespace: "sys", QPS: -1, Burst: 10, MaxConcurrentReconciles: 4, WatchNamespaces: "a,b",
			},
			wantDevel: true,
		},
		{name: "a count that is not a number", defaults: spoke, args: []string{"--kube-api-burst=many"}, wantErr: true},
		{name: "an unknown log level", defaults: spoke, args: []string{"--zap-log-level=loud"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(t, tt.defaults, tt.args...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got.Zap.Development != tt.wantDevel {
				t.Errorf("Zap.Development = %v, want %v", got.Zap.Development, tt.wantDevel)
			}
			if got.Zap.TimeEncoder == nil {
				t.Error("Zap.TimeEncoder is nil, want ISO 8601 timestamps")
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Options{}, "Zap")); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNamespaces(t *testing.T) {
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
			o := Options{WatchNamespaces: tt.in}
			got, err := o.Namespaces()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Namespaces() error = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Namespaces() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestManager(t *testing.T) {
	tests := []struct {
		name string
		o    Options
	}{
		{name: "defaults", o: Options{MetricsAddr: ":8080", ProbeAddr: ":8081", PprofAddr: "0", LeaderElectionID: "lease"}},
		{name: "leader election in a namespace, endpoints off, pprof on", o: Options{
			MetricsAddr: "0", ProbeAddr: "0", PprofAddr: "127.0.0.1:6060", LeaderElect: true, LeaderElectionID: "lease", LeaderElectionNamespace: "sys",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.o.Manager()
			if got.Metrics.BindAddress != tt.o.MetricsAddr || got.HealthProbeBindAddress != tt.o.ProbeAddr {
				t.Errorf("metrics %q, probes %q; want %q, %q", got.Metrics.BindAddress, got.HealthProbeBindAddress,
					tt.o.MetricsAddr, tt.o.ProbeAddr)
			}
			if got.PprofBindAddress != tt.o.PprofAddr {
				t.Errorf("pprof %q, want %q", got.PprofBindAddress, tt.o.PprofAddr)
			}
			if got.LeaderElection != tt.o.LeaderElect || got.LeaderElectionID != tt.o.LeaderElectionID ||
				got.LeaderElectionNamespace != tt.o.LeaderElectionNamespace {
				t.Errorf("leader election %v %q in %q, want %v %q in %q", got.LeaderElection, got.LeaderElectionID,
					got.LeaderElectionNamespace, tt.o.LeaderElect, tt.o.LeaderElectionID, tt.o.LeaderElectionNamespace)
			}
			if !got.LeaderElectionReleaseOnCancel {
				t.Error("LeaderElectionReleaseOnCancel is false: a successor would wait out the lease")
			}
		})
	}
}

func TestRESTConfig(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	const data = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parse(t, spoke, "--kubeconfig="+kubeconfig, "--kube-api-qps=50", "--kube-api-burst=60")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.RESTConfig("rayfleet-spoke/test")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.QPS != 50 || cfg.Burst != 60 || cfg.UserAgent != "rayfleet-spoke/test" {
		t.Errorf("config: host %q, qps %v, burst %d, user agent %q", cfg.Host, cfg.QPS, cfg.Burst, cfg.UserAgent)
	}
}

// prober records the checks added to it, failing the one named fail.
type prober struct {
	checks map[string]healthz.Checker
	fail   string
}

func (p *prober) add(name string, check healthz.Checker) error {
	if name == p.fail {
		return errors.New("refused")
	}
	p.checks[name] = check
	return nil
}

func (p *prober) AddHealthzCheck(name string, check healthz.Checker) error { return p.add(name, check) }
func (p *prober) AddReadyzCheck(name string, check healthz.Checker) error  { return p.add(name, check) }

func TestAddProbes(t *testing.T) {
	tests := []struct {
		name    string
		fail    string
		want    []string
		wantErr string
	}{
		{name: "both checks", want: []string{"healthz", "readyz"}},
		{name: "healthz refused", fail: "healthz", wantErr: "adding healthz check"},
		{name: "readyz refused", fail: "readyz", wantErr: "adding readyz check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &prober{checks: map[string]healthz.Checker{}, fail: tt.fail}
			err := AddProbes(p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("AddProbes() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, slices.Sorted(maps.Keys(p.checks))); diff != "" {
				t.Errorf("checks (-want +got):\n%s", diff)
			}
			for name, check := range p.checks {
				if err := check(nil); err != nil {
					t.Errorf("%s check = %v, want nil while the process serves", name, err)
				}
			}
		})
	}
}

func TestSetMemoryLimitKeepsAnExplicitGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "123MiB")
	before := debug.SetMemoryLimit(-1)
	SetMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("memory limit %d after SetMemoryLimit, want %d: GOMEMLIMIT in the environment wins", got, before)
	}
}
