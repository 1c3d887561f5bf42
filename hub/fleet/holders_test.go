package fleet

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
)

// cacheCluster is a cluster.Cluster with only a cache.
type cacheCluster struct {
	cluster.Cluster
	cache cache.Cache
}

func (c cacheCluster) GetCache() cache.Cache { return c.cache }

// engagedFake engages a member "m1" whose RayService informer is a fake, in h.
func engagedFake(ctx context.Context, t *testing.T, h *holders) *controllertest.FakeInformer {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	inf := controllertest.NewFakeInformer()
	infs := &informertest.FakeInformers{Scheme: scheme, InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
		rayv1.GroupVersion.WithKind("RayService"): inf,
	}}
	if err := h.Engage(ctx, "m1", cacheCluster{cache: infs}); err != nil {
		t.Fatalf("Engage: %v", err)
	}
	return inf
}

func TestHoldersMay(t *testing.T) {
	svc := types.NamespacedName{Namespace: "bench", Name: "svc"}
	other := types.NamespacedName{Namespace: "bench", Name: "other"}
	obj := func(key types.NamespacedName) *rayv1.RayService {
		return &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	}
	tests := []struct {
		name   string
		synced bool
		events func(inf *controllertest.FakeInformer)
		member string
		want   bool
	}{
		{name: "not synced: read", synced: false, member: "m1", want: true},
		{name: "synced, nothing held", synced: true, member: "m1", want: false},
		{name: "member never engaged: read", synced: true, member: "m2", want: true},
		{name: "added", synced: true, member: "m1", want: true,
			events: func(inf *controllertest.FakeInformer) { inf.Add(obj(svc)) }},
		{name: "another key added", synced: true, member: "m1", want: false,
			events: func(inf *controllertest.FakeInformer) { inf.Add(obj(other)) }},
		{name: "updated", synced: true, member: "m1", want: true,
			events: func(inf *controllertest.FakeInformer) { inf.Update(obj(svc), obj(svc)) }},
		{name: "deleted", synced: true, member: "m1", want: false,
			events: func(inf *controllertest.FakeInformer) { inf.Add(obj(svc)); inf.Delete(obj(svc)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHolders()
			inf := engagedFake(t.Context(), t, h)
			if tt.synced {
				inf.Synced()
			}
			if tt.events != nil {
				tt.events(inf)
			}
			if got := h.may(svc, []string{tt.member})[0]; got != tt.want {
				t.Errorf("may(%s, %s) = %v, want %v", tt.member, svc, got, tt.want)
			}
		})
	}
}

func TestHoldersTombstoneAndDisengage(t *testing.T) {
	svc := types.NamespacedName{Namespace: "bench", Name: "svc"}
	h := newHolders()
	ctx, cancel := context.WithCancel(t.Context())
	inf := engagedFake(ctx, t, h)
	inf.Synced()
	inf.Add(&rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name}})
	if !h.may(svc, []string{"m1"})[0] {
		t.Fatal("an added RayService is not held")
	}
	h.note(h.members["m1"], toolscache.DeletedFinalStateUnknown{
		Key: "bench/svc",
		Obj: &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name}},
	}, false)
	if h.may(svc, []string{"m1"})[0] {
		t.Error("a RayService deleted as a tombstone is still held")
	}
	cancel()
	// Disengaging drops the member's index: its reads go to the cache again.
	NewWithT(t).Eventually(func() bool { return h.may(svc, []string{"m1"})[0] }).Should(BeTrue(), "a disengaged member is not read")
	var none *holders
	if !none.may(svc, []string{"m1"})[0] {
		t.Error("a nil index answers for a member")
	}
}

func TestHoldersMemberNotFollowed(t *testing.T) {
	h := newHolders()
	infs := &informertest.FakeInformers{Error: errors.New("no RayService kind on the member")}
	if err := h.Engage(t.Context(), "m1", cacheCluster{cache: infs}); err != nil {
		t.Fatalf("Engage refused a member the index cannot follow: %v", err)
	}
	if !h.may(types.NamespacedName{Namespace: "bench", Name: "svc"}, []string{"m1"})[0] {
		t.Error("a member the index does not follow is not read")
	}
}
