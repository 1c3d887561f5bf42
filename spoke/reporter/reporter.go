package reporter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
	"github.com/rayfleet/rayfleet/spoke/exclusivity"
)

// The reporter reads every Node and Pod through its own informers, counts the Ray objects and
// writes the one ClusterReport.
//
// +kubebuilder:rbac:groups=core,resources=nodes;pods,verbs=list;watch
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=clusterreports,verbs=get;create
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=clusterreports/status,verbs=update
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters;rayservices,verbs=list;watch

// DefaultInterval is how often the report is written: the hub's default heartbeat timeout
// (40 s) then tolerates three missed reports before it calls the agent not ready.
const DefaultInterval = 10 * time.Second

// reportTimeout bounds one report: a stalled API call must not hold back the next heartbeats
// past the hub's default heartbeat timeout (40 s).
const reportTimeout = 30 * time.Second

// maxSyncWait bounds how long one report waits for the Node and Pod informers to sync before it
// says the agent is not ready, leaving the rest of reportTimeout to the write.
const maxSyncWait = 10 * time.Second

// Options tune the Reporter. The zero value reports every DefaultInterval with the real clock
// and reads and writes through the manager.
type Options struct {
	// Interval is the time between two reports; zero or negative means DefaultInterval.
	Interval time.Duration
	// Clock is the time source of the heartbeat and the interval; nil means the real clock.
	Clock clock.Clock
	// AgentVersion is the spoke's version, reported as is.
	AgentVersion string
	// PodSecurityLevel is the Pod Security level the member enforces on the namespaces the hub
	// creates (privileged, baseline or restricted); "" means podsecurity.Default.
	PodSecurityLevel string
	// Client creates the ClusterReport and patches its status; nil means the manager's client.
	Client client.Client
	// APIReader reads the ClusterReport before each write; nil means the manager's API reader
	// (one GET per interval, rather than an informer for a single object).
	APIReader client.Reader
	// RayReader lists RayClusters and RayServices; nil means the manager's cache, which the
	// spoke's reconcilers fill anyway.
	RayReader client.Reader
	// Cache reads Nodes and Pods; the caller starts it. Nil means a cache of the reporter's
	// own, with trimmed objects (TrimNode, TrimPod) and only the Pods bound to a Node and not
	// finished, started while the reporter runs (that is, on the leader only).
	Cache cache.Cache
	// ServerVersion tells the Kubernetes version; nil means discovery on the manager's config.
	ServerVersion discovery.ServerVersionInterface
	// Exclusivity tells what keeps the spoke from reconciling (another controller active, or
	// not known yet); nil means nothing does. See exclusivity.Claimer.Problem.
	Exclusivity func() (exclusivity.Problem, bool)
}

// Reporter writes the member's ClusterReport every interval. It is a manager.Runnable that
// runs on the leader only. Failures are logged and retried at the next tick.
type Reporter struct {
	interval      time.Duration
	clock         clock.Clock
	agentVersion  string
	podSecurity   string
	client        client.Client
	apiReader     client.Reader
	rayReader     client.Reader
	cache         cache.Cache
	ownCache      bool
	serverVersion discovery.ServerVersionInterface
	exclusivity   func() (exclusivity.Problem, bool)

	// mu guards kubernetesVersion, which Report fills in once discovery has answered.
	mu                sync.Mutex
	kubernetesVersion string
}

