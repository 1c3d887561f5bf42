package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
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
	s := newScope(hub)
	var binding fleetv1alpha1.RayServiceBinding
	switch err := r.client.Get(ctx, s.key, &binding); {
	case err == nil:
		s.binding = &binding
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("get RayServiceBinding %s: %w", s.key, err)
	}
	var pending []string
	var errs []error
	for _, name := range holdingClusters(s.binding) {
		var mc fleetv1alpha1.MemberCluster
		if err := r.client.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			errs = append(errs, fmt.Errorf("get MemberCluster %s: %w", name, err))
			continue
		}
		gone, err := r.removeCopy(ctx, s, name)
		if err != nil {
			errs = append(errs, err)
		} else if !gone {
			pending = append(pending, name)
		}
	}
	if len(errs) > 0 {
		return ctrl.Result{}, fmt.Errorf("delete member copies of RayService %s: %w", s.key, errors.Join(errs...))
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
		return ctrl.Result{}, fmt.Errorf("remove finalizer from RayService %s: %w", s.key, err)
	}
	r.metrics.forget(s.key)
	return ctrl.Result{}, nil
}

// holdingClusters are the clusters the binding says may hold a copy: placed or still listed.
func holdingClusters(b *fleetv1alpha1.RayServiceBinding) []string {
	if b == nil {
		return nil
	}
	names := slices.Clone(b.Spec.Clusters)
	for i := range b.Status.Clusters {
		names = append(names, b.Status.Clusters[i].Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
