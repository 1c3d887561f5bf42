// Package cacheread reads what a controller-runtime cache holds in place, where a List would
// copy it. A List into a typed list copies every cached object's struct into a new slice even
// with client.UnsafeDisableDeepCopy; a reader that lists a small, hot kind at every reconcile
// (the MemberClusters, in every hub reconcile) spends most of that on the copies. What these
// functions return is the cache's own: read it, never change it.
package cacheread

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// storer is an informer whose store can be read: client-go's shared informers, which
// controller-runtime's cache hands out.
type storer interface {
	GetStore() toolscache.Store
}

// Objects returns the objects of type T the informers hold. ok is false when the informer
// does not expose its store (the caller then lists); err is the informer's, which, like a
// List, waits for the informer to sync first.
func Objects[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, informers cache.Informers) (objs []PT, ok bool, err error) {
	store, ok, err := storeOf(ctx, informers, PT(new(T)))
	if !ok || err != nil {
		return nil, ok, err
	}
	items := store.List()
	objs = make([]PT, 0, len(items))
	for _, item := range items {
		if o, isT := item.(PT); isT {
			objs = append(objs, o)
		}
	}
	return objs, true, nil
}

// Keys returns the store keys of the objects of obj's kind the informers hold: the name of a
// cluster-scoped object, namespace/name of another. ok and err are as Objects'.
func Keys(ctx context.Context, informers cache.Informers, obj client.Object) (keys []string, ok bool, err error) {
	store, ok, err := storeOf(ctx, informers, obj)
	if !ok || err != nil {
		return nil, ok, err
	}
	return store.ListKeys(), true, nil
}

func storeOf(ctx context.Context, informers cache.Informers, obj client.Object) (toolscache.Store, bool, error) {
	if informers == nil {
		return nil, false, nil
	}
	inf, err := informers.GetInformer(ctx, obj)
	if err != nil {
		return nil, false, err
	}
	s, ok := inf.(storer)
	if !ok {
		return nil, false, nil
	}
	return s.GetStore(), true, nil
}
