package main

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mchandler "sigs.k8s.io/multicluster-runtime/pkg/handler"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/rayfleet/rayfleet/hub/fleet"
)

// enqueuer is the part of the hub RayService reconciler the member watch feeds.
type enqueuer interface {
	Enqueue(ctx context.Context, key types.NamespacedName)
}

// setupMemberWatch watches the RayServices of every engaged member and, for each event on a
// copy the hub made, asks for a reconcile of the hub RayService it came from: a member's status
// change then reaches the hub at once instead of at the next resync. The watch's own queue
// holds hub RayService keys, so a burst of events on one copy (or on the copies of one
// RayService on several members) collapses into one reconcile, and a deleted copy, whose labels
// the delete event still carries, is restored without waiting either.
func setupMemberWatch(mgr mcmanager.Manager, hub enqueuer) error {
	err := mcbuilder.ControllerManagedBy(mgr).
		Named("member-rayservice-watch").
		Watches(&rayv1.RayService{}, mchandler.EnqueueRequestsFromMapFunc(originRequest),
			mcbuilder.WithEngageWithLocalCluster(false), mcbuilder.WithEngageWithProviderClusters(true)).
		Complete(mcreconcile.Func(func(ctx context.Context, req mcreconcile.Request) (reconcile.Result, error) {
			hub.Enqueue(ctx, req.NamespacedName)
			return reconcile.Result{}, nil
		}))
	if err != nil {
		return fmt.Errorf("set up the member RayService watch: %w", err)
	}
	return nil
}

// originRequest maps a member RayService to its hub RayService; a copy the hub did not make
// maps to nothing.
func originRequest(_ context.Context, obj client.Object) []reconcile.Request {
	key, ok := fleet.OriginOf(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}
