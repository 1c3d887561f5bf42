package simmembers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// mappingCache is a member's cache as the hub sees it: reads and informers in the member's
// names. Underneath is the member's own cache, holding its objects in the backing names.
type mappingCache struct {
	cache.Cache
	reader *reader
}

var _ cache.Cache = &mappingCache{}

// Get reads the member's object from the cache.
func (c *mappingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

// List lists the member's objects from the cache.
func (c *mappingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}

// GetInformer returns the informer of obj's kind, delivering the member's objects in its names.
func (c *mappingCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	namespaced, err := c.reader.scope.namespaced(obj)
	if err != nil {
		return nil, err
	}
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return &mappingInformer{Informer: inf, m: c.reader.m, namespaced: namespaced}, nil
}

// GetInformerForKind returns the informer of kind gvk, delivering the member's objects in its
// names.
func (c *mappingCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	namespaced, err := c.reader.scope.gvkNamespaced(gvk)
	if err != nil {
		return nil, err
	}
	inf, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return &mappingInformer{Informer: inf, m: c.reader.m, namespaced: namespaced}, nil
}

// IndexField indexes the member's objects as the member sees them.
func (c *mappingCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return indexField(ctx, c.Cache, c.reader, obj, field, extract)
}

// indexField registers extract on fi, called on the member's view of each object.
func indexField(ctx context.Context, fi client.FieldIndexer, r *reader, obj client.Object, field string, extract client.IndexerFunc) error {
	namespaced, err := r.scope.namespaced(obj)
	if err != nil {
		return err
	}
	return fi.IndexField(ctx, obj, field, func(o client.Object) []string {
		own, ok := o.DeepCopyObject().(client.Object)
		if !ok || !r.m.inObject(own, namespaced) {
			return nil
		}
		return extract(own)
	})
}

// fieldIndexer is a member's field indexer.
type fieldIndexer struct {
	fi     client.FieldIndexer
	reader *reader
}

// IndexField indexes the member's objects as the member sees them.
func (f fieldIndexer) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return indexField(ctx, f.fi, f.reader, obj, field, extract)
}

// mappingInformer hands its handlers copies of the member's objects in the member's names;
// objects of other members (there should be none) are not delivered.
type mappingInformer struct {
	cache.Informer
	m          member
	namespaced bool
}

// own returns a copy of obj in the member's names, or false when it is not the member's.
func (i *mappingInformer) own(obj any) (client.Object, bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return nil, false
	}
	c, ok := o.DeepCopyObject().(client.Object)
	if !ok || !i.m.inObject(c, i.namespaced) {
		return nil, false
	}
	return c, true
}

// wrap maps the objects of the events handler receives.
func (i *mappingInformer) wrap(handler toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if o, ok := i.own(obj); ok {
				handler.OnAdd(o, initial)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := i.own(oldObj)
			n, okNew := i.own(newObj)
			if okOld && okNew {
				handler.OnUpdate(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			o, ok := i.own(obj)
			if !ok {
				return
			}
			if _, isTomb := obj.(toolscache.DeletedFinalStateUnknown); isTomb {
				key, _ := toolscache.MetaNamespaceKeyFunc(o)
				handler.OnDelete(toolscache.DeletedFinalStateUnknown{Key: key, Obj: o})
				return
			}
			handler.OnDelete(o)
		},
	}
}

// AddEventHandler adds a handler of the member's objects.
func (i *mappingInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(i.wrap(handler))
}

// AddEventHandlerWithResyncPeriod adds a handler of the member's objects with a resync period.
func (i *mappingInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithResyncPeriod(i.wrap(handler), resync)
}

// AddEventHandlerWithOptions adds a handler of the member's objects with options.
func (i *mappingInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithOptions(i.wrap(handler), opts)
}

// AddIndexers adds indexers computed on the member's view of each object.
func (i *mappingInformer) AddIndexers(indexers toolscache.Indexers) error {
	mapped := make(toolscache.Indexers, len(indexers))
	for name, fn := range indexers {
		mapped[name] = func(obj any) ([]string, error) {
			o, ok := i.own(obj)
			if !ok {
				return nil, nil
			}
			return fn(o)
		}
	}
	return i.Informer.AddIndexers(mapped)
}
