// Package rayservice reconciles KubeRay RayServices on a member cluster with KubeRay v1.6.2's
// semantics: an active and a pending RayCluster, Serve applications deployed through the Ray
// dashboard, zero-downtime upgrades through a new cluster (switched at once, or step by step
// through a Gateway API HTTPRoute), the head Pod's ray.io/serve label, dangling-cluster cleanup
// and the initializing timeout.
//
// A reconcile reads, runs its phases in KubeRay's order (each executes what the pure decisions
// of the upgrade, serve and status packages say), computes the status once and writes it once,
// only when it changed. It differs from KubeRay where KubeRay users hit problems: the deletion
// time of a dangling cluster survives a restart, a Service pointing at the wrong cluster is an
// event rather than a panic, in-place cluster updates keep the autoscaler's replicas and are
// patches, the head Pod's label is patched (never the whole Pod), and a settled RayService
// costs no API write and no Serve submission, and one read of its Serve applications every 10 s
// (poll.go) with no health check of its head's proxy while Kubernetes reports the head ready
// (headpod.go).
//
// It imports its sub-packages, the spoke's helpers and shared/, never hub/, spoke/raycluster
// (it creates RayClusters; that reconciler runs them), shared/localfleet or, outside tests,
// shared/testing.
package rayservice

import (
	"context"
	"fmt"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlbuilder "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rayfleet/rayfleet/shared/cachememo"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/shared/validation"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/eventseries"
	"github.com/rayfleet/rayfleet/spoke/exclusivity"
	"github.com/rayfleet/rayfleet/spoke/metrics"
	"github.com/rayfleet/rayfleet/spoke/rayservice/serve"
	"github.com/rayfleet/rayfleet/spoke/rayservice/status"
)

// Requeue delays.
const (
	// requeueSoon is KubeRay's ServiceDefaultRequeueDuration, the pace of a RayService while
	// anything of it changes (Serve applications change state without any Kubernetes event,
	// and traffic steps are timed) and of a failed step's retry. A settled RayService is
	// reconciled when its next Serve read is due instead (see ServePolls).
	requeueSoon = 2 * time.Second
	// requeueNewCluster follows the status write that names a new pending cluster: the
	// cluster is created by the next pass, once its name is durable, and there is no reason
	// to wait for it.
	requeueNewCluster = 100 * time.Millisecond
)

// fieldManager is the field manager of every write the spoke makes.
const fieldManager = labels.SpokeFieldManager

// Least privilege: what the reconciler reads through the cache is listed and watched; the
// rest is only got, created or patched. Events are the manager's (cmd/spoke).
//
// +kubebuilder:rbac:groups=ray.io,resources=rayservices,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayservices/status,verbs=get;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayservices/finalizers,verbs=update
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=core,resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways;httproutes,verbs=get;list;watch;create;patch

// Reconciler reconciles RayServices. Build it with NewReconciler.
type Reconciler struct {
	client     client.Client
	apiReader  client.Reader
	recorder   events.EventRecorder
	clock      clock.Clock
	rand       func(n int) string
	resolver   dashboard.Resolver
	factory    dashboard.Factory
	configs    *serve.Cache
	polls      *pollMemo
	tokens     *tokenCache
	validSpecs *validation.SpecMemo
	writes     *cachememo.Writes
	nodes      *nodeLister
	exportKind *exportKind
	statuses   *cachememo.Statuses[rayv1.RayServiceStatuses]
	metrics    *metrics.RayServiceMetrics
	enforcer   *exclusivity.Enforcer
	build      builder.Options
	opts       Options
}

