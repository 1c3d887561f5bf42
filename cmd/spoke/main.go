// Command spoke is RayFleet's agent on a member cluster: a controller-runtime manager running the
// KubeRay-compatible RayCluster and RayService reconcilers (spoke/raycluster, spoke/rayservice)
// and the ClusterReport reporter (spoke/reporter). It imports spoke/ and shared/, never hub/ or
// shared/localfleet.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/manageropts"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/exclusivity"
	"github.com/rayfleet/rayfleet/spoke/features"
	"github.com/rayfleet/rayfleet/spoke/podsecurity"
	"github.com/rayfleet/rayfleet/spoke/raycluster"
	"github.com/rayfleet/rayfleet/spoke/rayservice"
	"github.com/rayfleet/rayfleet/spoke/reporter"
)

// Leader election and events are the manager's own needs, not a reconciler's, so their RBAC
// markers live here (`make manifests` reads ./cmd/spoke as well as ./spoke). Leader election
// gets, creates and renews (updates) its Lease, nothing more.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups=core;events.k8s.io,resources=events,verbs=create;patch

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// defaultLeaderElectionID is the spoke's leader-election Lease (and, with it, its claim).
const defaultLeaderElectionID = "rayfleet-spoke.rayfleet.io"

// flags holds the command line of the spoke: the manager flags it shares with the hub and its
// own.
type flags struct {
	manager           manageropts.Options
	dashboardTemplate string
	proxyTemplate     string
	reportInterval    time.Duration
	featureGates      *features.Gates
	podSecurityLevel  string
	configFile        string
}

// reconcilerOptions are the options of both reconcilers: KubeRay's environment variables first,
// then the flags that override them.
type reconcilerOptions struct {
	rayCluster raycluster.Options
	rayService rayservice.Options
}

// bindFlags registers the spoke's flags on fs. --max-concurrent-reconciles defaults to the
// RayCluster reconciler's option (from KubeRay's environment) and sizes both reconcilers (see
// parseArgs).
func bindFlags(fs *flag.FlagSet, f *flags, opts *reconcilerOptions) {
	f.manager.Bind(fs, manageropts.Defaults{
		Binary:                  "spoke",
		LeaderElectionID:        defaultLeaderElectionID,
		MaxConcurrentReconciles: opts.rayCluster.MaxConcurrentReconciles,
	})
	fs.StringVar(&f.dashboardTemplate, "dashboard-address-template", dashboard.DefaultDashboardTemplate,
		"How the spoke reaches a RayCluster's Ray dashboard: a URL template with {namespace}, {cluster}, "+
			"{service} (the head Service), {port} and {domain}. The default uses in-cluster DNS; set it when "+
			"the spoke runs outside the member's network (the local fleet maps it to a loopback stand-in).")
	fs.StringVar(&f.proxyTemplate, "serve-proxy-address-template", dashboard.DefaultProxyTemplate,
		"How the spoke reaches the Ray Serve proxy of a head Pod (its health check): a URL template with "+
			"{namespace}, {cluster}, {pod}, {podIP} and {port}. The default uses the Pod IP; set it when the "+
			"spoke runs outside the member's network (the local fleet maps it to a loopback stand-in).")
	fs.DurationVar(&f.reportInterval, "report-interval", reporter.DefaultInterval,
		"How often the spoke writes the member's ClusterReport (heartbeat, capacity, counts) for the hub; 0 turns reporting off.")
	fs.StringVar(&f.podSecurityLevel, "pod-security-level", podsecurity.DefaultLevel,
		"The Pod Security level (privileged, baseline or restricted) of this member: no Pod of a RayService or RayCluster "+
			"the hub placed may violate it (the spoke checks every such Pod before creating it, whoever wrote its template, "+
			"and creates none the level forbids); the hub labels the namespaces it creates with it and places there only "+
			"RayServices whose Pods pass it. The spoke chart sets it from hubPolicy.minPodSecurityLevel, the guard's level.")
	fs.StringVar(&f.configFile, "config", "",
		"A KubeRay operator configuration file (apiVersion "+configAPIVersion+", kind "+configKind+"): its "+
			"headSidecarContainers and workerSidecarContainers are added to every head and worker Pod, its "+
			"defaultContainerEnvs to every Ray container. Its other fields configure KubeRay's process and are refused: "+
			"the spoke's flags set them. The spoke chart renders it from headSidecarContainers and workerSidecarContainers.")
	// KubeRay's gate names, so that a KubeRay operator's --feature-gates carries over; a gate
	// the spoke cannot honour fails here rather than being ignored.
	f.featureGates = features.New()
	fs.Var(f.featureGates, "feature-gates", features.Usage())
}

