// Package manageropts holds the command line and wiring that the hub's and the spoke's
// controller-runtime managers share: the kubeconfig, the metrics and health-probe addresses,
// leader election, client-side rate limits, the worker count, the watched namespaces and zap
// logging, and the /healthz and /readyz checks. Both binaries take these flags under the same
// names with the same defaults, which the Helm charts rely on. It imports no other package of
// the repository but shared/logcap.
package manageropts

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rayfleet/rayfleet/shared/logcap"
)

// Defaults of the shared flags. KubeRay's operator uses 100 QPS and a burst of 200, the floor.
// Creating a 1,000-Pod cluster (or 200 small ones at once) takes the spoke a few thousand
// writes, and placing a RayService takes the hub about six; at 100 QPS the client-side limiter
// alone, not the API server, would set the pace. The API server's own priority and fairness is
// what protects it from a busy client.
const (
	DefaultMetricsAddr             = ":8080"
	DefaultProbeAddr               = ":8081"
	DefaultQPS                     = 1000
	DefaultBurst                   = 2000
	DefaultMaxConcurrentReconciles = 16
)

// Defaults are what differs between the binaries.
type Defaults struct {
	// Binary names the binary in the flags' help, e.g. "hub".
	Binary string
	// LeaderElectionID is the default name of the leader-election Lease.
	LeaderElectionID string
	// MaxConcurrentReconciles is the default worker count; 0 means
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
}

// Options are the values of the shared flags; Bind fills them in.
type Options struct {
	// MetricsAddr is --metrics-bind-address.
	MetricsAddr string
	// ProbeAddr is --health-probe-bind-address.
	ProbeAddr string
	// PprofAddr is --pprof-bind-address.
	PprofAddr string
	// LeaderElect is --leader-elect.
	LeaderElect bool
	// LeaderElectionID is --leader-election-id.
	LeaderElectionID string
	// LeaderElectionNamespace is --leader-election-namespace; empty means the binary's default.
	LeaderElectionNamespace string
	// QPS is --kube-api-qps; negative turns client-side throttling off.
	QPS float64
	// Burst is --kube-api-burst.
	Burst int
	// MaxConcurrentReconciles is --max-concurrent-reconciles.
	MaxConcurrentReconciles int
	// WatchNamespaces is --watch-namespace, comma-separated; see Namespaces.
	WatchNamespaces string
	// Zap holds the --zap-* flags.
	Zap zap.Options
}

// Bind registers the shared flags on fs with d's defaults, writing their values into o.
// --kubeconfig is controller-runtime's own (falling back to $KUBECONFIG, then in-cluster
// config, then ~/.kube/config); registering it here keeps it on fs.
func (o *Options) Bind(fs *flag.FlagSet, d Defaults) {
	config.RegisterFlags(fs)
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", DefaultMetricsAddr,
		"Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", DefaultProbeAddr,
		"Address the /healthz and /readyz endpoints bind to; 0 disables them.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "0",
		"Address Go's /debug/pprof endpoints bind to (profiles, goroutine counts); 0, the default, disables them.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false,
		"Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", d.LeaderElectionID,
		"Name of the Lease used for leader election.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; defaults to the Pod's namespace in-cluster.")
	fs.Float64Var(&o.QPS, "kube-api-qps", DefaultQPS, fmt.Sprintf(
		"Queries per second the %s may send to its own cluster's Kubernetes API server; negative turns client-side throttling off.",
		d.Binary))
	fs.IntVar(&o.Burst, "kube-api-burst", DefaultBurst, fmt.Sprintf(
		"Burst of queries the %s may send to its own cluster's Kubernetes API server.", d.Binary))
	workers := d.MaxConcurrentReconciles
	if workers == 0 {
		workers = DefaultMaxConcurrentReconciles
	}
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", workers,
		"How many objects of one kind are reconciled in parallel.")
	fs.StringVar(&o.WatchNamespaces, "watch-namespace", "",
		"Comma-separated namespaces to watch; empty watches all namespaces.")
	// ISO 8601 timestamps, as KubeRay logs them, unless --zap-time-encoding says otherwise.
	o.Zap.TimeEncoder = zapcore.ISO8601TimeEncoder
	o.Zap.BindFlags(fs)
}

