// Command hub is RayFleet's control plane. For now it is a manager with no controllers: the
// membership, placement, propagation, aggregation and rollout controllers, and the
// multicluster-runtime provider that engages member clusters, land with later issues. It already
// takes its final flags so that deployments need not change when they do.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rayfleet/rayfleet/shared/scheme"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// flags holds the command line of the hub; it matches the spoke's.
type flags struct {
	metricsAddr             string
	probeAddr               string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	qps                     float64
	burst                   int
	maxConcurrentReconciles int
	watchNamespaces         string
	zap                     zap.Options
}

func bindFlags(fs *flag.FlagSet, f *flags) {
	config.RegisterFlags(fs) // --kubeconfig, falling back to $KUBECONFIG and in-cluster config
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080",
		"Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz endpoints bind to; 0 disables them.")
	fs.BoolVar(&f.leaderElect, "leader-elect", false,
		"Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&f.leaderElectionID, "leader-election-id", "rayfleet-hub.rayfleet.io",
		"Name of the Lease used for leader election.")
	fs.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; defaults to the Pod's namespace in-cluster.")
	fs.Float64Var(&f.qps, "kube-api-qps", 100,
		"Queries per second the hub may send to the hub's Kubernetes API server; negative turns client-side throttling off.")
	fs.IntVar(&f.burst, "kube-api-burst", 200,
		"Burst of queries the hub may send to the hub's Kubernetes API server.")
	fs.IntVar(&f.maxConcurrentReconciles, "max-concurrent-reconciles", 16,
		"How many objects of one kind are reconciled in parallel.")
	fs.StringVar(&f.watchNamespaces, "watch-namespace", "",
		"Comma-separated namespaces to watch; empty watches all namespaces.")
	// ISO 8601 timestamps, as KubeRay logs them, unless --zap-time-encoding says otherwise.
	f.zap.TimeEncoder = zapcore.ISO8601TimeEncoder
	f.zap.BindFlags(fs)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		ctrl.Log.WithName("setup").Error(err, "hub failed")
		os.Exit(1)
	}
}

func run(args []string) error {
	var f flags
	fs := flag.NewFlagSet("hub", flag.ContinueOnError)
	bindFlags(fs, &f)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("parsing flags: %w", err)
	}
	logger := zap.New(zap.UseFlagOptions(&f.zap))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)

	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	restCfg.QPS = float32(f.qps)
	restCfg.Burst = f.burst
	restCfg.UserAgent = "rayfleet-hub/" + version

	sch, err := scheme.New()
	if err != nil {
		return err
	}
	cacheOpts, err := cacheOptions(f.watchNamespaces)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                        sch,
		Cache:                         cacheOpts,
		Controller:                    ctrlconfig.Controller{MaxConcurrentReconciles: f.maxConcurrentReconciles},
		Metrics:                       metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              f.leaderElectionID,
		LeaderElectionNamespace:       f.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true, // the process exits right after, so a successor need not wait out the lease
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readyz check: %w", err)
	}

	ctrl.Log.WithName("setup").Info("starting hub (no controllers yet: they land with later issues)", "version", version)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// cacheOptions restricts the cache to --watch-namespace and drops managedFields, which nothing
// in the hub reads.
func cacheOptions(watchNamespaces string) (cache.Options, error) {
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if strings.TrimSpace(watchNamespaces) == "" {
		return opts, nil
	}
	opts.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range strings.Split(watchNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns == "" {
			return cache.Options{}, errors.New("--watch-namespace has an empty entry: " + watchNamespaces)
		}
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts, nil
}
