package cacheread

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// informers hands out one informer, or fails; the other methods of cache.Informers are not
// called here.
type informers struct {
	cache.Informers
	informer cache.Informer
	err      error
}

func (i informers) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return i.informer, i.err
}

// storeless is an informer that does not expose its store.
type storeless struct{ cache.Informer }

func TestRead(t *testing.T) {
	ctx := context.Background()
	inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &fleetv1alpha1.MemberCluster{}, 0, toolscache.Indexers{})
	eu := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "eu"}}
	us := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "us"}}
	for _, mc := range []*fleetv1alpha1.MemberCluster{eu, us} {
		if err := inf.GetStore().Add(mc); err != nil {
			t.Fatal(err)
		}
	}
	held := informers{informer: inf}

	objs, ok, err := Objects[fleetv1alpha1.MemberCluster](ctx, held)
	if err != nil || !ok {
		t.Fatalf("Objects: ok %v, err %v", ok, err)
	}
	if len(objs) != 2 || !slices.Contains(objs, eu) || !slices.Contains(objs, us) {
		t.Errorf("Objects returned %v, want the store's own eu and us", objs)
	}
	keys, ok, err := Keys(ctx, held, &fleetv1alpha1.MemberCluster{})
	slices.Sort(keys)
	if err != nil || !ok || !slices.Equal(keys, []string{"eu", "us"}) {
		t.Errorf("Keys: %v, ok %v, err %v; want [eu us]", keys, ok, err)
	}

	for name, none := range map[string]cache.Informers{
		"no informers":                nil,
		"an informer without a store": informers{informer: storeless{}},
	} {
		if objs, ok, err := Objects[fleetv1alpha1.MemberCluster](ctx, none); ok || err != nil || objs != nil {
			t.Errorf("%s: Objects %v, ok %v, err %v; want nothing, not ok", name, objs, ok, err)
		}
		if keys, ok, err := Keys(ctx, none, &fleetv1alpha1.MemberCluster{}); ok || err != nil || keys != nil {
			t.Errorf("%s: Keys %v, ok %v, err %v; want nothing, not ok", name, keys, ok, err)
		}
	}

	failed := errors.New("the cache is stopping")
	if _, _, err := Objects[fleetv1alpha1.MemberCluster](ctx, informers{err: failed}); !errors.Is(err, failed) {
		t.Errorf("Objects with a failing informer: err %v, want %v", err, failed)
	}
	if _, _, err := Keys(ctx, informers{err: failed}, &fleetv1alpha1.MemberCluster{}); !errors.Is(err, failed) {
		t.Errorf("Keys with a failing informer: err %v, want %v", err, failed)
	}
}
