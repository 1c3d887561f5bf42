package rayservice

import (
	"context"
	"slices"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/eventrecorder"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
)

// TestEventsAboutDifferentObjectsStayApart runs one phase and checks that the events with one
// reason about different objects name those objects as related, so none is merged into
// another's series; events about the RayService alone name no related object.
func TestEventsAboutDifferentObjectsStayApart(t *testing.T) {
	rs := raybuilder.MakeRayService("svc", "ns").Active("svc-a").Obj()
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
			rs:    raybuilder.MakeRayService("svc", "ns").Active("svc-a").DeletionDelay(0).Obj(),
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
			rs:    raybuilder.MakeRayService("svc", "ns").Annotation(labels.InitializingTimeout, "soon").Obj(),
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
			rec := eventrecorder.New(t, sch)
			r.recorder = rec
			s := newScope(tt.rs.DeepCopy())
			tt.setup(s)
			if err := tt.phase(ctx, r, s); err != nil {
				t.Fatal(err)
			}

			if got := rec.RelatedOf(tt.reason); !slices.Equal(got, tt.wantRelated) {
				t.Fatalf("related objects of %s events = %q, want %q", tt.reason, got, tt.wantRelated)
			}
			for _, pair := range rec.SharedSeries() {
				t.Errorf("events %q and %q fall into one series: the second would be lost", pair[0], pair[1])
			}
		})
	}
}
