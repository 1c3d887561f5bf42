// Command hub is RayFleet's control plane: a multicluster-runtime manager on the hub cluster whose
// kubeconfig provider engages member clusters from labelled Secrets in the hub namespace (see
// hub/membership for what `rayfleet join` must create), running the MemberCluster controller,
// the PlacementPolicy controller (hub/policy), the hub RayService reconciler (hub/fleet), which
// places, propagates and aggregates, and a watch of the members' RayServices that wakes it
// (memberwatch.go). It imports hub/ and shared/, never spoke/ or shared/localfleet.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	"github.com/rayfleet/rayfleet/hub/fleet"
	"github.com/rayfleet/rayfleet/hub/membership"
	"github.com/rayfleet/rayfleet/hub/policy"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
)

// The hub's own cluster, beyond what hub/fleet declares: the membership controller, the
// kubeconfig provider (Secrets in the hub namespace), leader election and events.
//
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=memberclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,namespace=rayfleet-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=rayfleet-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core;events.k8s.io,resources=events,verbs=create;patch

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Client-side rate limits of the hub's clients (see bindFlags).
const (
	defaultQPS         = 1000
	defaultBurst       = 2000
	defaultMemberQPS   = 200
	defaultMemberBurst = 400
)

// flags holds the command line of the hub; it matches the spoke's.
type flags struct {
	metricsAddr             string
	probeAddr               string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	qps                     float64
	burst                   int
	memberQPS               float64
	memberBurst             int
	maxConcurrentReconciles int
	watchNamespaces         string
	hubNamespace            string
	heartbeatTimeout        time.Duration
	resync                  time.Duration
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
	// Placing a RayService costs the hub about 6 writes on its own cluster and one on a member;
	// at client-go's defaults (5 QPS per member client) or KubeRay's 100 the client-side limiter,
	// not the API servers, would set the pace of a 1,000-RayService fleet. The API servers' own
	// priority and fairness protects them.
	fs.Float64Var(&f.qps, "kube-api-qps", defaultQPS,
		"Queries per second the hub may send to the hub's Kubernetes API server; negative turns client-side throttling off.")
	fs.IntVar(&f.burst, "kube-api-burst", defaultBurst,
		"Burst of queries the hub may send to the hub's Kubernetes API server.")
	fs.Float64Var(&f.memberQPS, "member-api-qps", defaultMemberQPS,
		"Queries per second the hub may send to each member's Kubernetes API server; negative turns client-side throttling off.")
	fs.IntVar(&f.memberBurst, "member-api-burst", defaultMemberBurst,
		"Burst of queries the hub may send to each member's Kubernetes API server.")
	fs.IntVar(&f.maxConcurrentReconciles, "max-concurrent-reconciles", 16,
		"How many objects of one kind are reconciled in parallel.")
	fs.StringVar(&f.watchNamespaces, "watch-namespace", "",
		"Comma-separated namespaces to watch; empty watches all namespaces.")
	fs.StringVar(&f.hubNamespace, "hub-namespace", labels.DefaultHubNamespace,
		"Namespace holding the members' kubeconfig Secrets (and the leader-election Lease unless --leader-election-namespace says otherwise).")
	fs.DurationVar(&f.heartbeatTimeout, "heartbeat-timeout", membership.DefaultHeartbeatTimeout,
		"How old a member's ClusterReport heartbeat may be before its AgentReady condition turns False.")
	fs.DurationVar(&f.resync, "resync", fleet.DefaultResync,
		"How often every hub RayService is reconciled without an event; member status changes also arrive by watch.")
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
	cacheOpts, err := cacheOptions(f.watchNamespaces, f.hubNamespace)
	if err != nil {
		return err
	}
	leaseNamespace := f.leaderElectionNamespace
	if leaseNamespace == "" {
		leaseNamespace = f.hubNamespace
	}
	provider := kubeconfig.New(kubeconfig.Options{
		Namespace:             f.hubNamespace,
		KubeconfigSecretLabel: fleetv1alpha1.KubeconfigSecretLabel,
		KubeconfigSecretKey:   fleetv1alpha1.DefaultKubeconfigKey,
		ClusterOptions:        []cluster.Option{func(o *cluster.Options) { o.Scheme = sch }},
		RESTOptions: []func(*rest.Config) error{func(c *rest.Config) error {
			c.UserAgent = "rayfleet-hub/" + version
			c.QPS, c.Burst = float32(f.memberQPS), f.memberBurst
			return nil
		}},
	})
	mgr, err := mcmanager.New(restCfg, provider, ctrl.Options{
		Scheme:                        sch,
		Cache:                         cacheOpts,
		Controller:                    ctrlconfig.Controller{MaxConcurrentReconciles: f.maxConcurrentReconciles},
		Metrics:                       metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              f.leaderElectionID,
		LeaderElectionNamespace:       leaseNamespace,
		LeaderElectionReleaseOnCancel: true, // the process exits right after, so a successor need not wait out the lease
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err = mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding healthz check: %w", err)
	}
	if err = mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readyz check: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if err = provider.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the kubeconfig provider: %w", err)
	}
	local := mgr.GetLocalManager()
	members, err := membership.New(local.GetClient(), mgr, local.GetEventRecorder("membercluster-controller"),
		membership.Options{
			HubNamespace:     f.hubNamespace,
			HeartbeatTimeout: f.heartbeatTimeout,
			Registerer:       metrics.Registry,
		})
	if err != nil {
		return err
	}
	if err = members.SetupWithManager(local); err != nil {
		return err
	}
	rayServices := fleet.NewReconciler(local, membership.NewClients(mgr), fleet.Options{
		Resync:                  f.resync,
		MaxConcurrentReconciles: f.maxConcurrentReconciles,
	})
	if err = rayServices.SetupWithManager(local); err != nil {
		return err
	}
	if err = setupMemberWatch(mgr, rayServices); err != nil {
		return err
	}
	if err = policy.New(local.GetClient(), local.GetEventRecorder("placementpolicy-controller")).SetupWithManager(local); err != nil {
		return err
	}

	ctrl.Log.WithName("setup").Info("starting hub", "version", version, "hubNamespace", f.hubNamespace)
	if err = mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// cacheOptions restricts the cache to --watch-namespace and drops managedFields, which nothing
// in the hub reads. Secrets are cached in the hub namespace only, whatever --watch-namespace
// says: the hub reads the members' kubeconfigs there and has no business with other Secrets.
func cacheOptions(watchNamespaces, hubNamespace string) (cache.Options, error) {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{hubNamespace: {}}},
		},
	}
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
