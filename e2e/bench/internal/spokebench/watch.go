package spokebench

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// Watch is one kind of object to observe: every add and update of it is passed to Observe.
type Watch struct {
	Object client.Object
	// Kind names it in errors ("RayCluster").
	Kind    string
	Observe func(obj any)
}

// Informers starts one cache on namespace ns with an informer for each watch; it returns once
// the cache has synced. The first watch names the cache in errors.
func Informers(ctx context.Context, cfg *rest.Config, ns string, watches ...Watch) error {
	c, err := cache.New(cfg, cache.Options{
		Scheme:            localcluster.Scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}},
	})
	if err != nil {
		return fmt.Errorf("creating %s cache: %w", watches[0].Kind, err)
	}
	for _, w := range watches {
		inf, err := c.GetInformer(ctx, w.Object)
		if err != nil {
			return fmt.Errorf("getting %s informer: %w", w.Kind, err)
		}
		if _, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    w.Observe,
			UpdateFunc: func(_, obj any) { w.Observe(obj) },
		}); err != nil {
			return fmt.Errorf("watching %ss: %w", w.Kind, err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("%s cache did not sync", watches[0].Kind)
	}
	return nil
}
