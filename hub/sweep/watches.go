package sweep

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
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
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mchandler "sigs.k8s.io/multicluster-runtime/pkg/handler"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/cacheread"
	"github.com/rayfleet/rayfleet/shared/labels"
	sharedmetrics "github.com/rayfleet/rayfleet/shared/metrics"
)

// memberQueue is the request queue of the sweep: member names on the local cluster.
type memberQueue = workqueue.TypedRateLimitingInterface[mcreconcile.Request]

// SetupWithManager registers the metric and the controller in the hub's multicluster
// manager. Besides the periodic pass, a member is swept when:
//   - its MemberCluster is created or turns Ready (or stops being Ready, which ends nothing
//     but is cheap to say);
//   - one of this hub's copies on it is created, deleted, or has its labels changed (status
//     writes, the bulk of the copies' events, cannot make a copy an orphan);
//   - a hub RayService is deleted: every member, because its binding was deleted just before
//     it (hub/fleet's deletion), so which members held a copy is not known any more;
//   - a binding is created: every member, because a new binding of a recreated RayService can
//     make the copies of its predecessor orphans wherever it does not place it;
//   - a binding stops listing a member (spec.clusters and status.clusters): that member.
//
// Each of these collapses into one queued key per member, and a pass reads the caches only
// (apart from confirming a candidate), so a burst of hub events costs one cheap pass per member.
func (r *Reconciler) SetupWithManager(mgr mcmanager.Manager) error {
	swept := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rayfleet_orphans_swept_total",
		Help: "Member RayServices the orphan sweep deleted because nothing on the hub accounts for them, by member.",
	}, []string{"cluster"})
	var err error
	if r.swept, err = sharedmetrics.RegisterOrReuse(r.opts.MetricsRegisterer, swept, "the orphan sweep's metrics"); err != nil {
		return err
	}
	local := []mcbuilder.EngageOptions{mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false)}
	err = mcbuilder.ControllerManagedBy(mgr).
		Named("orphan-sweep").
		For(&fleetv1alpha1.MemberCluster{}, local[0], local[1], mcbuilder.WithPredicates(readinessChanged())).
		Watches(&rayv1.RayService{}, r.copyToMember,
			mcbuilder.WithEngageWithLocalCluster(false), mcbuilder.WithEngageWithProviderClusters(true)).
		Watches(&rayv1.RayService{}, mchandler.Lift(r.hubDeleted()), local[0], local[1]).
		Watches(&fleetv1alpha1.RayServiceBinding{}, mchandler.Lift(r.bindingChanged()), local[0], local[1]).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			// The multicluster builder does not read the manager's controller options itself.
			SkipNameValidation: mgr.GetLocalManager().GetControllerOptions().SkipNameValidation,
		}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("set up the orphan sweep: %w", err)
	}
	return nil
}

// memberRequest is the sweep's request for the member named name.
func memberRequest(name string) mcreconcile.Request {
	return mcreconcile.Request{Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}}
}

// readinessChanged passes MemberCluster creations and the updates that change whether the
// member may be swept; heartbeats and capacity reports do not.
func readinessChanged() predicate.Predicate {
	return predicate.Funcs{
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldMC, okOld := e.ObjectOld.(*fleetv1alpha1.MemberCluster)
			newMC, okNew := e.ObjectNew.(*fleetv1alpha1.MemberCluster)
			return okOld && okNew && sweepable(oldMC) != sweepable(newMC)
		},
	}
}

// copyToMember maps an event on a member RayService labelled with this hub's name to that
// member's request.
func (r *Reconciler) copyToMember(name multicluster.ClusterName, _ cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	ours := func(obj client.Object) bool { return obj.GetLabels()[labels.OriginHub] == r.opts.HubName }
	add := func(q memberQueue) { queuePass(r, q, memberRequest(string(name)), string(name)) }
	return handler.TypedFuncs[client.Object, mcreconcile.Request]{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q memberQueue) {
			if ours(e.Object) {
				add(q)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q memberQueue) {
			if (ours(e.ObjectOld) || ours(e.ObjectNew)) && !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
				add(q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q memberQueue) {
			if ours(e.Object) {
				add(q)
			}
		},
	}
}

// hubDeleted sweeps every member when a hub RayService is deleted.
func (r *Reconciler) hubDeleted() handler.EventHandler {
	return handler.Funcs{
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.addAll(ctx, q)
		},
	}
}

// bindingChanged sweeps every member when a binding is created, and the members a binding
// stops listing when it is updated.
func (r *Reconciler) bindingChanged() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.addAll(ctx, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldB, okOld := e.ObjectOld.(*fleetv1alpha1.RayServiceBinding)
			newB, okNew := e.ObjectNew.(*fleetv1alpha1.RayServiceBinding)
			if !okOld || !okNew {
				return
			}
			for _, name := range slices.Sorted(maps.Keys(listed(oldB))) {
				if !lists(newB, name) {
					queuePass(r, q, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, name)
				}
			}
		},
	}
}

// addAll queues a pass on every MemberCluster the hub cache knows (every binding created asks
// for this).
func (r *Reconciler) addAll(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	names, err := r.memberNames(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing MemberClusters to sweep failed")
		return
	}
	for _, name := range names {
		queuePass(r, q, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, name)
	}
}

// memberNames are the names of the MemberClusters in the hub cache: the informer's keys (a
// MemberCluster's is its name) where its store can be read, which copies no object; a List
// otherwise. Placing 10,000 RayServices asks for them 10,000 times, and the List's copies of
// 100 MemberClusters each time were a twentieth of the hub's allocations.
func (r *Reconciler) memberNames(ctx context.Context) ([]string, error) {
	if names, ok, err := cacheread.Keys(ctx, r.informers, &fleetv1alpha1.MemberCluster{}); ok || err != nil {
		return names, err
	}
	var mcs fleetv1alpha1.MemberClusterList
	if err := r.hub.List(ctx, &mcs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	names := make([]string, len(mcs.Items))
	for i := range mcs.Items {
		names[i] = mcs.Items[i].Name
	}
	return names, nil
}

// queuePass queues req, a pass on member name, for when the member may be swept again (see
// pace): at once, or after the rest of the gap since its last pass. A burst of events then
// costs one queued pass per member and gap, not one reconcile per event that pace turns
// away (placing 10,000 RayServices on 100 members asked for a million).
func queuePass[T comparable](r *Reconciler, q workqueue.TypedRateLimitingInterface[T], req T, name string) {
	if wait := r.passes.due(name, r.passGap(), false); wait > 0 {
		q.AddAfter(req, wait)
		return
	}
	q.Add(req)
}

// listed is the set of clusters b lists, placed or holding.
func listed(b *fleetv1alpha1.RayServiceBinding) map[string]bool {
	out := map[string]bool{}
	for _, name := range b.Spec.Clusters {
		out[name] = true
	}
	for i := range b.Status.Clusters {
		out[b.Status.Clusters[i].Name] = true
	}
	return out
}
