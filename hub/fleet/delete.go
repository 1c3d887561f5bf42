package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// requeueDeleting is how soon a deletion waiting on member copies that are themselves being
// deleted looks again: the spokes' finalizers remove RayClusters first, which takes a while,
// and nothing on the hub announces when they are done.
const requeueDeleting = 2 * time.Second

// reconcileDelete deletes the member copies of a hub RayService being deleted and then drops
// the finalizer. A cluster that cannot be reached is an error, so the controller retries it
// with backoff; a cluster whose MemberCluster is gone (unjoined) has nothing left to delete.
func (r *Reconciler) reconcileDelete(ctx context.Context, hub *rayv1.RayService) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(hub, labels.MemberCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	g, err := r.read(ctx, hub)
	if err != nil {
		return ctrl.Result{}, err
	}
	var pending []string
	var errs []error
	for _, name := range g.holding() {
		m := g.members[name]
		if m.mc == nil {
			continue
		}
		if m.readErr != nil {
			errs = append(errs, m.readErr)
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
	orig := hub.DeepCopy()
	controllerutil.RemoveFinalizer(hub, labels.MemberCleanupFinalizer)
	if err := r.client.Patch(ctx, hub, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("remove finalizer from RayService %s: %w", g.key, err)
	}
	r.metrics.forget(g.key)
	return ctrl.Result{}, nil
}
