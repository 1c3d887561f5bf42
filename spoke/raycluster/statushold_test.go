package raycluster

import (
	"context"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// podState is what the kubelet reports of a Pod at one step of a test.
type podState func(*raybuilder.PodWrapper) *raybuilder.PodWrapper

var (
	pending  podState = func(w *raybuilder.PodWrapper) *raybuilder.PodWrapper { return w.Phase(corev1.PodPending) }
	ready    podState = func(w *raybuilder.PodWrapper) *raybuilder.PodWrapper { return w.Ready() }
	badImage podState = func(w *raybuilder.PodWrapper) *raybuilder.PodWrapper {
		return w.Phase(corev1.PodPending).ContainerWaiting("ImagePullBackOff", "pull access denied")
	}
)

// TestStatusWritesWhileComingUp follows a cluster of a head and two workers from the first
// look: the head turning ready is written at once, the workers' progress is held back while
// they start, for at most progressHold, and the status turns ready in the same write as the
// last of it. The clock moves only where a step says so.
func TestStatusWritesWhileComingUp(t *testing.T) {
	type step struct {
		// advance moves the clock before the reconcile.
		advance time.Duration
		// head, w1 and w2 are the Pods' states at this step.
		head, w1, w2 podState
		wantWrites   int
		wantRequeue  time.Duration
		// wantHeadReady is HeadPodReady as stored after the step.
		wantHeadReady bool
	}
	tests := []struct {
		name  string
		steps []step
		// wantReady and wantReadyWorkers describe the status finally written.
		wantReady        bool
		wantReadyWorkers int32
	}{
		{
			name: "the head turning ready is written at once, the workers' progress with ready",
			steps: []step{
				{head: pending, w1: pending, w2: pending, wantWrites: 1, wantRequeue: requeueSoon},
				{head: ready, w1: pending, w2: pending, wantWrites: 2, wantRequeue: requeueSoon, wantHeadReady: true},
				{advance: time.Second, head: ready, w1: ready, w2: pending, wantWrites: 2, wantRequeue: progressHold, wantHeadReady: true},
				{advance: time.Second, head: ready, w1: ready, w2: ready, wantWrites: 3, wantRequeue: requeueSoon, wantHeadReady: true},
			},
			wantReady: true, wantReadyWorkers: 2,
		},
		{
			name: "a worker ready before the head is held until the hold runs out",
			steps: []step{
				{head: pending, w1: pending, w2: pending, wantWrites: 1, wantRequeue: requeueSoon},
				{head: pending, w1: ready, w2: pending, wantWrites: 1, wantRequeue: progressHold},
				{advance: 4 * time.Second, head: pending, w1: ready, w2: pending, wantWrites: 1, wantRequeue: progressHold - 4*time.Second},
				{advance: progressHold - 4*time.Second, head: pending, w1: ready, w2: pending, wantWrites: 2, wantRequeue: requeueSoon},
			},
			wantReadyWorkers: 1,
		},
		{
			name: "a worker held ends its hold when the head turns ready",
			steps: []step{
				{head: pending, w1: pending, w2: pending, wantWrites: 1, wantRequeue: requeueSoon},
				{head: pending, w1: ready, w2: pending, wantWrites: 1, wantRequeue: progressHold},
				{advance: time.Second, head: ready, w1: ready, w2: pending, wantWrites: 2, wantRequeue: requeueSoon, wantHeadReady: true},
				{advance: time.Second, head: ready, w1: ready, w2: ready, wantWrites: 3, wantRequeue: requeueSoon, wantHeadReady: true},
			},
			wantReady: true, wantReadyWorkers: 2,
		},
		{
			name: "a first look that finds the head ready writes it at once",
			steps: []step{
				{head: ready, w1: pending, w2: pending, wantWrites: 1, wantRequeue: requeueSoon, wantHeadReady: true},
				{advance: time.Second, head: ready, w1: ready, w2: ready, wantWrites: 2, wantRequeue: requeueSoon, wantHeadReady: true},
			},
			wantReady: true, wantReadyWorkers: 2,
		},
		{
			name: "a first look that finds every Pod ready: one write",
			steps: []step{
				{head: ready, w1: ready, w2: ready, wantWrites: 1, wantRequeue: requeueSoon, wantHeadReady: true},
			},
			wantReady: true, wantReadyWorkers: 2,
		},
		{
			name: "a worker that cannot pull its image shows the progress at once",
			steps: []step{
				{head: pending, w1: pending, w2: pending, wantWrites: 1, wantRequeue: requeueSoon},
				{head: pending, w1: ready, w2: badImage, wantWrites: 2, wantRequeue: requeueSoon},
			},
			wantReadyWorkers: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			rc := raybuilder.MakeRayCluster("rc", "ns").UID("u1").WorkerGroup("g", 2, 0, 2).Obj()
			writes := 0
			funcs := interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
				writes++
				return c.SubResource(sub).Patch(ctx, obj, p, o...)
			}}
			r, c, _ := newTestReconciler(t, funcs, rc, headServiceOf(t, rc))
			clk := r.clock.(*clocktesting.FakeClock)
			key := types.NamespacedName{Namespace: "ns", Name: "rc"}
			for i, s := range tt.steps {
				clk.Step(s.advance)
				setPods(t, c, rc, s.head, s.w1, s.w2)
				res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if writes != s.wantWrites || res.RequeueAfter != s.wantRequeue {
					t.Fatalf("step %d: %d status writes, requeue after %v; want %d, %v",
						i, writes, res.RequeueAfter, s.wantWrites, s.wantRequeue)
				}
				if got := headReadyStored(t, c, key); got != s.wantHeadReady {
					t.Fatalf("step %d: HeadPodReady True stored: %v, want %v", i, got, s.wantHeadReady)
				}
			}
			var got rayv1.RayCluster
			if err := c.Get(ctx, key, &got); err != nil {
				t.Fatal(err)
			}
			st := got.Status
			if (st.State == rayv1.Ready) != tt.wantReady || st.ReadyWorkerReplicas != tt.wantReadyWorkers {
				t.Errorf("status written: state %q, %d ready workers; want ready %v, %d",
					st.State, st.ReadyWorkerReplicas, tt.wantReady, tt.wantReadyWorkers)
			}
			if r.holds.held(key) {
				t.Error("a hold outlived the write")
			}
		})
	}
}

