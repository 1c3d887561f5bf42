package fleet

// Phase: the delete path. A hub RayService being deleted: its copies, route and records.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/revision"
	"github.com/rayfleet/rayfleet/hub/traffic"
	"github.com/rayfleet/rayfleet/shared/finalizer"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// The hub deletes what it made for a RayService itself: the local fleet's hub runs no garbage
// collector, so an owner reference alone would leave the binding (still Ready) and the
// revisions behind.
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=rayservicebindings,verbs=delete

// requeueDeleting is how soon a deletion waiting on member copies that are themselves being
// deleted looks again: the spokes' finalizers remove RayClusters first, which takes a while,
// and nothing on the hub announces when they are done.
const requeueDeleting = 2 * time.Second

// Event reasons of a deletion, on the hub RayService.
const (
	// reasonLeftToSweep: a member that cannot be reached keeps its copy until the orphan sweep
	// (hub/sweep) deletes it once the member is Ready again.
	reasonLeftToSweep = "LeftToSweep"
	// reasonOrphaned: a copy kept by on-delete: orphan, its origin labels removed.
	reasonOrphaned = "Orphaned"
	// reasonWaitingToOrphan: on-delete: orphan waits for a member that cannot be reached.
	reasonWaitingToOrphan = "WaitingToOrphan"
	// reasonRouteLeft: the traffic cluster could not be reached to delete the route.
	reasonRouteLeft = "RouteLeft"
)

// originKeys are the labels that make a member RayService the hub's copy, and orphanedKeys
// those and the annotations an orphaned copy loses: without them no hub reconciles it, the
// spoke treats it as its own, and no orphan sweep deletes it.
var (
	originKeys   = []string{labels.OriginNamespace, labels.OriginName, labels.OriginUID, labels.OriginHub}
	orphanedKeys = []string{labels.SpecHash, labels.Revision}
)

// deleteRoute removes the RayService's route and backends from the traffic cluster before its
// copies go, so that the gateway stops sending requests first. A traffic cluster that cannot
// be reached does not hold the deletion: the route is left, named in a Warning event.
func (r *Reconciler) deleteRoute(ctx context.Context, g *group) {
	spec := trafficSpec(g)
	if spec == nil {
		return
	}
	reader, w, err := r.trafficClients(ctx, spec)
	if err == nil {
		err = traffic.Delete(ctx, w, reader, traffic.Key(g.key), r.opts.HubName)
	}
	if err != nil {
		r.recorder.Eventf(g.hub, nil, corev1.EventTypeWarning, reasonRouteLeft, "Delete",
			"the route in namespace %s of the traffic cluster was not deleted; delete it by hand: %v", g.key.Namespace, err)
		return
	}
	// A route an earlier hub wrote in the Gateway's namespace, where the hub may hold no rights
	// any more once its admin moved them to the RayServices' namespaces.
	legacy, ok := traffic.LegacyKey(g.key, spec)
	if !ok {
		return
	}
	if err := traffic.Delete(ctx, w, reader, legacy, r.opts.HubName); err != nil && !apierrors.IsForbidden(err) {
		r.recorder.Eventf(g.hub, nil, corev1.EventTypeWarning, reasonRouteLeft, "Delete",
			"the earlier route %s of the traffic cluster was not deleted; delete it by hand: %v", legacy.Route, err)
	}
}

// reconcileDelete runs the deletion of a hub RayService: its member copies are deleted (or,
// with on-delete: orphan, released), then its binding and revisions, then the finalizer goes.
// Every step treats "already gone" as done, so a hub restarted half way resumes where it was.
func (r *Reconciler) reconcileDelete(ctx context.Context, hub *rayv1.RayService) (ctrl.Result, error) {
	// A RayService being deleted routes nowhere new: its backends need no more probes.
	r.wantProbes(client.ObjectKeyFromObject(hub), nil)
	if !controllerutil.ContainsFinalizer(hub, labels.MemberCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	g, err := r.read(ctx, hub)
	if err != nil {
		return ctrl.Result{}, err
	}
	var result ctrl.Result
	if hub.Annotations[labels.OnDelete] == labels.OnDeleteOrphan {
		// The orphaned copies keep serving, through the route too.
		err = r.orphanCopies(ctx, g)
	} else {
		r.deleteRoute(ctx, g)
		result, err = r.deleteCopies(ctx, g)
	}
	if err != nil || !result.IsZero() {
		return result, err
	}
	// The copies go first: the binding is what says which members hold one, so a restart
	// between the two steps must still find it.
	if err := r.deleteRecords(ctx, g); err != nil {
		return ctrl.Result{}, err
	}
	if err := finalizer.Patch(ctx, r.client, hub, labels.MemberCleanupFinalizer, false); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("remove finalizer from RayService %s: %w", g.key, err)
	}
	r.metrics.forget(g.key)
	return ctrl.Result{}, nil
}