// New returns a Reporter for mgr's cluster; add it with mgr.Add. mgr's scheme must know
// fleet.rayfleet.io/v1alpha1.
func New(mgr ctrl.Manager, opts Options) (*Reporter, error) {
	if _, _, err := mgr.GetScheme().ObjectKinds(&fleetv1alpha1.ClusterReport{}); err != nil {
		return nil, fmt.Errorf("the manager's scheme cannot hold a ClusterReport: %w", err)
	}
	r := &Reporter{
		interval:      opts.Interval,
		clock:         opts.Clock,
		agentVersion:  opts.AgentVersion,
		podSecurity:   opts.PodSecurityLevel,
		client:        opts.Client,
		apiReader:     opts.APIReader,
		rayReader:     opts.RayReader,
		cache:         opts.Cache,
		serverVersion: opts.ServerVersion,
		exclusivity:   opts.Exclusivity,
	}
	if r.interval <= 0 {
		r.interval = DefaultInterval
	}
	if r.podSecurity == "" {
		r.podSecurity = podsecurity.Default
	}
	if !podsecurity.Valid(r.podSecurity) {
		return nil, fmt.Errorf("Pod Security level %q is none of %v", r.podSecurity, podsecurity.Levels())
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	if r.apiReader == nil {
		r.apiReader = mgr.GetAPIReader()
	}
	if r.rayReader == nil {
		r.rayReader = mgr.GetCache()
	}
	if r.serverVersion == nil {
		dc, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return nil, fmt.Errorf("creating a discovery client: %w", err)
		}
		r.serverVersion = dc
	}
	if r.cache == nil {
		c, err := newNodePodCache(mgr)
		if err != nil {
			return nil, err
		}
		r.cache, r.ownCache = c, true
	}
	return r, nil
}

// newNodePodCache builds the reporter's informers. The field selector leaves unbound and
// finished Pods on the API server: they hold no capacity, and completed Job Pods can outnumber
// the running ones.
func newNodePodCache(mgr ctrl.Manager) (cache.Cache, error) {
	running := fields.AndSelectors(
		fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	)
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		// Only the two informers below; a read of anything else is a bug, not a new watch.
		ReaderFailOnMissingInformer: true,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:  {Field: running, Transform: TrimPod},
			&corev1.Node{}: {Transform: TrimNode},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the reporter's Node and Pod cache: %w", err)
	}
	return c, nil
}

// NeedLeaderElection makes the reporter run on the leader only: one writer per report, and
// the followers keep no Node and Pod informers.
func (r *Reporter) NeedLeaderElection() bool { return true }

// Start reports at once, then every interval until ctx is done. It returns nil: a failed
// report is logged and retried, never a reason to stop the manager.
func (r *Reporter) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("reporter")
	ctx = ctrl.LoggerInto(ctx, log)
	var wg sync.WaitGroup
	if r.ownCache {
		wg.Go(func() {
			if err := r.cache.Start(ctx); err != nil {
				log.Error(err, "the Node and Pod cache stopped")
			}
		})
	}
	defer wg.Wait()
	for {
		started := r.clock.Now()
		reportCtx, cancel := context.WithTimeout(ctx, reportTimeout)
		if err := r.Report(reportCtx); err != nil {
			log.Error(err, "reporting the cluster failed; retrying at the next tick", "interval", r.interval)
		}
		cancel()
		// The next report is due one interval after this one started, however long it took.
		timer := r.clock.NewTimer(max(r.interval-r.clock.Since(started), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		}
	}
}