// headReadyStored reports whether the RayCluster key, as stored, has HeadPodReady True.
func headReadyStored(t *testing.T, c client.Client, key types.NamespacedName) bool {
	t.Helper()
	var rc rayv1.RayCluster
	if err := c.Get(context.Background(), key, &rc); err != nil {
		t.Fatal(err)
	}
	return meta.IsStatusConditionTrue(rc.Status.Conditions, string(rayv1.HeadPodReady))
}

// headServiceOf is rc's head Service as the API server has it, with a cluster IP.
func headServiceOf(t *testing.T, rc *rayv1.RayCluster) *corev1.Service {
	t.Helper()
	svc, err := builder.HeadService(rc, builder.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.ClusterIP = "10.96.0.10"
	return svc
}

// setPods creates or updates rc's head and two workers w1, w2 of group "g" in the given states.
func setPods(t *testing.T, c client.Client, rc *rayv1.RayCluster, head, w1, w2 podState) {
	t.Helper()
	ctx := context.Background()
	want := []*corev1.Pod{
		head(raybuilder.MakePod("rc-head", "ns").HeadOf("rc").Owner(rc)).Obj(),
		w1(raybuilder.MakePod("rc-g-worker-1", "ns").WorkerOf("rc", "g").Owner(rc)).Obj(),
		w2(raybuilder.MakePod("rc-g-worker-2", "ns").WorkerOf("rc", "g").Owner(rc)).Obj(),
	}
	for _, pod := range want {
		var cur corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &cur); err != nil {
			cur = *pod.DeepCopy()
			if err := c.Create(ctx, &cur); err != nil {
				t.Fatal(err)
			}
		}
		cur.Status = pod.Status
		if err := c.Status().Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
	}
}
