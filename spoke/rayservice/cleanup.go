package rayservice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/shared/finalizer"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// originRayService is the ray.io/originated-from-crd value of a RayService's clusters.
const originRayService = "RayService"

// defaultDeletionDelay is how long a RayCluster the RayService no longer uses is kept
// (rayClusterDeletionDelaySeconds unset): long enough for clients of the old cluster to finish.
const defaultDeletionDelay = 60 * time.Second

// deletionDelay is rs's rayClusterDeletionDelaySeconds, 0 while rs itself is being deleted.
func deletionDelay(rs *rayv1.RayService) time.Duration {
	if !rs.DeletionTimestamp.IsZero() {
		return 0
	}
	if d := rs.Spec.RayClusterDeletionDelaySeconds; d != nil && *d >= 0 {
		return time.Duration(*d) * time.Second
	}
	return defaultDeletionDelay
}

// deletionDecision is what becomes of one RayCluster owned by a RayService.
type deletionDecision int

const (
	// keepCluster: the cluster is active or pending (an earlier schedule is dropped).
	keepCluster deletionDecision = iota
	// scheduleDeletion: the cluster is dangling; record when it goes.
	scheduleDeletion
	// waitForDeletion: the cluster is dangling and its time has not come.
	waitForDeletion
	// deleteCluster: the cluster goes now.
	deleteCluster
	// alreadyDeleting: the cluster is on its way out.
	alreadyDeleting
)

// decideDeletion decides the fate of rc, owned by rs. A dangling cluster's deletion time is
// recorded on the cluster itself (labels.DeleteAfter), not in memory as KubeRay does: a spoke
// restarted during the delay neither deletes the cluster early nor forgets to delete it. A
// cluster that becomes active or pending again (a rollback, a spec reverted) loses the
// schedule; a malformed time is replaced.
func decideDeletion(rs *rayv1.RayService, rc *rayv1.RayCluster, now time.Time) (deletionDecision, time.Time) {
	deleting := !rs.DeletionTimestamp.IsZero()
	st := &rs.Status
	if !deleting && (rc.Name == st.ActiveServiceStatus.RayClusterName || rc.Name == st.PendingServiceStatus.RayClusterName) {
		return keepCluster, time.Time{}
	}
	if !rc.DeletionTimestamp.IsZero() {
		return alreadyDeleting, time.Time{}
	}
	if deleting {
		return deleteCluster, now
	}
	at, err := time.Parse(time.RFC3339, rc.Annotations[labels.DeleteAfter])
	if err != nil {
		// The annotation keeps whole seconds: rounded up, so that the stored time is never
		// before the delay has passed (rounded down, a cluster went up to a second early).
		at = ceilSecond(now.Add(deletionDelay(rs)))
		if !now.Before(at) {
			return deleteCluster, at
		}
		return scheduleDeletion, at
	}
	if now.Before(at) {
		return waitForDeletion, at
	}
	return deleteCluster, at
}

// ceilSecond is t rounded up to a whole second.
func ceilSecond(t time.Time) time.Time {
	if down := t.Truncate(time.Second); !down.Equal(t) {
		return down.Add(time.Second)
	}
	return t
}

