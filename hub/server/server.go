// Package server is bin/hub's wiring, importable so that a benchmark can run the very same hub
// with another source of member clusters: the command line, the multicluster-runtime manager on
// the hub cluster, the member-cluster provider (by default the kubeconfig provider engaging
// members from labelled Secrets in the hub namespace, see hub/membership for what `rayfleet
// join` must create), the MemberCluster controller, the PlacementPolicy controller (hub/policy),
// the hub RayService reconciler (hub/fleet), which places, propagates and aggregates (woken by a
// watch of the members' RayServices too), and the orphan sweep (hub/sweep), which deletes this
// hub's member copies that nothing on the hub accounts for any more.
// It imports hub/ and shared/, never spoke/, cmd/, e2e/ or shared/localfleet.
package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/fleet"
	"github.com/rayfleet/rayfleet/hub/membership"
	"github.com/rayfleet/rayfleet/hub/policy"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/sweep"
	"github.com/rayfleet/rayfleet/hub/traffic"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/manageropts"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/serveaddress"
)

// The hub's own cluster, beyond what hub/fleet declares: the membership controller, the
// kubeconfig provider (Secrets in the hub namespace), leader election and events.
//
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=memberclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,namespace=rayfleet-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=rayfleet-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core;events.k8s.io,resources=events,verbs=create;patch

// Client-side rate limits of the hub's member clients (see bindFlags).
const (
	defaultMemberQPS   = 200
	defaultMemberBurst = 400
)

// Options are what a caller of Run may change; the zero value is bin/hub.
type Options struct {
	// Version is reported in the log and in the user agent ("rayfleet-hub/<version>");
	// "dev" if empty.
	Version string
	// BindFlags, when set, registers the caller's own flags next to the hub's (which keep their
	// names and defaults); they are parsed with them.
	BindFlags func(*flag.FlagSet)
	// NewProvider, when set, replaces the kubeconfig provider: it is called once the flags are
	// parsed, with what the kubeconfig provider would have been given. A provider with a
	// SetupWithManager(context.Context, mcmanager.Manager) error method has it called once the
	// manager exists; a multicluster.ProviderRunnable is started by the manager.
	NewProvider func(ProviderSettings) (multicluster.Provider, error)
}

// ProviderSettings are the hub's settings for member clusters, as the kubeconfig provider gets
// them.
type ProviderSettings struct {
	// HubNamespace is --hub-namespace, where the members' kubeconfig Secrets live.
	HubNamespace string
	// ClusterOptions set the members' scheme.
	ClusterOptions []cluster.Option
	// RESTOptions set the user agent and the client-side rate limits (--member-api-qps,
	// --member-api-burst) of each member's REST config.
	RESTOptions []func(*rest.Config) error
}

// providerSetup is a provider that registers itself with the manager (the kubeconfig
// provider's Secret controller).
type providerSetup interface {
	SetupWithManager(ctx context.Context, mgr mcmanager.Manager) error
}

// flags holds the command line of the hub: the manager flags it shares with the spoke and its
// own.
type flags struct {
	manager          manageropts.Options
	memberQPS        float64
	memberBurst      int
	hubNamespace     string
	hubName          string
	heartbeatTimeout time.Duration
	credentialWarn   time.Duration
	resync           time.Duration
	trafficCIDRs     string
	trafficDomain    string
	probeInterval    time.Duration
	probeTimeout     time.Duration
}