// parseArgs reads the reconcilers' options from getenv, then the command line over them. A
// nil error with help true means --help was asked for and printed.
func parseArgs(args []string, getenv func(string) string, out io.Writer) (f flags, opts reconcilerOptions, help bool, err error) {
	opts.rayCluster = raycluster.OptionsFromEnv(getenv)
	opts.rayService = rayservice.OptionsFromEnv(getenv)
	fs := flag.NewFlagSet("spoke", flag.ContinueOnError)
	fs.SetOutput(out)
	bindFlags(fs, &f, &opts)
	if err = fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, opts, true, nil
		}
		return f, opts, false, fmt.Errorf("parsing flags: %w", err)
	}
	if fs.NArg() > 0 {
		return f, opts, false, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if opts.rayCluster.PodSecurity, err = podsecurity.New(f.podSecurityLevel); err != nil {
		return f, opts, false, fmt.Errorf("invalid --pod-security-level: %w", err)
	}
	if err = loadConfig(f.configFile, &opts.rayCluster.Build); err != nil {
		return f, opts, false, err
	}
	// Both reconcilers build the same RayClusters, and one flag sizes both worker pools.
	opts.rayCluster.MaxConcurrentReconciles = f.manager.MaxConcurrentReconciles
	opts.rayService.MaxConcurrentReconciles = f.manager.MaxConcurrentReconciles
	opts.rayService.Build = opts.rayCluster.Build
	return f, opts, false, nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		ctrl.Log.WithName("setup").Error(err, "spoke failed")
		os.Exit(1)
	}
}