// NewReconciler returns a reconciler wired to the manager's client, cache and event recorder.
// What can fail to set up (the default resolver, dashboard factory and metrics) is set up by
// SetupWithManager.
func NewReconciler(mgr ctrl.Manager, opts Options) *Reconciler {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Rand == nil {
		opts.Rand = cryptoRandString
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = defaultConcurrentReconciles
	}
	opts.ServePolls = opts.ServePolls.withDefaults()
	if opts.Build.ClusterDomain == "" || opts.Build.KubeRayVersion == "" {
		defaults := builder.DefaultOptions()
		if opts.Build.ClusterDomain == "" {
			opts.Build.ClusterDomain = defaults.ClusterDomain
		}
		if opts.Build.KubeRayVersion == "" {
			opts.Build.KubeRayVersion = defaults.KubeRayVersion
		}
	}
	// Repeats of an event count in one Event rather than each writing its own.
	recorder := eventseries.New(mgr.GetEventRecorder("rayservice-controller"), mgr.GetScheme())
	return &Reconciler{
		client:     mgr.GetClient(),
		apiReader:  mgr.GetAPIReader(),
		recorder:   recorder,
		clock:      opts.Clock,
		rand:       opts.Rand,
		resolver:   opts.Resolver,
		factory:    opts.Dashboards,
		configs:    serve.NewCache(serve.CacheSize),
		polls:      newPollMemo(),
		tokens:     newTokenCache(mgr.GetAPIReader(), opts.Clock),
		validSpecs: validation.NewSpecMemo(),
		writes:     cachememo.NewWrites(opts.Clock),
		nodes:      newNodeLister(mgr.GetAPIReader(), opts.Clock),
		exportKind: newExportKind(mgr.GetRESTMapper(), opts.Clock),
		statuses:   cachememo.NewStatuses(opts.Clock, (*rayv1.RayServiceStatuses).DeepCopy),
		metrics:    opts.Metrics,
		enforcer: exclusivity.NewEnforcer(exclusivity.EnforcerOptions{Gate: opts.Gate, Client: mgr.GetClient(),
			Recorder: recorder, FieldManager: fieldManager, Clock: opts.Clock}),
		build: opts.Build,
		opts:  opts,
	}
}

// SetupWithManager completes the defaults and registers the reconciler and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	reg := r.opts.MetricsRegisterer
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	var err error
	if r.resolver == nil {
		if r.resolver, err = dashboard.NewTemplateResolver(dashboard.DefaultDashboardTemplate,
			dashboard.DefaultProxyTemplate, r.build.ClusterDomain); err != nil {
			return fmt.Errorf("build the dashboard resolver: %w", err)
		}
	}
	if r.factory == nil {
		if r.factory, err = dashboard.NewFactory(dashboard.FactoryOptions{Registerer: reg}); err != nil {
			return fmt.Errorf("build the dashboard client factory: %w", err)
		}
	}
	if r.metrics == nil {
		// A collector over the cache: it needs no calls from the reconciler.
		if r.metrics, err = metrics.NewRayServiceMetrics(reg, mgr.GetClient()); err != nil {
			return fmt.Errorf("register RayService metrics: %w", err)
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("rayservice").
		// Status-only updates (our own writes) need no reconcile; the requeue carries a
		// RayService forward between its spec changes.
		For(&rayv1.RayService{}, ctrlbuilder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{},
			annotationsChanged(),
		))).
		Owns(&rayv1.RayCluster{}).
		Owns(&corev1.Service{}).
		// Ready turns on when the serve Service gets its first ready endpoint, and a head Pod
		// whose endpoint turns not ready has its Serve proxy checked (headpod.go); watching
		// the slices reports both at once instead of at the next requeue.
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.rayServiceOfSlice)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles}).
		Complete(r)
}