// Report reads the cluster and writes the ClusterReport once. A part that cannot be read is
// reported as a problem (AgentReady=False) and keeps its last value; the heartbeat is written
// whenever the API server accepts it. The error joins every failure.
func (r *Reporter) Report(ctx context.Context) error {
	var errs []error
	var obs observation
	if r.exclusivity != nil {
		if p, ok := r.exclusivity(); ok {
			if p.AnotherSpokeReports {
				// The spoke this one gives way to reports for the member; two writers would
				// make the report flap.
				ctrl.LoggerFrom(ctx).V(1).Info("Not reporting: another spoke reconciles this cluster and reports it")
				return nil
			}
			obs.problems = append(obs.problems, p.Message)
			obs.reason = p.Reason
		}
	}
	summary, err := r.readCapacity(ctx)
	if err != nil {
		errs = append(errs, err)
		obs.problems = append(obs.problems, err.Error())
	} else {
		obs.summary = &summary
	}
	workloads, err := r.readWorkloads(ctx)
	if err != nil {
		errs = append(errs, err)
		obs.problems = append(obs.problems, err.Error())
	} else {
		obs.workloads = &workloads
	}
	// The version is not a readiness matter: the last known one stays in the report.
	kubeVersion, err := r.kubeVersion()
	if err != nil {
		errs = append(errs, err)
	}
	in := reportInput{now: metav1.NewTime(r.clock.Now()), agentVersion: r.agentVersion, kubernetesVersion: kubeVersion,
		podSecurityLevel: r.podSecurity}
	if err := r.write(ctx, in, obs); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// readCapacity computes the capacity from the Node and Pod informers, once they have synced.
func (r *Reporter) readCapacity(ctx context.Context) (Summary, error) {
	for _, obj := range []client.Object{&corev1.Node{}, &corev1.Pod{}} {
		// Not blocking: the wait below is bounded, this one would not be.
		if _, err := r.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return Summary{}, fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	syncCtx, cancel := context.WithTimeout(ctx, min(r.interval, maxSyncWait))
	defer cancel()
	if !r.cache.WaitForCacheSync(syncCtx) {
		return Summary{}, errors.New("the Node and Pod informers have not synced yet")
	}
	// Compute only reads, so the cached objects need no copies.
	var nodes corev1.NodeList
	if err := r.cache.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return Summary{}, fmt.Errorf("listing Nodes: %w", err)
	}
	var pods corev1.PodList
	if err := r.cache.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return Summary{}, fmt.Errorf("listing Pods: %w", err)
	}
	return Compute(nodes.Items, pods.Items), nil
}

// readWorkloads counts the RayClusters and RayServices.
func (r *Reporter) readWorkloads(ctx context.Context) (fleetv1alpha1.WorkloadCounts, error) {
	var clusters rayv1.RayClusterList
	if err := r.rayReader.List(ctx, &clusters, client.UnsafeDisableDeepCopy); err != nil {
		return fleetv1alpha1.WorkloadCounts{}, fmt.Errorf("listing RayClusters: %w", err)
	}
	var services rayv1.RayServiceList
	if err := r.rayReader.List(ctx, &services, client.UnsafeDisableDeepCopy); err != nil {
		return fleetv1alpha1.WorkloadCounts{}, fmt.Errorf("listing RayServices: %w", err)
	}
	return countWorkloads(clusters.Items, services.Items), nil
}

// kubeVersion asks discovery for the API server's version until it has answered once; an API
// server is not upgraded under a running agent often enough to ask again.
func (r *Reporter) kubeVersion() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kubernetesVersion != "" {
		return r.kubernetesVersion, nil
	}
	info, err := r.serverVersion.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("asking the API server for its version: %w", err)
	}
	r.kubernetesVersion = info.GitVersion
	return r.kubernetesVersion, nil
}

// write creates the ClusterReport if it is missing and patches its status with a merge patch
// computed against what the API server holds, so that a resource gone from the cluster (the
// last GPU Node removed) is removed from the report too.
func (r *Reporter) write(ctx context.Context, in reportInput, obs observation) error {
	key := client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}
	report := &fleetv1alpha1.ClusterReport{}
	err := r.apiReader.Get(ctx, key, report)
	if apierrors.IsNotFound(err) {
		report = &fleetv1alpha1.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: key.Name}}
		// The status subresource drops a status sent with the create; the patch writes it.
		if err = r.client.Create(ctx, report); err != nil {
			return fmt.Errorf("creating ClusterReport %s: %w", key.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("reading ClusterReport %s: %w", key.Name, err)
	}
	in.generation = report.Generation
	report.Status = buildStatus(&report.Status, in, obs)
	// The whole status is sent, resourceVersion included. A merge patch computed against the
	// typed object leaves out fields whose new value equals the Go zero value (say
	// rayServicesReady: 0), and against a stored status without that struct the API server
	// then rejects the patch for a missing required field. The spoke is the report's only
	// writer, so a conflict means a second spoke replica is writing: the next tick retries.
	if err := r.client.Status().Update(ctx, report); err != nil {
		return fmt.Errorf("updating the status of ClusterReport %s: %w", key.Name, err)
	}
	return nil
}