func run(args []string) error {
	f, opts, help, err := parseArgs(args, os.Getenv, os.Stderr)
	if err != nil || help {
		return err
	}

	f.manager.SetupLogging()
	manageropts.SetMemoryLimit()
	setupLog := ctrl.Log.WithName("setup")

	// Bad templates are a configuration error: fail before connecting to anything.
	if err = setDashboardAccess(&opts.rayService, f, ctrlmetrics.Registry); err != nil {
		return err
	}
	restCfg, err := f.manager.RESTConfig("rayfleet-spoke/" + version)
	if err != nil {
		return err
	}

	if opts.rayService.GatewayAPI, err = detectGatewayAPI(restCfg); err != nil {
		return err
	}
	if !opts.rayService.GatewayAPI {
		setupLog.Info("Gateway API (" + gatewayGroupVersion + " Gateways and HTTPRoutes) is not served; " +
			"RayServices asking for NewClusterWithIncrementalUpgrade will fail validation")
	}
	mgr, err := newManager(restCfg, f)
	if err != nil {
		return err
	}
	gate, claimer, err := setupExclusivity(mgr, f, os.Getenv)
	if err != nil {
		return err
	}
	opts.rayCluster.Gate, opts.rayService.Gate = gate, gate
	if err = setupReconcilers(mgr, opts); err != nil {
		return err
	}
	if err = setupReporter(mgr, f, claimer.Problem); err != nil {
		return err
	}

	setupLog.Info("starting spoke", "version", version, "watchNamespaces", f.manager.WatchNamespaces,
		"maxConcurrentReconciles", opts.rayCluster.MaxConcurrentReconciles,
		"gatewayAPI", opts.rayService.GatewayAPI, "reportInterval", f.reportInterval, "podSecurityLevel", f.podSecurityLevel,
		"dashboardAddressTemplate", f.dashboardTemplate, "config", f.configFile, "serveProxyAddressTemplate", f.proxyTemplate)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// newManager creates the controller-runtime manager with the spoke's cache and endpoints.
func newManager(restCfg *rest.Config, f flags) (ctrl.Manager, error) {
	namespaces, err := f.manager.Namespaces()
	if err != nil {
		return nil, err
	}
	cacheOpts, err := cacheOptions(namespaces)
	if err != nil {
		return nil, err
	}
	sch, err := scheme.New()
	if err != nil {
		return nil, err
	}
	opts := f.manager.Manager()
	opts.Scheme, opts.Cache, opts.Client = sch, cacheOpts, clientOptions()
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := manageropts.AddProbes(mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}

// setupReporter adds the ClusterReport reporter to mgr; a report interval of 0 leaves it out
// (a member not joined to a hub, or one without the ClusterReport CRD).
func setupReporter(mgr ctrl.Manager, f flags, problem func() (exclusivity.Problem, bool)) error {
	interval := f.reportInterval
	if interval == 0 {
		return nil
	}
	if interval < 0 {
		return fmt.Errorf("--report-interval must not be negative, got %s", interval)
	}
	clk, err := heartbeatClock()
	if err != nil {
		return err
	}
	rep, err := reporter.New(mgr, reporter.Options{Interval: interval, AgentVersion: version,
		PodSecurityLevel: f.podSecurityLevel, Exclusivity: problem, Clock: clk})
	if err != nil {
		return fmt.Errorf("setting up the ClusterReport reporter: %w", err)
	}
	if err := mgr.Add(rep); err != nil {
		return fmt.Errorf("adding the ClusterReport reporter: %w", err)
	}
	return nil
}

// setupReconcilers registers the RayCluster and RayService reconcilers with mgr.
func setupReconcilers(mgr ctrl.Manager, opts reconcilerOptions) error {
	if err := raycluster.NewReconciler(mgr, opts.rayCluster).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the RayCluster reconciler: %w", err)
	}
	if err := rayservice.NewReconciler(mgr, opts.rayService).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the RayService reconciler: %w", err)
	}
	return nil
}

// cacheOptions keeps the informers to what the spoke owns, because on a large member the
// unrelated Pods, Secrets and EndpointSlices would dominate its memory.
//
// Pods and Jobs are cached only when they carry ray.io/cluster: KubeRay puts it on every Pod
// and on the GCS FT Redis cleanup Job, and users cannot override it through the Pod template.
// (app.kubernetes.io/created-by is no help: it is overridable on Pods and absent from the
// RayService, serve and headless Services.) Services have no label common to all that KubeRay
// creates, so they are cached whole. Secrets are never cached (see clientOptions).
//
// EndpointSlices are cached only when they name a Service, and trimmed: serve endpoints are
// counted from every slice of a serve Service, including those no EndpointSlice controller made
// and that carry nothing but kubernetes.io/service-name (see rayservice.EndpointSliceCache).
func cacheOptions(namespaces []string) (cache.Options, error) {
	owned, err := existsSelector(labels.Cluster)
	if err != nil {
		return cache.Options{}, err
	}
	slices, err := rayservice.EndpointSliceCache()
	if err != nil {
		return cache.Options{}, err
	}
	opts := cache.Options{
		// Nothing in the spoke reads managedFields; they are often half of an object's size.
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:                {Label: owned, Transform: raycluster.TrimPod},
			&batchv1.Job{}:               {Label: owned},
			&discoveryv1.EndpointSlice{}: slices,
		},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts, nil
}

// clientOptions makes the manager's client read Secrets from the API server, never through an
// informer: watching Secrets needs list and watch on every Secret of the member (RBAC cannot
// narrow them by label), and the spoke only ever gets the few it needs (auth tokens), by name.
func clientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}

// existsSelector selects the objects that carry the label key, whatever its value.
func existsSelector(key string) (k8slabels.Selector, error) {
	req, err := k8slabels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("building the %s selector: %w", key, err)
	}
	return k8slabels.NewSelector().Add(*req), nil
}