func bindFlags(fs *flag.FlagSet, f *flags) {
	f.manager.Bind(fs, manageropts.Defaults{Binary: "hub", LeaderElectionID: "rayfleet-hub.rayfleet.io"})
	// Placing a RayService costs the hub one write on a member; at client-go's defaults (5 QPS
	// per member client) the client-side limiter, not the member's API server, would set the
	// pace of a 1,000-RayService fleet. The API servers' own priority and fairness protects them.
	fs.Float64Var(&f.memberQPS, "member-api-qps", defaultMemberQPS,
		"Queries per second the hub may send to each member's Kubernetes API server; negative turns client-side throttling off.")
	fs.IntVar(&f.memberBurst, "member-api-burst", defaultMemberBurst,
		"Burst of queries the hub may send to each member's Kubernetes API server.")
	fs.StringVar(&f.hubNamespace, "hub-namespace", labels.DefaultHubNamespace,
		"Namespace holding the members' kubeconfig Secrets (and the leader-election Lease unless --leader-election-namespace says otherwise).")
	fs.StringVar(&f.hubName, "hub-name", labels.DefaultHubName,
		"This hub's name, written in the fleet.rayfleet.io/origin-hub label of every copy it makes; hubs sharing a member need different names, so that neither touches the other's copies.")
	fs.DurationVar(&f.heartbeatTimeout, "heartbeat-timeout", membership.DefaultHeartbeatTimeout,
		"How old a member's ClusterReport heartbeat may be before its AgentReady condition turns False.")
	fs.DurationVar(&f.credentialWarn, "credential-expiry-warning", membership.DefaultCredentialExpiryWarning,
		"How long before a member's bootstrap token (from rayfleet join) expires its CredentialsValid condition turns False.")
	fs.DurationVar(&f.resync, "resync", fleet.DefaultResync,
		"How often every hub RayService is reconciled without an event; member status changes also arrive by watch.")
	fs.StringVar(&f.trafficCIDRs, "traffic-cluster-cidrs", "",
		"Comma-separated Pod and Service CIDRs of the traffic cluster (where the hub writes routes): no member's serve address in them is routed to.")
	fs.StringVar(&f.trafficDomain, "traffic-cluster-domain", serveaddress.DefaultClusterDomain,
		"DNS domain of the traffic cluster: no member's serve address under it (or under svc) is routed to.")
	fs.DurationVar(&f.probeInterval, "serve-probe-interval", dataplane.DefaultInterval,
		"How often the hub probes each routed member's serve address (GET /-/healthz from the hub's network, which must reach the addresses as the gateway does); a backend failing "+
			"2 probes in a row loses its traffic, one answering keeps it while its member is unreachable. 0 turns probing off: the control plane's view alone decides.")
	fs.DurationVar(&f.probeTimeout, "serve-probe-timeout", dataplane.DefaultTimeout,
		"How long one probe of a serve address may take.")
}

// prober is the serve-address prober the flags ask for, added to mgr; nil when probing is off.
func (f flags) prober(mgr ctrl.Manager) (*dataplane.Prober, error) {
	if f.probeInterval <= 0 {
		return nil, nil
	}
	p, err := dataplane.New(dataplane.Config{Interval: f.probeInterval, Timeout: f.probeTimeout, Registerer: metrics.Registry})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(p); err != nil {
		return nil, fmt.Errorf("add the serve-address prober: %w", err)
	}
	return p, nil
}

// trafficCluster is the traffic cluster's own addresses as the flags give them.
func (f flags) trafficCluster() (serveaddress.Cluster, error) {
	tc := serveaddress.Cluster{Domain: f.trafficDomain}
	if f.trafficCIDRs == "" {
		return tc, nil
	}
	ranges, err := serveaddress.ParseCIDRs(strings.Split(f.trafficCIDRs, ","))
	if err != nil {
		return tc, fmt.Errorf("--traffic-cluster-cidrs: %w", err)
	}
	tc.Ranges = ranges
	return tc, nil
}

// Run parses args as bin/hub's command line and runs the hub until ctx ends. --help prints
// the flags and returns nil.
func Run(ctx context.Context, args []string, opts Options) error {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	var f flags
	fs := flag.NewFlagSet("hub", flag.ContinueOnError)
	bindFlags(fs, &f)
	if opts.BindFlags != nil {
		opts.BindFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("parsing flags: %w", err)
	}
	f.manager.SetupLogging()
	manageropts.SetMemoryLimit()
	return run(ctx, f, opts)
}

