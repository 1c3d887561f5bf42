package rayservice

import (
	"context"
	"slices"
	"sync"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/reference"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
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

// TestEventsAboutDifferentObjectsStayApart runs one phase and checks that the events with one
// reason about different objects name those objects as related, so none is merged into
// another's series; events about the RayService alone name no related object.
func TestEventsAboutDifferentObjectsStayApart(t *testing.T) {
	rs := fixture.MakeRayService("svc", "ns").Active("svc-a").Obj()
	active := fixture.Cluster(rs, "svc-a")
	headService, err := builder.RayServiceHeadService(rs, active, builder.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	serveService, err := builder.RayServiceServeService(rs, active)
	if err != nil {
		t.Fatal(err)
	}
	pointServices := func(ctx context.Context, r *Reconciler, s *scope) error { return r.reconcileServices(ctx, s) }

	tests := []struct {
		name   string
		rs     *rayv1.RayService
		objs   []client.Object
		setup  func(*scope)
		phase  func(context.Context, *Reconciler, *scope) error
		reason string
		// wantRelated is sorted.
		wantRelated []string
	}{
		{
			name:        "head and serve Services created",
			rs:          rs,
			setup:       func(s *scope) { s.active, s.activeReady = active, true },
			phase:       pointServices,
			reason:      reasonCreatedService,
			wantRelated: []string{"Service ns/svc-head-svc", "Service ns/svc-serve-svc"},
		},
		{
			name: "head and serve Services switched to the pending cluster",
			rs:   rs,
			objs: []client.Object{headService, serveService},
			setup: func(s *scope) {
				s.active, s.activeReady = active, true
				s.pending, s.pendingReady = fixture.Cluster(rs, "svc-p"), true
			},
			phase:       pointServices,
			reason:      reasonUpdatedService,
			wantRelated: []string{"Service ns/svc-head-svc", "Service ns/svc-serve-svc"},
		},
		{
			name:  "two dangling RayClusters deleted",
			rs:    fixture.MakeRayService("svc", "ns").Active("svc-a").DeletionDelay(0).Obj(),
			objs:  []client.Object{active, fixture.Cluster(rs, "svc-old1"), fixture.Cluster(rs, "svc-old2")},
			setup: func(*scope) {},
			phase: func(ctx context.Context, r *Reconciler, s *scope) error {
				_, err := r.cleanUpClusters(ctx, s)
				return err
			},
			reason:      reasonDeletedCluster,
			wantRelated: []string{"RayCluster ns/svc-old1", "RayCluster ns/svc-old2"},
		},
		{
			name:  "invalid metadata: about the RayService alone",
			rs:    fixture.MakeRayService("svc", "ns").Annotation(labels.InitializingTimeout, "soon").Obj(),
			setup: func(*scope) {},
			phase: func(ctx context.Context, r *Reconciler, s *scope) error {
				r.validate(ctx, s)
				return nil
			},
			reason:      reasonInvalidMetadata,
			wantRelated: []string{""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			sch, err := scheme.New()
			if err != nil {
				t.Fatal(err)
			}
			objs := make([]client.Object, 0, len(tt.objs)+1)
			objs = append(objs, tt.rs.DeepCopy())
			for _, o := range tt.objs {
				objs = append(objs, o.DeepCopyObject().(client.Object))
			}
			c := fake.NewClientBuilder().WithScheme(sch).WithObjects(objs...).Build()
			r := testReconciler(t, c, clocktesting.NewFakeClock(t0))
			rec := &relatedRecorder{t: t, scheme: sch}
			r.recorder = rec
			s := newScope(tt.rs.DeepCopy())
			tt.setup(s)
			if err := tt.phase(ctx, r, s); err != nil {
				t.Fatal(err)
			}

			if got := rec.relatedOf(tt.reason); !slices.Equal(got, tt.wantRelated) {
				t.Fatalf("related objects of %s events = %q, want %q", tt.reason, got, tt.wantRelated)
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
