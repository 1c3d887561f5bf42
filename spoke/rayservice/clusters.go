package rayservice

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/status"
	"github.com/rayfleet/rayfleet/spoke/rayservice/upgrade"
)

// reconcileClusters reads the active and pending clusters named in the status, creates the
// pending one when it does not exist yet, and updates either in place when only what can
// change in place changed (upgrade.ShouldUpdateCluster).
func (r *Reconciler) reconcileClusters(ctx context.Context, s *scope) error {
	st := &s.rs.Status
	var err error
	if s.active, err = r.getCluster(ctx, s, st.ActiveServiceStatus.RayClusterName); err != nil {
		return err
	}
	if s.pending, err = r.getCluster(ctx, s, st.PendingServiceStatus.RayClusterName); err != nil {
		return err
	}
	if st.PendingServiceStatus.RayClusterName != "" && s.pending == nil {
		s.pending, err = r.createPendingCluster(ctx, s)
		return err
	}
	for _, role := range []upgrade.Role{upgrade.Active, upgrade.Pending} {
		rc := s.cluster(role)
		if !upgrade.ShouldUpdateCluster(&s.rs.Spec, st, rc, role, r.build.KubeRayVersion, r.opts.ZeroDowntime) {
			continue
		}
		updated, err := r.updateCluster(ctx, s, rc, role)
		if err != nil {
			return err
		}
		if role == upgrade.Active {
			s.active = updated
		} else {
			s.pending = updated
		}
	}
	return nil
}

// getCluster reads a cluster of s.rs from the cache; nil when name is empty or not found.
func (r *Reconciler) getCluster(ctx context.Context, s *scope, name string) (*rayv1.RayCluster, error) {
	if name == "" {
		return nil, nil
	}
	var rc rayv1.RayCluster
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: s.rs.Namespace, Name: name}, &rc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get RayCluster %s/%s: %w", s.rs.Namespace, name, err)
	}
	return &rc, nil
}

// createPendingCluster creates the pending cluster the status names. Its name was written to
// the status before, so a crash between the two cannot leave a cluster nobody knows of.
func (r *Reconciler) createPendingCluster(ctx context.Context, s *scope) (*rayv1.RayCluster, error) {
	name := s.rs.Status.PendingServiceStatus.RayClusterName
	rc, err := builder.RayClusterForRayService(s.rs, name, r.build)
	if err != nil {
		return nil, err
	}
	err = r.client.Create(ctx, rc, client.FieldOwner(fieldManager))
	if apierrors.IsAlreadyExists(err) {
		// Created by an earlier pass that the cache has not shown yet.
		var existing rayv1.RayCluster
		if getErr := r.apiReader.Get(ctx, client.ObjectKeyFromObject(rc), &existing); getErr != nil {
			return nil, fmt.Errorf("get RayCluster %s/%s: %w", rc.Namespace, rc.Name, getErr)
		}
		return &existing, nil
	}
	if err != nil {
		r.eventf(s.rs, rc, corev1.EventTypeWarning, reasonFailedToCreateCluster, "Failed to create the RayCluster %s/%s: %v",
			rc.Namespace, rc.Name, err)
		return nil, fmt.Errorf("create RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created RayCluster", "rayCluster", rc.Name)
	r.eventf(s.rs, rc, corev1.EventTypeNormal, reasonCreatedCluster, "Created the RayCluster %s/%s", rc.Namespace, rc.Name)
	return rc, nil
}

// updateCluster applies the RayService's spec to rc in place with a merge patch of what
// changed: no resourceVersion, so a status write of the RayCluster reconciler racing with it
// causes no conflict.
func (r *Reconciler) updateCluster(ctx context.Context, s *scope, rc *rayv1.RayCluster, role upgrade.Role) (*rayv1.RayCluster, error) {
	goal, err := builder.RayClusterForRayService(s.rs, rc.Name, r.build)
	if err != nil {
		return nil, err
	}
	updated := upgrade.InPlaceUpdate(rc, goal)
	if err := r.client.Patch(ctx, updated, client.MergeFrom(rc), client.FieldOwner(fieldManager)); err != nil {
		r.eventf(s.rs, rc, corev1.EventTypeWarning, reasonFailedToUpdateCluster, "Failed to update the %s RayCluster %s/%s: %v",
			role, rc.Namespace, rc.Name, err)
		return nil, fmt.Errorf("update %s RayCluster %s/%s: %w", role, rc.Namespace, rc.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Updated RayCluster in place", "rayCluster", rc.Name, "role", role.String())
	r.eventf(s.rs, rc, corev1.EventTypeNormal, reasonUpdatedCluster, "Updated the %s RayCluster %s/%s", role, rc.Namespace, rc.Name)
	return updated, nil
}

// reconcileRollback starts or cancels the rollback of an incremental upgrade whose goal spec
// moved away from (or back to) the pending cluster, before any serving decision is made.
func (r *Reconciler) reconcileRollback(ctx context.Context, s *scope) error {
	st := &s.rs.Status
	if !s.incrementalInProgress() || s.active == nil || s.pending == nil {
		return nil
	}
	switch upgrade.DecideRollback(&s.rs.Spec, st, s.pending) {
	case upgrade.RollbackStart:
		ctrl.LoggerFrom(ctx).Info("Goal spec changed during the upgrade; rolling back to the active cluster",
			"active", s.active.Name, "pending", s.pending.Name)
		status.StartRollback(st, metav1.NewTime(r.clock.Now()))
	case upgrade.RollbackCancel:
		ctrl.LoggerFrom(ctx).Info("Goal spec matches the pending cluster again; resuming the upgrade", "pending", s.pending.Name)
		status.CancelRollback(st)
	}
	return nil
}
