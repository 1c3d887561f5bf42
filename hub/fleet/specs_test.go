package fleet

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// cachedHub is rs as the API server sends it (JSON) and the hub cache's transform keeps it.
func cachedHub(t *testing.T, s *HubSpecs, rs *rayv1.RayService) *rayv1.RayService {
	t.Helper()
	raw, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	var decoded rayv1.RayService
	if err = json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	out, err := s.Transform(nil)(&decoded)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*rayv1.RayService)
}

func TestHubSpecs(t *testing.T) {
	hub := raybuilder.MakeRayService("svc", "ns").WorkerGroup("gpu", 2).Obj()
	hub.UID, hub.Generation = "uid-1", 3
	// Quantities as users write them, which JSON turns into canonical ones.
	head := &hub.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
	head.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2048Mi")}
	wantHash, err := propagation.SpecHash(&hub.Spec)
	if err != nil {
		t.Fatal(err)
	}
	newer := hub.DeepCopy()
	newer.Generation = 4
	newer.Spec.ServeConfigV2 = "applications: []"
	recreated := hub.DeepCopy()
	recreated.UID = "uid-2"

	tests := []struct {
		name string
		// cache are the versions the informer stores, in order; read is the one a reconcile reads.
		cache  []*rayv1.RayService
		forget bool
		read   *rayv1.RayService
		want   bool
	}{
		{name: "the cached generation's spec is filled", cache: []*rayv1.RayService{hub}, read: hub, want: true},
		{name: "a cache one generation behind the memory reads the API server", cache: []*rayv1.RayService{hub, newer}, read: hub},
		{name: "the newer generation, once stored", cache: []*rayv1.RayService{hub, newer}, read: newer, want: true},
		{name: "a RayService deleted and created again under the same name", cache: []*rayv1.RayService{recreated}, read: hub},
		{name: "a forgotten RayService", cache: []*rayv1.RayService{hub}, forget: true, read: hub},
		{name: "nothing seen", read: hub},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewHubSpecs()
			var got *rayv1.RayService
			for _, rs := range tt.cache {
				got = cachedHub(t, s, rs)
				if !cmp.Equal(got.Spec, rayv1.RayServiceSpec{}) {
					t.Fatalf("the cache keeps the spec of generation %d", rs.Generation)
				}
			}
			if tt.forget {
				s.forget(types.NamespacedName{Namespace: hub.Namespace, Name: hub.Name})
			}
			read := tt.read.DeepCopy()
			read.Spec = rayv1.RayServiceSpec{}
			ok, err := s.fill(read)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.want {
				t.Fatalf("fill = %v, want %v", ok, tt.want)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.read.Spec.ServeConfigV2, read.Spec.ServeConfigV2); diff != "" {
				t.Errorf("filled another generation's spec (-want +got):\n%s", diff)
			}
			if tt.read == hub {
				// The hash is what the hub compares copies and revisions by: the round trip
				// through the memory must not move it, or a hub upgrade would roll the fleet.
				if h, _ := propagation.SpecHash(&read.Spec); h != wantHash {
					t.Errorf("spec hash after the cache = %s, want %s", h, wantHash)
				}
			}
		})
	}
}

func TestHubSpecsTransform(t *testing.T) {
	s := NewHubSpecs()
	stripped := 0
	base := func(obj any) (any, error) {
		stripped++
		if o, ok := obj.(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
		return obj, nil
	}
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	rs.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	out, err := s.Transform(base)(rs)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*rayv1.RayService); stripped != 1 || len(got.ManagedFields) != 0 {
		t.Errorf("the base transform did not run first: %d runs, managedFields %v", stripped, got.ManagedFields)
	}
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "ns/svc"}
	if out, err := s.Transform(nil)(tombstone); err != nil || out != tombstone {
		t.Errorf("a tombstone came out as %v, %v", out, err)
	}
	other := &corev1.ConfigMap{Data: map[string]string{"a": "b"}}
	if out, err := s.Transform(nil)(other); err != nil || out != other {
		t.Errorf("another kind came out as %v, %v", out, err)
	}
}

// TestReadSpec: a cached RayService whose generation the memory does not hold (the informer
// is storing a newer one) is read whole from the API server, the cached one's fields dropped;
// one whose generation it holds is not.
func TestReadSpec(t *testing.T) {
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	server := raybuilder.MakeRayService("svc", "ns").Obj()
	server.Generation = 4
	server.Spec.ServeConfigV2 = "applications: []"
	s := NewHubSpecs()
	r := &Reconciler{apiReader: fake.NewClientBuilder().WithScheme(sch).WithObjects(server).Build(), memory: memory{specs: s}}
	current := cachedHub(t, s, server)

	stale := raybuilder.MakeRayService("svc", "ns").Obj()
	stale.Generation = 3
	stale.Labels = map[string]string{"gone": "yes"}
	stale.Spec = rayv1.RayServiceSpec{}
	if err := r.readSpec(t.Context(), stale); err != nil {
		t.Fatal(err)
	}
	if stale.Generation != 4 || stale.Spec.ServeConfigV2 != server.Spec.ServeConfigV2 || stale.Labels["gone"] != "" {
		t.Errorf("read generation %d, Serve config %q, labels %v; want the API server's RayService",
			stale.Generation, stale.Spec.ServeConfigV2, stale.Labels)
	}

	r.apiReader = fake.NewClientBuilder().WithScheme(sch).Build()
	if err := r.readSpec(t.Context(), current); err != nil {
		t.Fatalf("the remembered generation was read from the API server: %v", err)
	}
	if current.Spec.ServeConfigV2 != server.Spec.ServeConfigV2 {
		t.Errorf("filled Serve config %q, want %q", current.Spec.ServeConfigV2, server.Spec.ServeConfigV2)
	}
}
