package rayservice

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/raystatus"
	"github.com/rayfleet/rayfleet/shared/validation"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/status"
)

// countEndpoints counts the ready serve endpoints: those of the RayService's serve Service,
// or during an incremental upgrade those of the active and the pending cluster's own serve
// Services, both of which take traffic.
func (r *Reconciler) countEndpoints(ctx context.Context, s *scope) error {
	name := builder.RayServiceServeServiceName(s.rs)
	if s.incremental && s.active != nil {
		name = builder.ClusterServeServiceName(s.active)
	}
	var err error
	if s.activeEndpoints, err = r.readyEndpoints(ctx, s.rs.Namespace, name); err != nil {
		return err
	}
	if s.incremental && s.pending != nil {
		s.pendingEndpoints, err = r.readyEndpoints(ctx, s.rs.Namespace, builder.ClusterServeServiceName(s.pending))
	}
	return err
}

// readyEndpoints counts the ready Pods behind the Service svc, from its EndpointSlices in the
// cache.
func (r *Reconciler) readyEndpoints(ctx context.Context, ns, svc string) (int32, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.client.List(ctx, &slices, client.InNamespace(ns),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc}); err != nil {
		return 0, fmt.Errorf("list EndpointSlices of Service %s/%s: %w", ns, svc, err)
	}
	return status.ReadyEndpoints(slices.Items), nil
}

// finish computes the status from what the phases observed, reports what it decided, writes
// it once if it changed, brings a hub copy's running and serve-address annotations in step
// with it, keeps the serve export the hub asked for, and requeues: when the next Serve read is
// due (schedulePolls), or sooner when a dangling cluster's deletion is.
func (r *Reconciler) finish(ctx context.Context, s *scope) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	timeout, _, _ := validation.InitializingTimeout(s.rs.Annotations) // validated already
	next, out := status.Compute(s.rs, status.Observed{
		Active:              s.active,
		Pending:             s.pending,
		ActiveServe:         s.activeServe,
		PendingServe:        s.pendingServe,
		ServicesReconciled:  s.servicesReconciled,
		HeadSelects:         s.headSelects,
		ServeSelects:        s.serveSelects,
		Weights:             s.weights,
		ActiveEndpoints:     s.activeEndpoints,
		PendingEndpoints:    s.pendingEndpoints,
		ZeroDowntimeDefault: r.opts.ZeroDowntime,
		NewClusterName:      builder.RayClusterName(s.rs, r.rand),
		InitializingTimeout: metav1.Duration{Duration: timeout},
		Conflicts:           s.conflicts,
	}, s.incremental, metav1.NewTime(r.clock.Now()))
	r.report(ctx, s, out)

	written := false
	if raystatus.RayServiceChanged(&s.original.Status, &next) {
		if err := r.writeStatus(ctx, s, next); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil // deleted meanwhile
			}
			return r.retry(ctx, "write status", err)
		}
		written = true
	} else {
		log.V(2).Info("Status unchanged")
	}
	// After the status: the annotations describe the cluster it names active.
	if err := r.recordRunning(ctx, s, &next); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // deleted meanwhile
		}
		return r.retry(ctx, "write running annotations", err)
	}
	if err := r.reconcileExport(ctx, s); err != nil {
		return r.retry(ctx, "export the serve Service", err)
	}
	if written && out.Prepared != "" {
		return ctrl.Result{RequeueAfter: requeueNewCluster}, nil
	}
	requeue := r.schedulePolls(ctx, s, &next)
	if !s.nextDeletion.IsZero() {
		requeue = clampRequeue(s.nextDeletion.Sub(r.clock.Now()), requeue)
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// report logs and records as events what the status computation decided.
func (r *Reconciler) report(ctx context.Context, s *scope, out status.Outcome) {
	log := ctrl.LoggerFrom(ctx)
	if out.Promoted != "" {
		log.Info("Promoted the pending RayCluster to active", "rayCluster", out.Promoted)
	}
	if out.RollbackFinished {
		log.Info("Rollback complete; the pending RayCluster is dropped")
	}
	if out.Prepared != "" {
		log.Info("Preparing a new pending RayCluster", "rayCluster", out.Prepared)
	}
	if out.SelectorMismatch != "" {
		r.eventf(s.rs, nil, corev1.EventTypeWarning, reasonSelectorMismatch,
			"No cluster switch this time: %s; the Services are pointed at the ready cluster again on the next pass", out.SelectorMismatch)
	}
	if out.TimedOut != "" {
		log.Info("RayService initializing timeout exceeded", "message", out.TimedOut)
		r.eventf(s.rs, nil, corev1.EventTypeWarning, reasonTimedOut, "%s", out.TimedOut)
	}
}

// writeStatus patches the status subresource with a JSON merge patch of the changes, stamped
// with lastUpdateTime. Without a resourceVersion it cannot conflict; the status is ours alone
// to write.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, next rayv1.RayServiceStatuses) error {
	next.LastUpdateTime = ptrTo(metav1.NewTime(r.clock.Now()).Rfc3339Copy())
	updated := s.original.DeepCopy()
	updated.Status = next
	if err := r.client.Status().Patch(ctx, updated, client.MergeFrom(s.original), client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("write status of RayService %s: %w", s.key, err)
	}
	r.statuses.Remember(updated, &updated.Status)
	ctrl.LoggerFrom(ctx).V(1).Info("Status written", "serviceStatus", next.ServiceStatus,
		"active", next.ActiveServiceStatus.RayClusterName, "pending", next.PendingServiceStatus.RayClusterName,
		"numServeEndpoints", next.NumServeEndpoints)
	return nil
}
