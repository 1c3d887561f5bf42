package raycluster

import (
	"context"
	"path"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/eventrecorder"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// TestEventsAboutDifferentObjectsStayApart runs one reconcile and checks that the events with
// one reason about different objects name those objects as related, so none is merged into
// another's series; events about the RayCluster alone name no related object.
func TestEventsAboutDifferentObjectsStayApart(t *testing.T) {
	suspending := metav1.Condition{Type: string(rayv1.RayClusterSuspending), Status: metav1.ConditionTrue, Reason: "RayClusterSuspending"}
	worker := func(name string) client.Object {
		return raybuilder.MakePod(name, "ns").WorkerOf("rc", "g").Running().Ready().Obj()
	}
	tests := []struct {
		name    string
		cluster *rayv1.RayCluster
		pods    []client.Object
		reason  string
		// wantRelated are path.Match patterns, sorted: worker Pod names end in a random suffix.
		wantRelated []string
	}{
		{
			name:        "head and serve Services",
			cluster:     raybuilder.MakeRayCluster("rc", "ns").Annotation(labels.EnableServeService, labels.True).Obj(),
			reason:      reasonCreatedService,
			wantRelated: []string{"Service ns/rc-head-svc", "Service ns/rc-serve-svc"},
		},
		{
			name:        "two batches of worker Pods",
			cluster:     raybuilder.MakeRayCluster("rc", "ns").WorkerGroup("g", firstCreateBatch+2, 0, 10).Obj(),
			reason:      reasonCreatedWorkerPod,
			wantRelated: []string{"Pod ns/rc-g-worker-*", "Pod ns/rc-g-worker-*"},
		},
		{
			name:        "worker Pods deleted by a scale-down",
			cluster:     raybuilder.MakeRayCluster("rc", "ns").WorkerGroup("g", 0, 0, 2).Obj(),
			pods:        []client.Object{worker("w1"), worker("w2")},
			reason:      reasonDeletedWorkerPod,
			wantRelated: []string{"Pod ns/w1", "Pod ns/w2"},
		},
		{
			name:    "all Pods deleted for a suspension: about the cluster alone",
			cluster: raybuilder.MakeRayCluster("rc", "ns").Suspend(true).StatusCondition(suspending).Obj(),
			pods: []client.Object{
				raybuilder.MakePod("rc-head", "ns").HeadOf("rc").Running().Obj(), worker("w1"),
			},
			reason:      reasonDeletedPod,
			wantRelated: []string{""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, _ := newTestReconciler(t, interceptor.Funcs{}, append([]client.Object{tt.cluster}, tt.pods...)...)
			rec := eventrecorder.New(t, r.client.Scheme())
			r.recorder = rec
			key := types.NamespacedName{Namespace: "ns", Name: "rc"}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}

			got := rec.RelatedOf(tt.reason)
			if len(got) != len(tt.wantRelated) {
				t.Fatalf("related objects of %s events = %q, want %q", tt.reason, got, tt.wantRelated)
			}
			for i, pattern := range tt.wantRelated {
				if ok, err := path.Match(pattern, got[i]); err != nil || !ok {
					t.Fatalf("related objects of %s events = %q, want %q", tt.reason, got, tt.wantRelated)
				}
			}
			for _, pair := range rec.SharedSeries() {
				t.Errorf("events %q and %q fall into one series: the second would be lost", pair[0], pair[1])
			}
		})
	}
}