// cleanUpClusters deletes the RayClusters rs owns but no longer uses, each after the
// deletion delay, and all of them while rs is being deleted. It reports whether any such
// cluster remains, and keeps going past a failing cluster.
func (r *Reconciler) cleanUpClusters(ctx context.Context, s *scope) (remaining bool, err error) {
	rs := s.rs
	var clusters rayv1.RayClusterList
	if err := r.client.List(ctx, &clusters, client.InNamespace(rs.Namespace), client.MatchingLabels{
		labels.OriginatedFromCRName: rs.Name,
		labels.OriginatedFromCRD:    originRayService,
	}); err != nil {
		return false, fmt.Errorf("list RayClusters of RayService %s: %w", s.key, err)
	}
	now := r.clock.Now()
	var errs []error
	for i := range clusters.Items {
		rc := &clusters.Items[i]
		if !metav1.IsControlledBy(rc, rs) {
			continue // a cluster that merely carries the labels is not ours to delete
		}
		decision, at := decideDeletion(rs, rc, now)
		if decision != keepCluster {
			remaining = true
		}
		if decision == scheduleDeletion || decision == waitForDeletion {
			s.noteDeletion(at)
		}
		var err error
		switch decision {
		case keepCluster:
			if _, scheduled := rc.Annotations[labels.DeleteAfter]; scheduled {
				err = r.annotateDeleteAfter(ctx, rc, nil)
			}
		case scheduleDeletion:
			ctrl.LoggerFrom(ctx).Info("Scheduled dangling RayCluster for deletion", "rayCluster", rc.Name,
				"deleteAfter", at.Format(time.RFC3339))
			err = r.annotateDeleteAfter(ctx, rc, &at)
		case deleteCluster:
			err = r.deleteCluster(ctx, s, rc)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return remaining, errors.Join(errs...)
}

// annotateDeleteAfter sets (at) or removes (nil) rc's deletion time with a merge patch of that
// one annotation.
func (r *Reconciler) annotateDeleteAfter(ctx context.Context, rc *rayv1.RayCluster, at *time.Time) error {
	var value any // JSON null removes the key
	if at != nil {
		value = at.UTC().Format(time.RFC3339)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{labels.DeleteAfter: value}}})
	if err != nil {
		return fmt.Errorf("build the %s patch of RayCluster %s/%s: %w", labels.DeleteAfter, rc.Namespace, rc.Name, err)
	}
	target := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: rc.Namespace, Name: rc.Name}}
	if err := r.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldManager)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("annotate RayCluster %s/%s with %s: %w", rc.Namespace, rc.Name, labels.DeleteAfter, err)
	}
	return nil
}

// deleteCluster deletes rc in the background (its Pods go after it), only if it is still the
// object that was read.
func (r *Reconciler) deleteCluster(ctx context.Context, s *scope, rc *rayv1.RayCluster) error {
	err := r.client.Delete(ctx, rc, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &rc.UID})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		r.eventf(s.rs, rc, corev1.EventTypeWarning, reasonFailedToDeleteCluster, "Failed to delete the RayCluster %s/%s: %v",
			rc.Namespace, rc.Name, err)
		return fmt.Errorf("delete RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted RayCluster", "rayCluster", rc.Name, "rayServiceDeleting", !s.rs.DeletionTimestamp.IsZero())
	r.eventf(s.rs, rc, corev1.EventTypeNormal, reasonDeletedCluster, "Deleted the RayCluster %s/%s", rc.Namespace, rc.Name)
	return nil
}

// finalize ends the reconcile of a RayService being deleted: the finalizer goes once its
// RayClusters are gone.
func (r *Reconciler) finalize(ctx context.Context, s *scope, remaining bool) (ctrl.Result, error) {
	if remaining {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the RayService's RayClusters to be deleted")
		return ctrl.Result{RequeueAfter: requeueSoon}, nil
	}
	if controllerutil.ContainsFinalizer(s.rs, labels.RayServiceFinalizer) {
		if err := r.patchFinalizer(ctx, s.rs, false); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil
			}
			return r.retry(ctx, "remove finalizer", err)
		}
	}
	r.forget(s.key)
	r.validSpecs.Forget(s.key)
	return ctrl.Result{}, nil
}

// patchFinalizer adds or removes the RayService finalizer on a copy of rs, so that the rest of
// the reconcile keeps the object it read.
func (r *Reconciler) patchFinalizer(ctx context.Context, rs *rayv1.RayService, add bool) error {
	err := finalizer.Patch(ctx, r.client, rs.DeepCopy(), labels.RayServiceFinalizer, add, client.FieldOwner(fieldManager))
	if err != nil {
		return fmt.Errorf("update finalizers of RayService %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return nil
}
