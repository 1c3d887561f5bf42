package raycluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestPodEventsFirst(t *testing.T) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "rc"}}
	pod := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv}}
	}
	// with returns pod(rv) changed by set.
	with := func(rv string, set func(*corev1.Pod)) *corev1.Pod {
		p := pod(rv)
		set(p)
		return p
	}
	running := func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }
	ready := func(p *corev1.Pod) {
		running(p)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	bound := func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	// inner enqueues the cluster the way controller-runtime's own handlers do, through Funcs
	// (which lowers the initial list and resyncs on a priority queue).
	add := func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) { q.Add(req) }
	inner := handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q)
		},
		UpdateFunc: func(ctx context.Context, _ event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q)
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q)
		},
		GenericFunc: func(ctx context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q)
		},
	}
	h := podEventsFirst{inner: inner}
	tests := []struct {
		name string
		send func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request])
		want int
	}{
		{name: "a Pod created: the echo of the reconciler's own write", want: 0, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: pod("1")}, q)
		}},
		{name: "a Pod turned ready", want: podEventPriority, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: with("1", running), ObjectNew: with("2", ready)}, q)
		}},
		{name: "a Pod no longer ready", want: podEventPriority, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: with("1", ready), ObjectNew: with("2", running)}, q)
		}},
		{name: "a Pod's phase changed", want: podEventPriority, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: pod("1"), ObjectNew: with("2", running)}, q)
		}},
		{name: "a Pod terminating", want: podEventPriority, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: with("1", ready), ObjectNew: with("2", func(p *corev1.Pod) { ready(p); terminating(p) })}, q)
		}},
		{name: "a Pod bound to a Node waits its turn", want: 0, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: pod("1"), ObjectNew: with("2", bound)}, q)
		}},
		{name: "a Pod deleted", want: podEventPriority, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: pod("1")}, q)
		}},
		{name: "a generic event", want: podEventPriority, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Generic(ctx, event.GenericEvent{Object: pod("1")}, q)
		}},
		{name: "the initial list keeps its low priority", want: handler.LowPriority, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: pod("1"), IsInInitialList: true}, q)
		}},
		{name: "a resync keeps its low priority", want: handler.LowPriority, send: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: pod("1"), ObjectNew: pod("1")}, q)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			tt.send(context.Background(), q)
			got, priority, _ := q.GetWithPriority()
			if got != req || priority != tt.want {
				t.Errorf("queued %v at priority %d, want %v at %d", got, priority, req, tt.want)
			}
		})
	}

	t.Run("a queue without priorities gets the request", func(t *testing.T) {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("1"), ObjectNew: with("2", ready)}, q)
		if got, _ := q.Get(); got != req {
			t.Errorf("queued %v, want %v", got, req)
		}
	})
}
