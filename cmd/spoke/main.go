// Command spoke is RayFleet's agent on a member cluster: a controller-runtime manager running the
// KubeRay-compatible RayCluster reconciler. The RayService reconciler and the ClusterReport
// reporter join it with later issues.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/spoke/raycluster"
)

// Leader election and events are the manager's own needs, not a reconciler's, so their RBAC
// markers live here (`make manifests` reads ./cmd/spoke as well as ./spoke).
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core;events.k8s.io,resources=events,verbs=create;patch

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Defaults of the flags below. KubeRay's operator uses 100 QPS and a burst of 200, the floor.
// Creating a 1,000-Pod cluster (or 200 small ones at once) takes a few thousand writes, and at
// 100 QPS the client-side limiter alone would hold the last one back by ten seconds or more;
// the API server's own priority and fairness is what protects it from a busy client.
const (
	defaultMetricsAddr      = ":8080"
	defaultProbeAddr        = ":8081"
	defaultLeaderElectionID = "rayfleet-spoke.rayfleet.io"
	defaultQPS              = 1000
	defaultBurst            = 2000
)

// flags holds the command line of the spoke.
type flags struct {
	metricsAddr             string
	probeAddr               string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	qps                     float64
	burst                   int
	watchNamespaces         string
	zap                     zap.Options
}

// bindFlags registers the spoke's flags on fs. The reconciler options come first from KubeRay's
// environment variables; --max-concurrent-reconciles then overrides the one they share.
func bindFlags(fs *flag.FlagSet, f *flags, rc *raycluster.Options) {
	// controller-runtime's config loader owns --kubeconfig (falling back to $KUBECONFIG, then
	// in-cluster config, then ~/.kube/config); registering it here keeps it on fs.
	config.RegisterFlags(fs)
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", defaultMetricsAddr,
		"Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", defaultProbeAddr,
		"Address the /healthz and /readyz endpoints bind to; 0 disables them.")
	fs.BoolVar(&f.leaderElect, "leader-elect", false,
		"Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&f.leaderElectionID, "leader-election-id", defaultLeaderElectionID,
		"Name of the Lease used for leader election.")
	fs.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; defaults to the Pod's namespace in-cluster.")
	fs.Float64Var(&f.qps, "kube-api-qps", defaultQPS,
		"Queries per second the spoke may send to the Kubernetes API server; negative turns client-side throttling off.")
	fs.IntVar(&f.burst, "kube-api-burst", defaultBurst,
		"Burst of queries the spoke may send to the Kubernetes API server.")
	fs.IntVar(&rc.MaxConcurrentReconciles, "max-concurrent-reconciles", rc.MaxConcurrentReconciles,
		"How many objects of one kind are reconciled in parallel.")
	fs.StringVar(&f.watchNamespaces, "watch-namespace", "",
		"Comma-separated namespaces to watch; empty watches all namespaces.")
	// ISO 8601 timestamps, as KubeRay logs them, unless --zap-time-encoding says otherwise.
	f.zap.TimeEncoder = zapcore.ISO8601TimeEncoder
	f.zap.BindFlags(fs)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		ctrl.Log.WithName("setup").Error(err, "spoke failed")
		os.Exit(1)
	}
}

func run(args []string) error {
	var f flags
	rcOpts := raycluster.OptionsFromEnv(os.Getenv)
	fs := flag.NewFlagSet("spoke", flag.ContinueOnError)
	bindFlags(fs, &f, &rcOpts)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("parsing flags: %w", err)
	}

	// JSON logs unless --zap-devel; client-go's own logs (leader election, reflectors) go
	// through the same logger so that they are JSON too.
	logger := zap.New(zap.UseFlagOptions(&f.zap))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	setupLog := ctrl.Log.WithName("setup")

	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	restCfg.QPS = float32(f.qps)
	restCfg.Burst = f.burst
	restCfg.UserAgent = "rayfleet-spoke/" + version

	cacheOpts, err := cacheOptions(f.watchNamespaces)
	if err != nil {
		return err
	}
	sch, err := scheme.New()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                        sch,
		Cache:                         cacheOpts,
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

	if err := raycluster.NewReconciler(mgr, rcOpts).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the RayCluster reconciler: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readyz check: %w", err)
	}

	setupLog.Info("starting spoke", "version", version, "watchNamespaces", f.watchNamespaces,
		"maxConcurrentReconciles", rcOpts.MaxConcurrentReconciles)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// cacheOptions keeps the informers to what the spoke owns, because on a large member the
// unrelated Pods and Secrets would dominate its memory.
//
// Pods, Jobs and Secrets are cached only when they carry ray.io/cluster: KubeRay puts it on
// every Pod, on the GCS FT Redis cleanup Job and on the auth token Secret it creates, and users
// cannot override it through the Pod template. (app.kubernetes.io/created-by is no help: it is
// overridable on Pods and absent from the RayService, serve and headless Services and the auth
// Secret.) Services have no label common to all that KubeRay creates, so they are cached whole.
// A reconciler that must read a user's Secret (say spec.authOptions.secretName) reads it with
// the manager's API reader, not the cached client.
func cacheOptions(watchNamespaces string) (cache.Options, error) {
	owned, err := k8slabels.NewRequirement(labels.Cluster, selection.Exists, nil)
	if err != nil {
		return cache.Options{}, fmt.Errorf("building the ray.io/cluster selector: %w", err)
	}
	ownedSel := k8slabels.NewSelector().Add(*owned)
	opts := cache.Options{
		// Nothing in the spoke reads managedFields; they are often half of an object's size.
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:    {Label: ownedSel, Transform: raycluster.TrimPod},
			&batchv1.Job{}:   {Label: ownedSel},
			&corev1.Secret{}: {Label: ownedSel},
		},
	}
	namespaces, err := parseNamespaces(watchNamespaces)
	if err != nil {
		return cache.Options{}, err
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts, nil
}

// parseNamespaces splits --watch-namespace; an empty value means every namespace.
func parseNamespaces(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, ns := range strings.Split(s, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			return nil, errors.New("--watch-namespace has an empty entry: " + s)
		}
		out = append(out, ns)
	}
	return out, nil
}
