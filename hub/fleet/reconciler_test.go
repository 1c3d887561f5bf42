package fleet

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

func TestRequeueAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{clock: clocktesting.NewFakeClock(t0), opts: Options{Resync: 10 * time.Second}}
	tests := []struct {
		name string
		wake time.Time
		want time.Duration
	}{
		{name: "nothing tolerated", want: 10 * time.Second},
		{name: "a toleration ending before the resync", wake: t0.Add(3 * time.Second), want: 3 * time.Second},
		{name: "a toleration ending after the resync", wake: t0.Add(time.Minute), want: 10 * time.Second},
		{name: "a toleration just ended", wake: t0.Add(-time.Second), want: time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.requeueAfter(&group{now: t0}, &outcome{d: &decision{wake: tt.wake}}); got != tt.want {
				t.Errorf("requeueAfter() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReconcileDropsMemberClusterRequests(t *testing.T) {
	// No client: a request naming a member cluster must end before anything is read.
	r := &Reconciler{}
	req := mcreconcile.Request{ClusterName: "eu"}
	req.Namespace, req.Name = "ns", "svc"
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile(member request) = %v, %v; want nothing done", res, err)
	}
}