// deleteCopies deletes the copies on every member holding one that can be reached, and waits
// (a requeue) while any is still terminating. A member that cannot be reached does not hold
// the deletion: a member may be gone for good, and the hub RayService, its name and its
// binding would stay stuck with it. Its copy is left to the orphan sweep, which deletes it once
// the member is Ready again and the hub RayService is gone. A member whose MemberCluster is
// gone (unjoined) has nothing the hub can delete.
func (r *Reconciler) deleteCopies(ctx context.Context, g *group) (ctrl.Result, error) {
	var pending, unreachable []string
	var errs []error
	for _, name := range g.holding() {
		m := g.members[name]
		switch {
		case m.mc == nil:
			continue
		case m.readErr != nil:
			unreachable = append(unreachable, name)
			continue
		}
		gone, err := r.removeCopy(ctx, g, name)
		if err != nil {
			errs = append(errs, err)
		} else if !gone {
			pending = append(pending, name)
		}
	}
	if len(errs) > 0 {
		return ctrl.Result{}, fmt.Errorf("delete member copies of RayService %s: %w", g.key, errors.Join(errs...))
	}
	if len(pending) > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for member copies to be deleted", "clusters", strings.Join(pending, ","))
		return ctrl.Result{RequeueAfter: requeueDeleting}, nil
	}
	for _, name := range unreachable {
		r.recorder.Eventf(g.hub, memberRef(name), corev1.EventTypeWarning, reasonLeftToSweep, "Delete",
			"cluster %s cannot be reached (%v); its copy of RayService %s is left to the orphan sweep, which deletes it once the cluster is Ready",
			name, g.members[name].readErr, g.key)
	}
	return ctrl.Result{}, nil
}

// orphanCopies releases the copies of a RayService deleted with on-delete: orphan: each loses
// its origin labels and the hub's annotations and stays on its member. Here a member that
// cannot be reached does hold the deletion (an error, retried with backoff): its copy still
// names the hub RayService, and once that is gone the orphan sweep would delete the very copy
// the user asked to keep. A member whose MemberCluster is gone is no longer the hub's to touch.
func (r *Reconciler) orphanCopies(ctx context.Context, g *group) error {
	var unreachable []string
	var errs []error
	for _, name := range g.holding() {
		m := g.members[name]
		switch {
		case m.mc == nil:
			continue
		case m.readErr != nil:
			unreachable = append(unreachable, name)
			errs = append(errs, m.readErr)
			continue
		}
		if err := r.orphanCopy(ctx, g, name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range unreachable {
		r.recorder.Eventf(g.hub, memberRef(name), corev1.EventTypeWarning, reasonWaitingToOrphan, "Delete",
			"cluster %s cannot be reached (%v); the deletion of RayService %s waits for it, so that its copy is kept (on-delete: orphan) and not swept",
			name, g.members[name].readErr, g.key)
	}
	if len(errs) > 0 {
		return fmt.Errorf("orphan member copies of RayService %s: %w", g.key, errors.Join(errs...))
	}
	return nil
}

// orphanCopy removes the origin labels and the hub's annotations from one member's copy, with
// a merge patch under optimistic locking, so a copy replaced or changed since it was read is
// read again rather than patched blindly. A copy that is already not ours (orphaned by an
// earlier attempt, or foreign) or is being deleted is left as it is.
func (r *Reconciler) orphanCopy(ctx context.Context, g *group, name string) error {
	m := g.members[name]
	c := m.copy
	if c == nil || !c.DeletionTimestamp.IsZero() || propagation.OwnershipOf(r.opts.HubName, g.hub, c) == propagation.Foreign {
		return nil
	}
	orig := c.DeepCopy()
	for _, k := range originKeys {
		delete(c.Labels, k)
	}
	for _, k := range orphanedKeys {
		delete(c.Annotations, k)
	}
	if err := m.client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("orphan RayService %s on cluster %s: %w", g.key, name, err)
	}
	r.recorder.Eventf(g.hub, memberRef(name), corev1.EventTypeNormal, reasonOrphaned, "Delete",
		"kept RayService %s on cluster %s without its origin labels (on-delete: orphan); no hub manages it any more", g.key, name)
	return nil
}

// deleteRecords deletes the hub's own records of the RayService: its binding (only the object
// read, by UID) and every revision it controls.
func (r *Reconciler) deleteRecords(ctx context.Context, g *group) error {
	if g.binding != nil {
		uid := g.binding.UID
		err := r.client.Delete(ctx, g.binding, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete RayServiceBinding %s: %w", g.key, err)
		}
	}
	names := make([]string, 0, len(g.history))
	for i := range g.history {
		names = append(names, g.history[i].Name)
	}
	if err := revision.Delete(ctx, r.client, g.history, names); err != nil {
		return fmt.Errorf("delete the revisions of RayService %s: %w", g.key, err)
	}
	return nil
}