func run(ctx context.Context, f flags, opts Options) error {
	userAgent := "rayfleet-hub/" + opts.Version
	restCfg, err := f.manager.RESTConfig(userAgent)
	if err != nil {
		return err
	}
	sch, err := scheme.New()
	if err != nil {
		return err
	}
	namespaces, err := f.manager.Namespaces()
	if err != nil {
		return err
	}
	provider, err := newProvider(f, opts, providerSettings(f, sch, userAgent))
	if err != nil {
		return err
	}
	specs := fleet.NewHubSpecs()
	mgr, err := mcmanager.New(restCfg, provider, managerOptions(f, sch, namespaces, specs))
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err = manageropts.AddProbes(mgr); err != nil {
		return err
	}
	if p, ok := provider.(providerSetup); ok {
		if err = p.SetupWithManager(ctx, mgr); err != nil {
			return fmt.Errorf("setting up the member-cluster provider: %w", err)
		}
	}
	// A provider that mints member tokens (the kubeconfig provider) reports their refusals.
	mintFailures, _ := provider.(membership.MintFailures)
	if err = setupControllers(mgr, f, specs, mintFailures); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting hub", "version", opts.Version, "hubNamespace", f.hubNamespace)
	if err = mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// providerSettings are the member clusters' scheme, user agent and client-side rate limits.
func providerSettings(f flags, sch *runtime.Scheme, userAgent string) ProviderSettings {
	return ProviderSettings{
		HubNamespace: f.hubNamespace,
		ClusterOptions: []cluster.Option{func(o *cluster.Options) {
			o.Scheme = sch
			o.MapperProvider = membership.NewMapper
			o.Cache.DefaultTransform = propagation.TrimManagedFields
			// The copies are cached without their specs: the drift check reads those from
			// the member's API server, once per generation.
			o.Cache.ByObject = map[client.Object]cache.ByObject{&rayv1.RayService{}: {Transform: propagation.TrimCopy}}
		}},
		RESTOptions: []func(*rest.Config) error{func(c *rest.Config) error {
			c.UserAgent = userAgent
			c.QPS, c.Burst = float32(f.memberQPS), f.memberBurst
			return nil
		}},
	}
}

// newProvider is opts.NewProvider's provider, or the kubeconfig provider (membership.Provider),
// which refuses kubeconfigs that would make the hub run a program or read a file.
func newProvider(f flags, opts Options, s ProviderSettings) (multicluster.Provider, error) {
	if opts.NewProvider != nil {
		p, err := opts.NewProvider(s)
		if err != nil {
			return nil, fmt.Errorf("creating the member-cluster provider: %w", err)
		}
		return p, nil
	}
	return membership.NewProvider(membership.ProviderOptions{
		Namespace:      f.hubNamespace,
		ClusterOptions: s.ClusterOptions,
		RESTOptions:    s.RESTOptions,
		Registerer:     metrics.Registry,
	}), nil
}

// setupControllers registers the hub's controllers: MemberClusters, hub RayServices, the
// orphan sweep and PlacementPolicies. specs holds the hub RayServices' specs, which the cache
// drops (managerOptions).
func setupControllers(mgr mcmanager.Manager, f flags, specs *fleet.HubSpecs, mintFailures membership.MintFailures) error {
	local := mgr.GetLocalManager()
	members, err := membership.New(local.GetClient(), mgr, local.GetEventRecorder("membercluster-controller"),
		membership.Options{
			HubNamespace:            f.hubNamespace,
			HubName:                 f.hubName,
			HeartbeatTimeout:        f.heartbeatTimeout,
			CredentialExpiryWarning: f.credentialWarn,
			MintFailures:            mintFailures,
			Registerer:              metrics.Registry,
		})
	if err != nil {
		return err
	}
	if err = members.SetupWithManager(local); err != nil {
		return err
	}
	tc, err := f.trafficCluster()
	if err != nil {
		return err
	}
	probes, err := f.prober(local)
	if err != nil {
		return err
	}
	informers := traffic.NewInformers(func(ctx context.Context, name string) (*rest.Config, error) {
		if name == "" {
			return local.GetConfig(), nil
		}
		cl, err := mgr.GetCluster(ctx, multicluster.ClusterName(name))
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", name, err)
		}
		return cl.GetConfig(), nil
	}, local.GetScheme(), f.hubName)
	if err = local.Add(informers); err != nil {
		return err
	}
	rayServices := fleet.NewReconciler(local, membership.NewClients(mgr), fleet.Options{
		Resync:                  f.resync,
		MaxConcurrentReconciles: f.manager.MaxConcurrentReconciles,
		HubName:                 f.hubName,
		Specs:                   specs,
		TrafficCluster:          tc,
		Probes:                  probes,
		TrafficInformers:        informers,
	})
	if err = rayServices.SetupWithManager(mgr); err != nil {
		return err
	}
	// The sweep knows this hub's copies by the same name the reconciler writes on them.
	if err = sweep.New(mgr, sweep.Options{HubName: f.hubName}).SetupWithManager(mgr); err != nil {
		return err
	}
	return policy.New(local.GetClient(), local.GetEventRecorder("placementpolicy-controller")).SetupWithManager(local)
}