// Namespaces splits --watch-namespace; nil means every namespace. An empty entry ("a,,b") is an
// error rather than skipped: it is a typo, and dropping it would watch less than meant.
func (o *Options) Namespaces() ([]string, error) {
	if strings.TrimSpace(o.WatchNamespaces) == "" {
		return nil, nil
	}
	var out []string
	for ns := range strings.SplitSeq(o.WatchNamespaces, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			return nil, errors.New("--watch-namespace has an empty entry: " + o.WatchNamespaces)
		}
		out = append(out, ns)
	}
	return out, nil
}

// SetupLogging makes the logger the --zap-* flags describe (JSON unless --zap-devel) the logger
// of controller-runtime and of client-go, whose own logs (leader election, reflectors) then come
// out in the same format. Its verbosity is capped (logcap): above V(7) client-go would log the
// bodies of API calls, Secrets included.
func (o *Options) SetupLogging() {
	logger := logcap.Logger(zap.New(zap.UseFlagOptions(&o.Zap)))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
}

// MemoryLimitRatio is the share of the container's memory limit given to the Go runtime as its
// soft limit (GOMEMLIMIT): the garbage collector works harder as the heap nears it, instead of
// letting the heap double past the container's limit and the kernel kill the process. The
// rest is for memory the runtime does not count, above all the binary's code, which the
// kernel charges to the container once its pages are read: the hub ran at its soft limit plus
// about 32 MiB. At 90 % of the chart's 512Mi that left the hub 20 MiB short of being killed
// (492 MiB at 10,000 RayServices); at 85 % it keeps about 45 MiB.
const MemoryLimitRatio = 0.85

// SetMemoryLimit sets the runtime's soft memory limit from the cgroup's memory limit (the
// container's resources.limits.memory). GOMEMLIMIT in the environment, or AUTOMEMLIMIT
// (a ratio, or "off"), take precedence; without a limit nothing changes. What was set is
// logged.
func SetMemoryLimit() {
	log := slog.New(logr.ToSlogHandler(ctrl.Log.WithName("memlimit")))
	// Errors are logged by Set; the process runs on without a limit, as before.
	_, _ = memlimit.Set(memlimit.WithRatio(MemoryLimitRatio), memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithLogger(log))
}

// RESTConfig loads the kubeconfig with the flags' client-side rate limits and userAgent.
func (o *Options) RESTConfig(userAgent string) (*rest.Config, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS = float32(o.QPS)
	cfg.Burst = o.Burst
	cfg.UserAgent = userAgent
	return cfg, nil
}

// Manager returns the manager options the flags set: the metrics and probe addresses and
// leader election. The caller adds its scheme, cache and client options.
func (o *Options) Manager() ctrl.Options {
	return ctrl.Options{
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// The process exits right after, so a successor need not wait out the lease.
		LeaderElectionReleaseOnCancel: true,
	}
}

// Prober is the part of a manager that serves the health probes; ctrl.Manager and
// multicluster-runtime's manager are Probers.
type Prober interface {
	// AddHealthzCheck adds a check to /healthz.
	AddHealthzCheck(name string, check healthz.Checker) error
	// AddReadyzCheck adds a check to /readyz.
	AddReadyzCheck(name string, check healthz.Checker) error
}

// AddProbes answers /healthz and /readyz as long as the process serves HTTP: the managers have
// no readiness of their own to report beyond that (a replica waiting for the leader Lease is
// ready, so that a rollout does not stall on it).
func AddProbes(mgr Prober) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readyz check: %w", err)
	}
	return nil
}
