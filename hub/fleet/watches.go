package fleet

// Phase: read. The watches that queue a hub RayService, and how events map to it.

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mchandler "sigs.k8s.io/multicluster-runtime/pkg/handler"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/rayfleet/rayfleet/hub/revision"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Least privilege on the hub: member access is the Members implementation's business.
//
// +kubebuilder:rbac:groups=ray.io,resources=rayservices,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayservices/status,verbs=get;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayservices/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=rayservicebindings,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=rayservicebindings/status,verbs=get;patch
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=memberclusters;placementpolicies,verbs=get;list;watch

// SetupWithManager registers the metrics and the controller in the hub's multicluster
// manager: the hub RayServices, their bindings, MemberClusters and PlacementPolicies on the
// local cluster, and the member copies on every engaged member, all feeding one queue of hub
// RayService keys on the local cluster.
func (r *Reconciler) SetupWithManager(mgr mcmanager.Manager) error {
	m, err := newMetrics(r.opts.MetricsRegisterer)
	if err != nil {
		return err
	}
	r.metrics = m
	// Capacity changes arrive with every heartbeat of every member; the RayServices they can
	// move are found through this index, not by copying every binding.
	err = mgr.GetLocalManager().GetFieldIndexer().IndexField(context.Background(), &fleetv1alpha1.RayServiceBinding{},
		roomIndex, roomIndexValue)
	if err != nil {
		return fmt.Errorf("index RayServiceBindings by placement: %w", err)
	}
	err = mgr.GetLocalManager().GetFieldIndexer().IndexField(context.Background(), &appsv1.ControllerRevision{},
		revision.OriginIndex, revision.IndexOrigin)
	if err != nil {
		return fmt.Errorf("index ControllerRevisions by RayService: %w", err)
	}
	if err := mgr.Add(r.holders); err != nil {
		return fmt.Errorf("add the member copy index: %w", err)
	}
	local := []mcbuilder.EngageOptions{mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false)}
	b := mcbuilder.ControllerManagedBy(mgr)
	if r.opts.Probes != nil {
		// A backend's probe verdict changing moves its traffic at once, not at the next resync.
		b = b.WatchesRawSource(keySource(r.opts.Probes.Changes()))
	}
	if r.opts.TrafficInformers != nil {
		// The gateway's verdict on a route, and a backend changed by someone else, arrive by
		// watch: a RayService with settled traffic is not polled for them.
		b = b.WatchesRawSource(keySource(r.opts.TrafficInformers.Changes()))
	}
	err = b.
		Named("hub-rayservice").
		// Our own status and finalizer writes need no reconcile.
		For(&rayv1.RayService{}, local[0], local[1], mcbuilder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
			deletionStarted(),
		))).
		// Someone else editing or deleting a binding is undone, and an approval (an annotation)
		// opens a stage at once; our status writes are not news, nor is a binding appearing:
		// the hub creates each one itself, in a reconcile of its RayService (placing 10,000
		// RayServices made a second reconcile of each that wrote nothing).
		Owns(&fleetv1alpha1.RayServiceBinding{}, local[0], local[1], mcbuilder.WithPredicates(
			notCreated(),
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}),
		)).
		Watches(&fleetv1alpha1.MemberCluster{}, mchandler.Lift(r.memberClusterHandler()), local[0], local[1]).
		Watches(&fleetv1alpha1.PlacementPolicy{}, mchandler.EnqueueRequestsFromMapFunc(r.rayServicesOfPolicy), local[0], local[1]).
		// A grant can select any namespace; a namespace's labels decide which grants select it.
		Watches(&fleetv1alpha1.NamespaceGrant{}, mchandler.EnqueueRequestsFromMapFunc(r.allRayServices), local[0], local[1]).
		Watches(&corev1.Namespace{}, mchandler.EnqueueRequestsFromMapFunc(r.rayServicesOfNamespace), local[0], local[1],
			mcbuilder.WithPredicates(predicate.LabelChangedPredicate{})).
		// A member copy's change (its status, a deletion, drift) reconciles its hub RayService at
		// once instead of at the next resync.
		Watches(&rayv1.RayService{}, r.copyToOrigin,
			mcbuilder.WithEngageWithLocalCluster(false), mcbuilder.WithEngageWithProviderClusters(true)).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles,
			// The multicluster builder does not read the manager's controller options itself.
			SkipNameValidation: mgr.GetLocalManager().GetControllerOptions().SkipNameValidation,
		}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("set up the hub RayService controller: %w", err)
	}
	return nil
}

// copyToOrigin queues, for an event on a member RayService, its hub RayService on the local
// cluster; a RayService the hub did not make queues nothing, nor does the hub's own write of a
// copy coming back (ownWrites). A burst of events on one copy, or on the copies of one
// RayService on several members, collapses into one queued key.
func (r *Reconciler) copyToOrigin(name multicluster.ClusterName, _ cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[mcreconcile.Request]
	add := func(obj client.Object, q queue) {
		if key, ok := OriginOf(obj); ok {
			q.Add(mcreconcile.Request{Request: reconcile.Request{NamespacedName: key}, ClusterName: localCluster})
		}
	}
	return handler.TypedFuncs[client.Object, mcreconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if !r.ownWrites.echo(string(name), e.Object, func() { add(e.Object, q) }) {
				add(e.Object, q)
			}
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			if !r.ownWrites.echo(string(name), e.ObjectNew, func() { add(e.ObjectNew, q) }) {
				add(e.ObjectNew, q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			r.ownWrites.forget(string(name), e.Object)
			add(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[client.Object], q queue) {
			add(e.Object, q)
		},
	}
}

// localCluster is multicluster-runtime's name of the hub's own cluster.
const localCluster multicluster.ClusterName = ""

// deletionStarted passes the update that sets deletionTimestamp, which need not change the
// generation.
func deletionStarted() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
}

// notCreated passes every event but a creation. A hub that starts lists its RayServices as
// well as their bindings, so each RayService is reconciled then without its binding's event.
func notCreated() predicate.Predicate {
	return predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }}
}

