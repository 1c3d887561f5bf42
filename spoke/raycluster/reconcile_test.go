package raycluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rayfleet/rayfleet/shared/cachememo"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/expectations"
	"github.com/rayfleet/rayfleet/spoke/raycluster/status"
)

var errAPI = errors.New("the API server is unavailable")

func newTestReconciler(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) (*Reconciler, client.Client, *events.FakeRecorder) {
	t.Helper()
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	base := fake.NewClientBuilder().WithScheme(sch).WithObjects(objs...).
		WithStatusSubresource(&rayv1.RayCluster{}).
		WithIndex(&corev1.Pod{}, podClusterIndex, func(o client.Object) []string {
			return []string{o.GetLabels()[labels.Cluster]}
		}).Build()
	c := interceptor.NewClient(base, funcs)
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	rec := events.NewFakeRecorder(100)
	opts := OptionsFromEnv(func(string) string { return "" })
	return &Reconciler{
		client: c, apiReader: c, recorder: rec, clock: clk,
		expectations: expectations.NewScale(clk), statuses: cachememo.NewStatuses(clk, (*rayv1.RayClusterStatus).DeepCopy),
		holds: newProgressHolds(clk, progressHold), build: opts.Build, opts: opts,
	}, base, rec
}

func drainEvents(rec *events.FakeRecorder) string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

func failCreate(nodeType rayv1.RayNodeType) interceptor.Funcs {
	return interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Labels[labels.NodeType] == string(nodeType) {
			return errAPI
		}
		return c.Create(ctx, obj, opts...)
	}}
}

func TestReconcileRecordsReplicaFailures(t *testing.T) {
	suspending := metav1.Condition{Type: string(rayv1.RayClusterSuspending), Status: metav1.ConditionTrue, Reason: "RayClusterSuspending"}
	tests := []struct {
		name       string
		cluster    *rayv1.RayCluster
		pods       []client.Object
		funcs      interceptor.Funcs
		wantReason status.ReplicaFailureReason
		wantEvent  string
	}{
		{
			name:       "head Pod creation fails",
			cluster:    raybuilder.MakeRayCluster("rc", "ns").Obj(),
			funcs:      failCreate(rayv1.HeadNode),
			wantReason: status.FailedCreateHeadPod,
			wantEvent:  reasonFailedToCreateHeadPod,
		},
		{
			name:       "worker Pod creation fails",
			cluster:    raybuilder.MakeRayCluster("rc", "ns").WorkerGroup("g", 1, 0, 1).Obj(),
			funcs:      failCreate(rayv1.WorkerNode),
			wantReason: status.FailedCreateWorkerPod,
			wantEvent:  reasonFailedToCreateWorkerPod,
		},
		{
			name:    "suspension cannot delete the Pods",
			cluster: raybuilder.MakeRayCluster("rc", "ns").Suspend(true).StatusCondition(suspending).Obj(),
			pods:    []client.Object{raybuilder.MakePod("rc-head", "ns").HeadOf("rc").Running().Obj()},
			funcs: interceptor.Funcs{DeleteAllOf: func(context.Context, client.WithWatch, client.Object, ...client.DeleteAllOfOption) error {
				return errAPI
			}},
			wantReason: status.FailedDeleteAllPods,
			wantEvent:  reasonFailedToDeletePods,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]client.Object{tt.cluster}, tt.pods...)
			r, c, rec := newTestReconciler(t, tt.funcs, objs...)
			key := types.NamespacedName{Namespace: "ns", Name: "rc"}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			if err != nil {
				t.Fatalf("Reconcile returned %v; failures are retried through RequeueAfter", err)
			}
			if res.RequeueAfter != requeueSoon {
				t.Fatalf("RequeueAfter = %v, want %v", res.RequeueAfter, requeueSoon)
			}
			var got rayv1.RayCluster
			if err := c.Get(context.Background(), key, &got); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, string(rayv1.RayClusterReplicaFailure))
			if cond == nil || cond.Reason != string(tt.wantReason) || cond.Status != metav1.ConditionTrue {
				t.Fatalf("ReplicaFailure condition = %+v, want reason %s", cond, tt.wantReason)
			}
			if ev := drainEvents(rec); !strings.Contains(ev, "Warning "+tt.wantEvent) {
				t.Fatalf("events %q lack a %s warning", ev, tt.wantEvent)
			}
		})
	}
}

func TestReconcileTransientReadErrorsDeleteNothing(t *testing.T) {
	rc := raybuilder.MakeRayCluster("rc", "ns").WorkerGroup("g", 0, 0, 1).Obj()
	worker := raybuilder.MakePod("rc-g-worker-x", "ns").WorkerOf("rc", "g").Running().Obj()
	deletes := 0
	funcs := interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok {
				return errAPI
			}
			return c.List(ctx, list, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			deletes++
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			deletes++
			return c.DeleteAllOf(ctx, obj, opts...)
		},
	}
	r, _, _ := newTestReconciler(t, funcs, rc, worker)
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "rc"}})
	if err == nil {
		t.Fatal("a failed Pod list must be reported")
	}
	if deletes != 0 {
		t.Fatalf("%d deletions after a read error; nothing may be deleted on a transient error", deletes)
	}
}

func TestReconcileGetErrorIsReturned(t *testing.T) {
	funcs := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errAPI
	}}
	r, _, _ := newTestReconciler(t, funcs)
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "rc"}})
	if !errors.Is(err, errAPI) || !strings.Contains(err.Error(), "ns/rc") {
		t.Fatalf("Reconcile error = %v, want the API error naming ns/rc", err)
	}
}
