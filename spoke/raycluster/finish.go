package raycluster

import (
	"context"
	"fmt"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/spoke/raycluster/status"
)

// finish computes the status from a fresh view of the Pods, writes it once if it changed and
// picks the requeue.
func (r *Reconciler) finish(ctx context.Context, s *scope, reconcileErr error) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if err := r.listPods(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	rc := s.cluster
	next, err := status.Compute(rc, status.Observed{
		Pods:          s.pods,
		HeadService:   s.headService,
		ReconcileErr:  reconcileErr,
		PodsForbidden: s.podsForbidden,
		Conflicts:     s.observedConflicts(reconcileErr),
	}, metav1.NewTime(r.clock.Now()))
	if err != nil {
		// The head cannot be told apart (two heads, no head Service yet): a status written
		// now would be wrong, so none is written until the next pass.
		log.Info("Status not computed; retrying", "error", err.Error(), "reconcileError", fmt.Sprint(reconcileErr))
		return ctrl.Result{RequeueAfter: requeueSoon}, nil
	}

	changed := status.Changed(&s.original.Status, &next)
	if !changed {
		r.holds.release(client.ObjectKeyFromObject(rc))
	}
	if changed {
		if wait, deferred := r.deferWrite(ctx, s, &next, reconcileErr); deferred {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		if err := r.writeStatus(ctx, s, next); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil // deleted meanwhile
			}
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: requeueSoon}, nil
			}
			return ctrl.Result{}, err
		}
	}
	switch {
	case reconcileErr != nil:
		log.Info("Reconcile incomplete; retrying", "error", reconcileErr.Error())
		return ctrl.Result{RequeueAfter: requeueSoon}, nil
	case changed:
		// Steps such as suspension continue from the status just written, which our own watch
		// filters out.
		return ctrl.Result{RequeueAfter: requeueSoon}, nil
	default:
		return ctrl.Result{RequeueAfter: r.opts.ResyncPeriod}, nil
	}
}

// deferWrite decides whether the changed status next waits, and how long before the next look.
// A reconcile that failed writes at once: its error is news.
func (r *Reconciler) deferWrite(ctx context.Context, s *scope, next *rayv1.RayClusterStatus, reconcileErr error) (time.Duration, bool) {
	if reconcileErr != nil {
		return 0, false
	}
	rc, log := s.cluster, ctrl.LoggerFrom(ctx)
	if r.expectations.Pending(rc.Namespace, rc.Name) {
		// Pods this reconcile created or deleted are not in the cache yet, so the status just
		// computed is already out of date; their watch events bring the next reconcile, which
		// writes the status once, from what it then sees.
		log.V(1).Info("Status write deferred until this reconcile's Pod changes are observed")
		return requeueSoon, true
	}
	if !status.ProgressOnly(&s.original.Status, next) || !status.Starting(s.pods) {
		return 0, false
	}
	// The Pods' watch events bring the reconcile that writes the head or the cluster ready
	// (never held); the requeue writes what is held once the hold runs out.
	wait := r.holds.remaining(rc)
	if wait <= 0 {
		return 0, false
	}
	log.V(1).Info("Progress-only status change held back", "for", wait, "readyWorkers", next.ReadyWorkerReplicas)
	return wait, true
}

// writeStatus patches the status subresource. A merge patch carries no resourceVersion, so a
// reconcile never fails on a conflict; the status is ours alone to write. The patch carries
// the desired* quantities even when zero, as KubeRay's status writes do (statusPatch).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, next rayv1.RayClusterStatus) error {
	rc := s.cluster
	updated := s.original.DeepCopy()
	updated.Status = next
	if err := r.client.Status().Patch(ctx, updated, newStatusPatch(s.original), client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("write status of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	r.statuses.Remember(updated, &updated.Status)
	held := r.holds.release(client.ObjectKeyFromObject(rc))
	r.recordMetrics(s.original, updated)
	ctrl.LoggerFrom(ctx).V(1).Info("Status written", "state", next.State, "readyWorkers", next.ReadyWorkerReplicas,
		"progressHeldFor", held)
	return nil
}

func (r *Reconciler) recordMetrics(before, after *rayv1.RayCluster) {
	if status.BecameProvisioned(&before.Status, &after.Status) {
		r.metrics.ObserveProvisioned(after, r.clock.Since(after.CreationTimestamp.Time))
	}
}