// managerOptions are the shared manager flags' options plus the hub's: its scheme and cache,
// the worker count, and the leader-election Lease in the hub namespace unless
// --leader-election-namespace says otherwise.
func managerOptions(f flags, sch *runtime.Scheme, namespaces []string, specs *fleet.HubSpecs) ctrl.Options {
	opts := f.manager.Manager()
	opts.Scheme = sch
	opts.Cache = cacheOptions(namespaces, f.hubNamespace, specs)
	opts.Controller = ctrlconfig.Controller{MaxConcurrentReconciles: f.manager.MaxConcurrentReconciles}
	if opts.LeaderElectionNamespace == "" {
		opts.LeaderElectionNamespace = f.hubNamespace
	}
	return opts
}

// hubRevisions selects the ControllerRevisions the hub makes (hub/revision labels each with
// the RayService it belongs to).
func hubRevisions() k8slabels.Selector {
	// A constant, valid key: the requirement cannot fail.
	req, _ := k8slabels.NewRequirement(labels.OriginName, selection.Exists, nil)
	return k8slabels.NewSelector().Add(*req)
}

// trimHubObject drops an object's managedFields and kubectl's last-applied configuration
// before the hub caches it. The hub writes its objects by patch and apply only, never by
// update, so what its cache lacks is never written back. The last-applied configuration is the
// whole manifest kubectl (or Argo CD) last applied, Serve config included: the size of the
// RayService again, and copies leave it behind (propagation.MemberRayService).
func trimHubObject(obj any) (any, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		// A tombstone or another non-object passes untouched, as the stock transforms do.
		return obj, nil //nolint:nilerr // not an object: nothing to trim
	}
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a != nil {
		delete(a, corev1.LastAppliedConfigAnnotation)
	}
	return obj, nil
}

// cacheOptions restricts the cache to the watched namespaces (nil: all) and drops what
// nothing in the hub reads (trimHubObject), and the RayServices' specs, which specs keeps as
// JSON for the reconciler. Secrets are cached in the hub namespace only, whatever
// --watch-namespace says: the hub reads the members' kubeconfigs there and has no business
// with other Secrets.
func cacheOptions(namespaces []string, hubNamespace string, specs *fleet.HubSpecs) cache.Options {
	opts := cache.Options{
		DefaultTransform: trimHubObject,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{hubNamespace: {}}},
			// The hub's own revisions only: a hub cluster that runs StatefulSets or DaemonSets
			// has theirs too, which the hub never reads.
			&appsv1.ControllerRevision{}: {Label: hubRevisions()},
			// Hub RayServices without their specs, which specs keeps as JSON.
			&rayv1.RayService{}: {Transform: specs.Transform(trimHubObject)},
		},
	}
	if len(namespaces) == 0 {
		return opts
	}
	opts.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts
}
