package raycluster

import (
	"context"
	"path"
	"slices"
	"sync"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/reference"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// seriesKey is what client-go's events broadcaster groups events into one series by: all but
// the note. Two events with one key become one Event counted twice, the second note lost.
type seriesKey struct {
	eventType, reason, action string
	regarding, related        corev1.ObjectReference
}

type recordedEvent struct {
	key  seriesKey
	note string
}

// relatedRecorder is an events.EventRecorder that keeps the series key of every event, which
// client-go's FakeRecorder does not show (it drops the related object).
type relatedRecorder struct {
	t      *testing.T
	scheme *runtime.Scheme
	mu     sync.Mutex
	events []recordedEvent
}

func (r *relatedRecorder) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	key := seriesKey{eventType: eventType, reason: reason, action: action}
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.t.Errorf("event %s: no reference to the regarding object: %v", reason, err)
		return
	}
	key.regarding = *ref
	if related != nil {
		// client-go drops a related object it cannot reference without a word; here it fails.
		ref, err := reference.GetReference(r.scheme, related)
		if err != nil {
			r.t.Errorf("event %s: no reference to the related %T: %v", reason, related, err)
			return
		}
		key.related = *ref
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recordedEvent{key: key, note: note})
}

// relatedOf returns "Kind namespace/name" for the related object of each event with reason,
// "" for none, sorted.
func (r *relatedRecorder) relatedOf(reason string) []string {
	var out []string
	for _, e := range r.events {
		if e.key.reason == reason {
			out = append(out, relatedString(e.key.related))
		}
	}
	slices.Sort(out)
	return out
}

func relatedString(ref corev1.ObjectReference) string {
	if ref == (corev1.ObjectReference{}) {
		return ""
	}
	return ref.Kind + " " + ref.Namespace + "/" + ref.Name
}

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
			rec := &relatedRecorder{t: t, scheme: r.client.Scheme()}
			r.recorder = rec
			key := types.NamespacedName{Namespace: "ns", Name: "rc"}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}

			got := rec.relatedOf(tt.reason)
			if len(got) != len(tt.wantRelated) {
				t.Fatalf("related objects of %s events = %q, want %q", tt.reason, got, tt.wantRelated)
			}
			for i, pattern := range tt.wantRelated {
				if ok, err := path.Match(pattern, got[i]); err != nil || !ok {
					t.Fatalf("related objects of %s events = %q, want %q", tt.reason, got, tt.wantRelated)
				}
			}
			seen := map[seriesKey]string{}
			for _, e := range rec.events {
				if first, dup := seen[e.key]; dup {
					t.Errorf("events %q and %q fall into one series: the second would be lost", first, e.note)
				}
				seen[e.key] = e.note
			}
		})
	}
}