// rayServicesOfPolicy maps a PlacementPolicy to the RayServices of its namespace: which of
// them it places depends on annotations and on the policy's name being "default".
func (r *Reconciler) rayServicesOfPolicy(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.rayServices(ctx, client.InNamespace(obj.GetNamespace()))
}

// allRayServices maps a NamespaceGrant to every hub RayService.
func (r *Reconciler) allRayServices(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.rayServices(ctx)
}

// rayServicesOfNamespace maps a hub namespace to its RayServices.
func (r *Reconciler) rayServicesOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.rayServices(ctx, client.InNamespace(obj.GetName()))
}

// rayServices lists hub RayServices from the cache as requests. Only names are read, so the
// cache's objects are not copied: at fleet scale a copy of every RayService per event would
// cost more than the reconciles it queues.
func (r *Reconciler) rayServices(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var list rayv1.RayServiceList
	if err := r.client.List(ctx, &list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing RayServices to requeue failed")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// roomIndex indexes the bindings a change of free capacity can move (waitsForRoom).
const roomIndex = "status.placed.waitsForRoom"

// roomIndexValue is a binding's roomIndex value: "true", or none.
func roomIndexValue(obj client.Object) []string {
	if b, ok := obj.(*fleetv1alpha1.RayServiceBinding); ok && waitsForRoom(b) {
		return []string{"true"}
	}
	return nil
}

// waitsForRoom reports whether b's last decision placed it on fewer clusters than its policy
// asks for, which more free capacity somewhere can change. A binding with no Placed condition
// yet is being placed right now by a reconcile that reads the capacity itself; requeueing it
// on a heartbeat only repeats that reconcile. Policy, validation and grant refusals do not
// wait for room.
func waitsForRoom(b *fleetv1alpha1.RayServiceBinding) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)
	return c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == fleetv1alpha1.ReasonInsufficientClusters || c.Reason == fleetv1alpha1.ReasonNoClusterFits)
}

// waitingForRoom lists the RayServices whose binding waits for room: the only ones a change of
// free capacity can move.
func (r *Reconciler) waitingForRoom(ctx context.Context) []reconcile.Request {
	var list fleetv1alpha1.RayServiceBindingList
	if err := r.client.List(ctx, &list, client.MatchingFields{roomIndex: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing RayServiceBindings to requeue failed")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// memberClusterHandler requeues RayServices on MemberCluster changes. A member joining,
// leaving, or changing readiness, labels, taints, Pod Security level or serve address grant can
// change any placement or route (and its namespaces left unlabelled any hub RayService's
// status); more free capacity only matters to RayServices waiting for room (waitsForRoom), and
// less free capacity or the heartbeat itself to none.
func (r *Reconciler) memberClusterHandler() handler.EventHandler {
	all := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range r.rayServices(ctx) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.memberViews.forget(e.Object.GetName())
			r.ownWrites.forgetCluster(e.Object.GetName())
			all(ctx, q)
		},
		GenericFunc: func(ctx context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldMC, okOld := e.ObjectOld.(*fleetv1alpha1.MemberCluster)
			newMC, okNew := e.ObjectNew.(*fleetv1alpha1.MemberCluster)
			if !okOld || !okNew {
				return
			}
			switch memberChange(oldMC, newMC) {
			case changePlacement:
				all(ctx, q)
			case changeCapacity:
				for _, req := range r.waitingForRoom(ctx) {
					q.Add(req)
				}
			}
		},
	}
}

// change is how much a MemberCluster update matters to placement.
type change int

const (
	changeNone change = iota
	changeCapacity
	changePlacement
)

// memberChange classifies a MemberCluster update by what the planner reads of it.
func memberChange(oldMC, newMC *fleetv1alpha1.MemberCluster) change {
	a, b := memberOf(oldMC), memberOf(newMC)
	if a.Ready != b.Ready || a.PodSecurityLevel != b.PodSecurityLevel || !equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Taints, b.Taints) ||
		// The hub RayServices placed there show the namespaces it cannot label.
		!equality.Semantic.DeepEqual(oldMC.Status.UnenforcedNamespaces, newMC.Status.UnenforcedNamespaces) ||
		// The grant decides whether their routes take its serve address: a narrowed one applies now.
		!equality.Semantic.DeepEqual(oldMC.Spec.ServeAddresses, newMC.Spec.ServeAddresses) {
		return changePlacement
	}
	if grew(a.Free, b.Free) {
		return changeCapacity
	}
	return changeNone
}

// grew reports whether after has more of some resource than before, a missing resource being
// none. Only more room can place a RayService that waits for it: while a burst of copies is
// placed, every member's free capacity shrinks with each report, and requeueing the waiting
// RayServices on each of those only re-plans them to the same answer.
func grew(before, after corev1.ResourceList) bool {
	for name, q := range after {
		if had := before[name]; q.Cmp(had) > 0 {
			return true
		}
	}
	return false
}

// keySource queues the hub RayServices changes names: those whose backends' probe verdict
// changed (dataplane.Prober), or whose route or backends changed (traffic.Informers).
func keySource(changes <-chan event.TypedGenericEvent[types.NamespacedName]) source.TypedSource[mcreconcile.Request] {
	return source.TypedChannel(changes, handler.TypedFuncs[types.NamespacedName, mcreconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[types.NamespacedName], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			q.Add(mcreconcile.Request{Request: reconcile.Request{NamespacedName: e.Object}, ClusterName: localCluster})
		},
	})
}