// Reconcile drives one RayService towards its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var rs rayv1.RayService
	if err := r.client.Get(ctx, req.NamespacedName, &rs); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get RayService %s: %w", req.NamespacedName, err)
	}
	if rayspec.ManagedByOther(rs.Spec.ManagedBy) {
		log.V(1).Info("Skipping RayService managed by another controller", "managedBy", *rs.Spec.ManagedBy)
		return ctrl.Result{}, nil
	}
	if proceed, res, err := r.enforcer.Admit(ctx, &rs, &rs.Status.Conditions); !proceed {
		// Another controller may change the RayService meanwhile (its clusters, its Serve
		// applications): what was remembered of it no longer holds when the spoke resumes.
		r.forget(req.NamespacedName)
		return res, err
	}
	r.statuses.Apply(&rs, &rs.Status)
	s := newScope(&rs)
	r.configs.Prune(s.key, rs.Status.ActiveServiceStatus.RayClusterName, rs.Status.PendingServiceStatus.RayClusterName)

	remaining, err := r.cleanUpClusters(ctx, s)
	if err != nil {
		return r.retry(ctx, "clean up RayClusters", err)
	}
	if !rs.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, s, remaining)
	}
	if !controllerutil.ContainsFinalizer(&rs, labels.RayServiceFinalizer) && !r.writes.Recent(finalizerMemoKey(&rs), "added") {
		// KubeRay ends the reconcile here; nothing below depends on the write, so this one
		// carries on and the first cluster is named without waiting for a requeue.
		if err := r.patchFinalizer(ctx, &rs, true); err != nil {
			return r.retry(ctx, "add finalizer", err)
		}
		r.writes.Note(finalizerMemoKey(&rs), "added")
	}
	if invalid := r.validate(ctx, s); invalid {
		return r.finishInvalid(ctx, s)
	}
	if status.InitializingTimedOut(&rs) {
		// Terminal: only the cleanup above runs, until the spec changes.
		if remaining {
			return ctrl.Result{RequeueAfter: requeueSoon}, nil
		}
		return ctrl.Result{}, nil
	}
	if status.RestartAfterTimeout(&rs) {
		log.Info("RayService spec changed after its initializing timeout; initializing again")
	}

	for _, p := range r.phases() {
		if err := p.run(ctx, s); err != nil {
			return r.retry(ctx, p.name, err)
		}
	}
	return r.finish(ctx, s)
}

// phase is one step of a reconcile; the reconcile stops at the first error, as KubeRay's.
// Dashboard failures are not errors: they are reported in the status and events, and the
// reconcile carries on with the cluster counted as not ready.
type phase struct {
	name string
	run  func(context.Context, *scope) error
}

// phases are KubeRay's steps, in its order.
func (r *Reconciler) phases() []phase {
	return []phase{
		{"reconcile RayClusters", r.reconcileClusters},
		{"reconcile rollback", r.reconcileRollback},
		{"label head Pods", r.reconcileHeadPodLabels},
		{"reconcile Serve", r.reconcileServe},
		{"reconcile target capacity", r.reconcileTargetCapacity},
		{"reconcile Gateway API objects", r.reconcileIncremental},
		{"reconcile Services", r.reconcileServices},
		{"count serve endpoints", r.countEndpoints},
	}
}

// retry ends a reconcile that failed at step: it runs again in requeueSoon, as KubeRay's does.
// The error is not returned, which would retry with an ever longer backoff instead.
func (r *Reconciler) retry(ctx context.Context, step string, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("Conflict; retrying", "step", step, "error", err.Error())
	} else {
		ctrl.LoggerFrom(ctx).Info("Reconcile incomplete; retrying", "step", step, "error", err.Error())
	}
	return ctrl.Result{RequeueAfter: requeueSoon}, nil
}

// rayServiceOfSlice maps an EndpointSlice of a RayService's serve Service to the RayService.
// The EndpointSlice controller copies the Service's labels onto its slices, which name the
// RayService at once; a slice made by anyone else (a mesh, a user, an MCS implementation)
// carries only kubernetes.io/service-name, so its Service is read from the cache instead. A
// per-cluster serve Service of an incremental upgrade is named after its cluster and maps to
// nothing (the periodic requeue covers it).
func (r *Reconciler) rayServiceOfSlice(ctx context.Context, o client.Object) []reconcile.Request {
	if reqs := rayServiceOfLabels(o.GetNamespace(), o.GetLabels()); reqs != nil {
		return reqs
	}
	name := o.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	var svc corev1.Service
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: name}, &svc); err != nil {
		// A Service not cached (yet) maps to nothing: its creation requeues its RayService.
		return nil
	}
	return rayServiceOfLabels(svc.Namespace, svc.Labels)
}

// rayServiceOfLabels names the RayService that objects labelled l in namespace ns originate
// from, or nil.
func rayServiceOfLabels(ns string, l map[string]string) []reconcile.Request {
	if l[labels.OriginatedFromCRD] != "RayService" || l[labels.OriginatedFromCRName] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: l[labels.OriginatedFromCRName]}}}
}

// finalizerMemoKey keys the memory of the finalizer added to rs.
func finalizerMemoKey(rs *rayv1.RayService) string { return "finalizer/" + string(rs.UID) }

// forget drops what the reconciler keeps about a deleted RayService.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.statuses.Forget(key)
	r.configs.Forget(key)
	r.polls.forget(key)
}
