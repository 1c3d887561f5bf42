// Package fleet holds the hub's RayService reconciler: it places a hub RayService on member
// clusters (hub/placement), records the decision in its RayServiceBinding, server-side applies
// the member copies (hub/propagation), reads them back and turns their status into the
// binding's and the hub RayService's (hub/aggregate). The decisions are those packages' pure
// functions; this package reads, executes and writes.
//
// The reconciler runs on the hub cluster with a plain controller-runtime manager. Members are
// reached through the Members interface, which the membership code implements, so this package
// does not care how member clients are built or cached.
//
// It imports the hub's pure packages, hub/policy (for Check) and shared/, never hub/membership
// (Members is the seam), spoke/, shared/localfleet or, outside tests, shared/testing.
package fleet

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// DefaultResync is how often a placed RayService is reconciled without any event: member
// status changes reach the hub at least this often even when nothing tells it about them.
const DefaultResync = 10 * time.Second

// defaultConcurrentReconciles lets slow members (each call may wait on a remote API server)
// not hold up the RayServices placed elsewhere.
const defaultConcurrentReconciles = 8

// enqueueBuffer is the capacity of the Enqueue channel: member events come in bursts (a
// spoke restart touches every copy) and the sender should rarely block.
const enqueueBuffer = 1024

// Members hands out clients of member clusters by MemberCluster name.
type Members interface {
	// Client returns a client of the member named name, or an error when the member is not
	// engaged or cannot be reached.
	Client(ctx context.Context, name string) (client.Client, error)
}

// Options tune the Reconciler.
type Options struct {
	// Resync is the periodic requeue of every RayService; 0 means DefaultResync.
	Resync time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles; 0 means 8.
	MaxConcurrentReconciles int
	// Clock is the time source; nil means the real clock.
	Clock clock.Clock
	// MetricsRegisterer is where the metrics are registered; nil means controller-runtime's
	// registry.
	MetricsRegisterer prometheus.Registerer
}

// Reconciler reconciles hub RayServices. Build it with NewReconciler.
type Reconciler struct {
	client   client.Client
	members  Members
	recorder events.EventRecorder
	clock    clock.Clock
	metrics  *metrics
	// reserved remembers recent placements until the members' reports include them.
	reserved *reservations
	events   chan event.TypedGenericEvent[*rayv1.RayService]
	opts     Options
}

// NewReconciler returns a reconciler using the manager's client and event recorder and
// reaching members through members.
func NewReconciler(mgr ctrl.Manager, members Members, opts Options) *Reconciler {
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = defaultConcurrentReconciles
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MetricsRegisterer == nil {
		opts.MetricsRegisterer = ctrlmetrics.Registry
	}
	return &Reconciler{
		client:   mgr.GetClient(),
		members:  members,
		recorder: mgr.GetEventRecorder("rayfleet-hub"),
		clock:    opts.Clock,
		reserved: newReservations(),
		events:   make(chan event.TypedGenericEvent[*rayv1.RayService], enqueueBuffer),
		opts:     opts,
	}
}

// Enqueue asks for a reconcile of the hub RayService key, for instance because its copy on a
// member changed. It blocks only while the buffer is full, until ctx ends.
func (r *Reconciler) Enqueue(ctx context.Context, key types.NamespacedName) {
	rs := &rayv1.RayService{}
	rs.Namespace, rs.Name = key.Namespace, key.Name
	select {
	case r.events <- event.TypedGenericEvent[*rayv1.RayService]{Object: rs}:
	case <-ctx.Done():
	}
}

// OriginOf returns the hub RayService a member RayService was propagated from, by its origin
// labels; false for a copy without them (not the hub's).
func OriginOf(member client.Object) (types.NamespacedName, bool) {
	l := member.GetLabels()
	key := types.NamespacedName{Namespace: l[labels.OriginNamespace], Name: l[labels.OriginName]}
	return key, key.Namespace != "" && key.Name != ""
}

// Reconcile places, propagates and aggregates one hub RayService.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var hub rayv1.RayService
	if err := r.client.Get(ctx, req.NamespacedName, &hub); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics.forget(req.NamespacedName)
			r.reserved.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get RayService %s: %w", req.NamespacedName, err)
	}
	if !hub.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, &hub)
	}
	if !controllerutil.ContainsFinalizer(&hub, labels.MemberCleanupFinalizer) {
		orig := hub.DeepCopy()
		controllerutil.AddFinalizer(&hub, labels.MemberCleanupFinalizer)
		if err := r.client.Patch(ctx, &hub, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to RayService %s: %w", req.NamespacedName, err)
		}
	}

	s, err := r.read(ctx, &hub)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := validate(&hub); err != nil {
		s.invalid = err
		r.recorder.Eventf(&hub, nil, "Warning", "ValidationFailed", "Validate", "%s", err.Error())
	} else if err := r.place(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeBindingSpec(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	r.propagate(ctx, s)
	if s.invalid == nil {
		r.removeUnplaced(ctx, s)
	}
	if err := r.writeStatus(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.requeueAfter(s)}, nil
}

// requeueAfter is the periodic resync, or sooner when a tolerated member's time runs out, so
// the RayService fails over then and not up to a resync later.
func (r *Reconciler) requeueAfter(s *scope) time.Duration {
	if s.newRefusal {
		// The member that refused is left out by the next plan; make it now, not a resync later.
		return time.Millisecond
	}
	if s.wake.IsZero() {
		return r.opts.Resync
	}
	return min(r.opts.Resync, max(s.wake.Sub(r.clock.Now()), time.Millisecond))
}

// validate runs the spoke's own validation: a RayService the spokes would reject is never
// placed.
func validate(rs *rayv1.RayService) error {
	if err := validation.RayServiceMetadata(rs.ObjectMeta); err != nil {
		return fmt.Errorf("validate RayService %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if err := validation.RayServiceSpec(rs); err != nil {
		return fmt.Errorf("validate RayService %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return nil
}

// read fetches the binding and the MemberClusters into a new scope.
func (r *Reconciler) read(ctx context.Context, hub *rayv1.RayService) (*scope, error) {
	s := newScope(hub)
	var binding fleetv1alpha1.RayServiceBinding
	switch err := r.client.Get(ctx, client.ObjectKeyFromObject(hub), &binding); {
	case err == nil:
		s.binding = &binding
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get RayServiceBinding %s/%s: %w", hub.Namespace, hub.Name, err)
	}
	var mcs fleetv1alpha1.MemberClusterList
	if err := r.client.List(ctx, &mcs); err != nil {
		return nil, fmt.Errorf("list MemberClusters: %w", err)
	}
	for i := range mcs.Items {
		mc := &mcs.Items[i]
		s.memberClusters[mc.Name] = mc
	}
	if s.binding != nil {
		s.previous = slices.Clone(s.binding.Spec.Clusters)
		s.placed = slices.Clone(s.binding.Spec.Clusters)
		s.policyName = s.binding.Spec.PolicyName
	}
	hash, err := propagation.SpecHash(&hub.Spec)
	if err != nil {
		return nil, fmt.Errorf("RayService %s: %w", s.key, err)
	}
	s.hash = hash
	s.refusals = refusalsOf(s.binding, hash, r.clock.Now())
	return s, nil
}
