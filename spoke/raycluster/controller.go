// Package raycluster reconciles KubeRay RayClusters on a member cluster: Pods, Services and the
// supporting objects, with KubeRay v1.6.2's semantics.
// It imports the spoke's helper packages and shared/, never hub/, spoke/rayservice,
// shared/localfleet or, outside tests, shared/testing.
package raycluster

import (
	"context"
	"fmt"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlbuilder "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rayfleet/rayfleet/shared/cachememo"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/eventseries"
	"github.com/rayfleet/rayfleet/spoke/exclusivity"
	"github.com/rayfleet/rayfleet/spoke/expectations"
	"github.com/rayfleet/rayfleet/spoke/metrics"
)

// Requeue delays.
const (
	// requeueSoon follows every change and error: KubeRay's DefaultRequeueDuration, short
	// enough that multi-step operations (suspend, upgrade) finish promptly.
	requeueSoon = 2 * time.Second
	// requeueHeadTermination waits for a GCS FT head Pod to go before cleaning Redis; head
	// Pods take far longer than requeueSoon to terminate.
	requeueHeadTermination = 10 * time.Second
)

// podClusterIndex indexes Pods by their ray.io/cluster label (namespaced), so a reconcile lists
// its own Pods without scanning every Pod of the namespace.
const podClusterIndex = "rayfleet.io/pod-cluster"

// fieldManager is the field manager of every write the spoke makes.
const fieldManager = labels.SpokeFieldManager

// Least privilege: objects the spoke only creates are read with get, never listed or watched.
//
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch;create;patch;delete;deletecollection
// +kubebuilder:rbac:groups=core,resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups=core,resources=services,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=core,resources=secrets;serviceaccounts,verbs=get;create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=get;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;create
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;create
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create

// Reconciler reconciles RayClusters. Build it with NewReconciler.
type Reconciler struct {
	client       client.Client
	apiReader    client.Reader
	recorder     events.EventRecorder
	clock        clock.Clock
	expectations *expectations.Scale
	statuses     *cachememo.Statuses[rayv1.RayClusterStatus]
	holds        *progressHolds
	metrics      *metrics.RayClusterMetrics
	enforcer     *exclusivity.Enforcer
	build        builder.Options
	opts         Options
}

// NewReconciler returns a reconciler wired to the manager's client, cache and event recorder.
func NewReconciler(mgr ctrl.Manager, opts Options) *Reconciler {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	// Repeats of an event count in one Event rather than each writing its own.
	recorder := eventseries.New(mgr.GetEventRecorder("raycluster-controller"), mgr.GetScheme())
	return &Reconciler{
		client:       mgr.GetClient(),
		apiReader:    mgr.GetAPIReader(),
		recorder:     recorder,
		clock:        clk,
		expectations: expectations.NewScale(clk),
		statuses:     cachememo.NewStatuses(clk, (*rayv1.RayClusterStatus).DeepCopy),
		holds:        newProgressHolds(clk, progressHold),
		metrics:      opts.Metrics,
		enforcer: exclusivity.NewEnforcer(exclusivity.EnforcerOptions{Gate: opts.Gate, Client: mgr.GetClient(),
			Recorder: recorder, FieldManager: fieldManager, Clock: clk}),
		build: opts.Build,
		opts:  opts,
	}
}

// SetupWithManager registers the Pod index, the reconciler and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podClusterIndex,
		func(o client.Object) []string {
			if name, ok := o.GetLabels()[labels.Cluster]; ok {
				return []string{name}
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("index Pods by %s: %w", labels.Cluster, err)
	}
	if r.metrics == nil {
		reg := r.opts.MetricsRegisterer
		if reg == nil {
			reg = ctrlmetrics.Registry
		}
		if r.metrics, err = metrics.NewRayClusterMetrics(reg, mgr.GetClient()); err != nil {
			return fmt.Errorf("register RayCluster metrics: %w", err)
		}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("raycluster").
		// Status-only updates (our own writes) need no reconcile; spec, labels and
		// annotations (suspend, managedBy, GCS FT) do.
		For(&rayv1.RayCluster{}, ctrlbuilder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
		))).
		Watches(&corev1.Pod{}, podEvents(mgr.GetClient(), &rayv1.RayCluster{})).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles})
	if r.opts.GCSFTRedisCleanup {
		b = b.Owns(&batchv1.Job{})
	}
	return b.Complete(r)
}

// Reconcile drives one RayCluster towards its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var rc rayv1.RayCluster
	if err := r.client.Get(ctx, req.NamespacedName, &rc); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.Forget(req.Namespace, req.Name)
			r.statuses.Forget(req.NamespacedName)
			r.holds.release(req.NamespacedName)
			r.metrics.Forget(req.Name, req.Namespace)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get RayCluster %s: %w", req.NamespacedName, err)
	}
	if rayspec.ManagedByOther(rc.Spec.ManagedBy) {
		log.V(1).Info("Skipping RayCluster managed by another controller", "managedBy", *rc.Spec.ManagedBy)
		return ctrl.Result{}, nil
	}
	if proceed, res, err := r.enforcer.Admit(ctx, &rc, &rc.Status.Conditions); !proceed {
		// Another controller may change the cluster meanwhile: what was remembered of it no
		// longer holds when the spoke resumes.
		r.expectations.Forget(req.Namespace, req.Name)
		r.statuses.Forget(req.NamespacedName)
		r.holds.release(req.NamespacedName)
		return res, err
	}
	r.statuses.Apply(&rc, &rc.Status)
	setDefaults(&rc)

	if res, stop := r.validate(ctx, &rc); stop {
		return res, nil
	}
	if r.gcsFTCleanupEnabled(&rc) {
		if res, stop, err := r.reconcileGCSFTFinalizer(ctx, &rc); stop {
			return res, err
		}
	}
	if !rc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	s := newScope(&rc)
	reconcileErr := r.reconcileChain(ctx, s)
	return r.finish(ctx, s, reconcileErr)
}

// setDefaults fills what KubeRay's pod building expects to be non-nil.
func setDefaults(rc *rayv1.RayCluster) {
	if rc.Spec.HeadGroupSpec.RayStartParams == nil {
		rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{}
	}
	for i := range rc.Spec.WorkerGroupSpecs {
		if rc.Spec.WorkerGroupSpecs[i].RayStartParams == nil {
			rc.Spec.WorkerGroupSpecs[i].RayStartParams = map[string]string{}
		}
	}
}
