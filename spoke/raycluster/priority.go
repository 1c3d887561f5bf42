package raycluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// podEventPriority is the queue priority of a RayCluster whose Pods turned ready (or stopped
// being ready, or went), above the default (0) of a RayCluster that was created or edited.
// When many clusters arrive at once, the queue holds each one's first, expensive pass (a
// Service, a Pod per node, their events) and the cheap passes of clusters already started.
// Served in arrival order, a cluster whose Pods are all ready stays unready for as long as the
// whole first wave takes; served first, it is reported ready as soon as its Pods are, at the
// cost of a few cache reads ahead of each new cluster.
const podEventPriority = 10

// podEventsFirst enqueues what inner enqueues, at podEventPriority when the event can change
// whether the cluster is ready or whole: a Pod's phase or readiness changed, it started
// terminating, it is gone. Other changes wait their turn: a Pod created (the echo of the
// reconciler's own creation, whose pass would often find the cache still missing its
// siblings), bound to a Node, given an IP, a container started. Their passes would only
// write the provisioning status again and again ahead of clusters not yet started, each write
// an expensive one for the API server; in arrival order, several of them are one pass, often
// the one that finds the cluster ready.
// Events with a priority of their own keep it: controller-runtime lowers those of the initial
// list and of resyncs, which say nothing new.
type podEventsFirst struct {
	inner handler.EventHandler
}

// Create implements handler.EventHandler, at the default priority.
func (h podEventsFirst) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Create(ctx, e, q)
}

// Update implements handler.EventHandler, raised when the Pod's readiness may have changed.
func (h podEventsFirst) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if readinessChanged(e.ObjectOld, e.ObjectNew) {
		q = raise(q)
	}
	h.inner.Update(ctx, e, q)
}

// readinessChanged reports whether a Pod's phase or readiness changed or it started
// terminating; anything but two Pods counts as changed.
func readinessChanged(before, after client.Object) bool {
	o, ok := before.(*corev1.Pod)
	n, ok2 := after.(*corev1.Pod)
	if !ok || !ok2 {
		return true
	}
	return o.Status.Phase != n.Status.Phase || podReady(o) != podReady(n) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

// Delete implements handler.EventHandler.
func (h podEventsFirst) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Delete(ctx, e, raise(q))
}

// Generic implements handler.EventHandler.
func (h podEventsFirst) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Generic(ctx, e, raise(q))
}

// raise wraps a priority queue so that additions without a priority get podEventPriority; any
// other queue is returned as is.
func raise(q workqueue.TypedRateLimitingInterface[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		return raisedQueue{pq}
	}
	return q
}

// raisedQueue is a priority queue whose additions default to podEventPriority.
type raisedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

// AddWithOpts adds items at podEventPriority unless opts names a priority.
func (q raisedQueue) AddWithOpts(opts priorityqueue.AddOpts, items ...reconcile.Request) {
	if opts.Priority == nil {
		opts.Priority = ptr.To(podEventPriority)
	}
	q.PriorityQueue.AddWithOpts(opts, items...)
}

// Add adds item at podEventPriority.
func (q raisedQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

// AddAfter adds item at podEventPriority once after has passed.
func (q raisedQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

// AddRateLimited adds item at podEventPriority when the rate limiter allows.
func (q raisedQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// podEvents maps a Pod event to its controlling RayCluster, queued at podEventPriority.
func podEvents(c client.Client, owner client.Object) handler.EventHandler {
	return podEventsFirst{inner: handler.EnqueueRequestForOwner(c.Scheme(), c.RESTMapper(), owner, handler.OnlyControllerOwner())}
}
